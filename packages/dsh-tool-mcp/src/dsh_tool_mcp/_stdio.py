"""The stdio transport: a server as a subprocess speaking newline-delimited JSON-RPC.

Our own rather than the SDK's ``stdio_client`` for three reasons the SDK's does not cover:
the server runs as the leader of its own process group and the whole group is killed when
the transport closes *or the server exits* (the SDK kills the group only when the leader
outlives its grace period, so a server's own children survived it); stdout is decoded line
by line with replacement, so a stray invalid UTF-8 byte costs at most that line, never the
reader; one stdout line is capped (``MAX_STDIO_LINE_BYTES``: a server that writes a longer
one, or no newline at all, loses its connection instead of exhausting our memory); and stderr
comes through a pipe, line by line, to a log that can be capped.
The streams it yields are the SDK's (``SessionMessage``), so ``mcp.ClientSession`` runs on it
unchanged.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from collections.abc import AsyncIterator, Callable, Mapping
from subprocess import PIPE

import anyio
import mcp.types as types
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

from dsh_tool_mcp._limits import MAX_STDIO_LINE_BYTES

__all__ = ["MAX_STDIO_LINE_BYTES", "kill_process_group", "line_too_long", "stdio_transport"]


_STDIN_GRACE = 2.0  # seconds for the server to exit by itself once its stdin is closed
_TERM_GRACE = 2.0  # seconds between SIGTERM to the group and SIGKILL
_REAP_LIMIT = 2.0  # bound on waiting for the killed group to be gone
_FLUSH_LIMIT = 0.5  # bound on the writer flushing accepted messages / stderr being read out
_POLL = 0.01

Incoming = SessionMessage | Exception

_logger = logging.getLogger(__name__)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # ambiguous (a member we may not signal): keep treating it as alive
    return True


def _signal_group(pgid: int, signum: int) -> bool:
    """Signal the group; False when it is gone."""
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def kill_process_group(process: Process) -> None:
    """Kill the server's whole process group: SIGTERM, then SIGKILL to what is left after a
    grace period. The group id is the server's pid (it was started as a session leader), so
    children that outlived their parent are reached too; only processes that left the group
    on purpose (a daemon's ``setsid``) escape."""
    pgid = process.pid
    if not _signal_group(pgid, signal.SIGTERM) or await _group_gone(pgid, _TERM_GRACE):
        return
    _signal_group(pgid, signal.SIGKILL)
    await _group_gone(pgid, _REAP_LIMIT)


async def _group_gone(pgid: int, seconds: float) -> bool:
    """Whether the group is gone within ``seconds`` (polled: a group has no exit event)."""
    for _ in range(max(1, round(seconds / _POLL))):
        if not _group_alive(pgid):
            return True
        await anyio.sleep(_POLL)
    return not _group_alive(pgid)


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):g} MiB" if size % 1024 == 0 else f"{size} bytes"


def line_too_long(limit: int) -> str:
    """Why a connection ended on a stdout line longer than ``limit`` bytes (names the limit)."""
    return (
        f"the server wrote a stdout line longer than the limit of {_mib(limit)} "
        f"({limit} bytes, MAX_STDIO_LINE_BYTES); its process group was killed"
    )


def _parse(line: bytes) -> Incoming:
    """One stdout line as a message, or the reason it is none (for the session to skip)."""
    try:
        message = types.jsonrpc_message_adapter.validate_json(
            line.decode("utf-8", errors="replace"), by_name=False
        )
    except ValueError as error:
        return error
    return SessionMessage(message)


async def _wait_exit(process: Process, limit: float) -> bool:
    with anyio.move_on_after(limit):
        await process.wait()  # anyio's: the process's exit, not its pipes' end
        return True
    return False


