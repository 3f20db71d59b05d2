"""One spawned ``bash -c``: its process, the pipes feeding its two captures, its stdin."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
import stat
from collections.abc import Mapping
from pathlib import Path

from dsh_shell import ShellExecSpec, ShellNotFoundError, ShellSpawnError, ShellWorkdirError
from example_dsh_shell_subprocess._output import StreamCapture

_CHUNK = 64 * 1024


def check_workdir(workdir: Path) -> None:
    """Raise `ShellWorkdirError` naming ``workdir`` unless a command can run in it."""
    try:
        facts = os.stat(workdir)
    except FileNotFoundError:
        raise ShellWorkdirError(workdir, "it does not exist") from None
    except NotADirectoryError:
        raise ShellWorkdirError(workdir, "a part of the path is not a directory") from None
    except PermissionError:
        raise ShellWorkdirError(workdir, "a parent directory cannot be searched") from None
    except OSError as error:
        raise ShellWorkdirError(workdir, error.strerror or str(error)) from None
    if not stat.S_ISDIR(facts.st_mode):
        raise ShellWorkdirError(workdir, "it is not a directory")
    if not os.access(workdir, os.X_OK):
        raise ShellWorkdirError(workdir, "it cannot be entered (no search permission)")


def signal_name(returncode: int) -> str | None:
    """``"SIGTERM"`` for a process that died of signal 15 (``returncode == -15``), else None."""
    if returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"SIG{-returncode}"


class Command:
    """A running command. Its output is read as it arrives; `finish` ends the reading.

    The pipes are this module's own (non-blocking, read through ``loop.add_reader``) rather
    than asyncio streams, so that after the shell exits `finish` can take exactly what is
    waiting in each pipe and stop: a grandchild that keeps the pipe open never holds a result.
    """

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        pipes: dict[int, StreamCapture],
        stdin: bytes | None,
    ) -> None:
        self.process = process
        self._loop = asyncio.get_running_loop()
        self._pipes = pipes
        for fd, capture in pipes.items():
            os.set_blocking(fd, False)
            self._loop.add_reader(fd, self._readable, fd, capture)
        self._feeder: asyncio.Task[None] | None = None
        if stdin is not None and process.stdin is not None:
            self._feeder = asyncio.ensure_future(_feed(process.stdin, stdin))
        self.exited: asyncio.Task[int] = asyncio.ensure_future(process.wait())
        """Completes with the shell's return code when it has exited (and was reaped)."""

    @property
    def running(self) -> bool:
        """Whether the shell has not been reaped yet (its pid is still ours)."""
        return self.process.returncode is None

    def _readable(self, fd: int, capture: StreamCapture) -> None:
        try:
            data = os.read(fd, _CHUNK)  # one chunk per call: a flood cannot starve the loop
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            capture.feed(data)
        else:
            self._close(fd)

    def _close(self, fd: int) -> None:
        capture = self._pipes.pop(fd)
        self._loop.remove_reader(fd)
        os.close(fd)
        capture.close()

    def finish(self) -> None:
        """After the shell exited: read what is waiting in each pipe, then close it.

        What the shell wrote before it exited is in the pipe, at most the pipe's capacity, so
        reading up to that much takes all of it without waiting for a grandchild's end-of-file.
        """
        for fd in list(self._pipes):
            budget = _pipe_capacity(fd)
            while budget > 0:
                try:
                    data = os.read(fd, min(_CHUNK, budget))
                except (BlockingIOError, OSError):
                    break
                if not data:
                    break
                self._pipes[fd].feed(data)
                budget -= len(data)
            self._close(fd)
        if self._feeder is not None and not self._feeder.done():
            self._feeder.cancel()


def _pipe_capacity(fd: int) -> int:
    query = getattr(fcntl, "F_GETPIPE_SZ", None)  # Linux; elsewhere pipes hold 64 KiB or less
    if query is None:
        return 64 * 1024
    try:
        return int(fcntl.fcntl(fd, query))
    except OSError:
        return 64 * 1024


async def _feed(writer: asyncio.StreamWriter, data: bytes) -> None:
    """Write stdin once and close it; a command that exits without reading it is fine."""
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        writer.write(data)
        await writer.drain()
    writer.close()


async def spawn(
    shell: str,
    spec: ShellExecSpec,
    environment: Mapping[str, str],
    stdout: StreamCapture,
    stderr: StreamCapture,
) -> Command:
    """Start ``shell -c spec.command`` in a new session, in ``spec.workdir``, with
    ``environment`` and stdin given or ``/dev/null``."""
    if not os.access(shell, os.X_OK):
        raise ShellNotFoundError(shell, "it is not an executable file")
    check_workdir(spec.workdir)
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    try:
        process = await asyncio.create_subprocess_exec(
            shell,
            "-c",
            spec.command,
            stdin=asyncio.subprocess.PIPE if spec.stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=out_write,
            stderr=err_write,
            cwd=spec.workdir,
            env=environment,
            start_new_session=True,  # its own session and group: the family can be found
        )
    except BaseException as error:
        os.close(out_read)
        os.close(err_read)
        if isinstance(error, OSError):
            check_workdir(spec.workdir)  # it may have gone since the check above
            raise ShellSpawnError(spec.command, str(error)) from error
        raise
    finally:
        os.close(out_write)  # the child has its copies; ours would keep the pipes open
        os.close(err_write)
    data = spec.stdin.encode() if isinstance(spec.stdin, str) else spec.stdin
    return Command(process, {out_read: stdout, err_read: stderr}, data)