@contextlib.asynccontextmanager
async def stdio_transport(
    command: str,
    args: list[str],
    *,
    env: Mapping[str, str],
    cwd: str | None,
    on_stderr: Callable[[bytes], None],
    on_fault: Callable[[str], None] | None = None,
    max_line: int = MAX_STDIO_LINE_BYTES,
) -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[Incoming], MemoryObjectSendStream[SessionMessage]]
]:
    """Start ``command`` with ``args`` (no shell; the SDK's minimal environment plus ``env``)
    and yield the session's read and write streams. ``on_stderr`` gets the server's stderr
    bytes as they come. The read stream ends when the server's stdout does, when writing to
    it fails, or when the server exits (its group is then killed, so no child of it can hold
    stdout open). A stdout line longer than ``max_line`` bytes kills the server's group and
    ends the read stream; ``on_fault`` is told why first (``line_too_long``). Leaving the
    context closes stdin, waits briefly for the server to exit, and kills its process group
    whether it exited or not."""
    process = await anyio.open_process(
        [command, *args],
        stdin=PIPE,
        stdout=PIPE,
        stderr=PIPE,
        env={**get_default_environment(), **env},
        cwd=cwd,
        start_new_session=True,
    )
    read_writer, read_stream = anyio.create_memory_object_stream[Incoming](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done, stderr_done = anyio.Event(), anyio.Event()
    assert process.stdin is not None
    assert process.stdout is not None
    assert process.stderr is not None
    stdin, stdout, stderr = process.stdin, process.stdout, process.stderr

    async def overflow() -> None:
        # The message cannot be delivered and its id is lost with it: the connection is over.
        # Told first, so the session knows why its stream ends; killed before the stream ends,
        # so the server is gone (not blocked writing to a pipe nobody reads) when the
        # session tears the transport down.
        if on_fault is not None:
            on_fault(line_too_long(max_line))
        with anyio.CancelScope(shield=True):
            await kill_process_group(process)

    async def read_stdout() -> None:
        pending = bytearray()  # the line being read: at most max_line plus one chunk
        scanned = 0
        delivering = True
        try:
            async for chunk in stdout:
                pending += chunk
                start = 0
                while (end := pending.find(b"\n", scanned)) >= 0:
                    if end - start > max_line:
                        await overflow()
                        return
                    line = bytes(pending[start:end])
                    start = scanned = end + 1
                    if delivering and line.strip():
                        try:
                            await read_writer.send(_parse(line))
                        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                            delivering = False  # the session is gone: read on, discard
                del pending[:start]
                scanned = len(pending)
                if scanned > max_line:  # no newline within the limit: never read further
                    await overflow()
                    return
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass
        finally:
            read_writer.close()

    async def write_stdin() -> None:
        try:
            async with write_reader:
                async for message in write_reader:
                    text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await stdin.send(text.encode("utf-8") + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            read_writer.close()  # the server can no longer be reached: the connection ended
        finally:
            writer_done.set()

    async def read_stderr() -> None:
        # Read to the end whatever happens to the log: a server blocked on a full stderr pipe
        # would stop answering.
        logging_failed = False
        try:
            async for chunk in stderr:
                try:
                    on_stderr(chunk)
                except OSError as error:
                    if not logging_failed:
                        _logger.warning("cannot log an MCP server's stderr: %s", error)
                    logging_failed = True
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass
        finally:
            stderr_done.set()

    async def watch_exit() -> None:
        await process.wait()
        # The server is gone; its children must not keep its stdout (and the session) open.
        await kill_process_group(process)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(read_stdout)
        tasks.start_soon(write_stdin)
        tasks.start_soon(read_stderr)
        tasks.start_soon(watch_exit)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                read_stream.close()
                write_stream.close()
                with anyio.move_on_after(_FLUSH_LIMIT):
                    await writer_done.wait()
                with contextlib.suppress(OSError, anyio.BrokenResourceError):
                    await stdin.aclose()
                await _wait_exit(process, _STDIN_GRACE)
                await kill_process_group(process)
                with anyio.move_on_after(_FLUSH_LIMIT):
                    await stderr_done.wait()  # the last lines it wrote reach the log
                for stream in (stdout, stderr):
                    with contextlib.suppress(OSError, anyio.BrokenResourceError):
                        await stream.aclose()
                with anyio.move_on_after(_REAP_LIMIT):
                    await process.aclose()
            tasks.cancel_scope.cancel()
