"""A spawned child as the executor sees it, and the portable asyncio-transport implementation."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from pathlib import Path
from typing import Protocol

from dsh_bash_local._collector import OutputCollector
from dsh_bash_local._settle import Settlement
from dsh_shell import ShellNotFoundError, ShellSpawnError, ShellWorkdirError


class Child(Protocol):
    """A running ``<shell> -c`` child: its group, its settlement, its exit status."""

    @property
    def pgid(self) -> int:
        """The process group id (the shell's pid)."""
        ...

    @property
    def exited(self) -> bool:
        """Whether the shell process (the group leader) has exited."""
        ...

    def settlement(self) -> asyncio.Future[None]:
        """A new future done once the shell exited and its pipes closed (or were given up)."""
        ...

    @property
    def exit_status(self) -> tuple[int | None, str | None]:
        """``(exit_code, None)`` or ``(None, signal name)`` once exited."""
        ...

    def close(self) -> None:
        """Stop reading (abandoning pipes a grandchild holds) and seal both collectors."""
        ...


async def settle(child: Child) -> None:
    """Wait for settlement (a cancellation is held until then), then close the child."""
    while True:
        waiter = child.settlement()
        if waiter.done():
            break
        with contextlib.suppress(asyncio.CancelledError):
            await waiter
    child.close()


def decode_returncode(code: int | None) -> tuple[int | None, str | None]:
    """``(exit_code, None)`` for a normal exit, ``(None, signal name)`` for a signal death."""
    if code is None or code >= 0:
        return code, None
    try:
        return None, signal.Signals(-code).name
    except ValueError:
        return None, f"signal {-code}"


def check_workdir(workdir: Path) -> None:
    """Raise `ShellWorkdirError` unless ``workdir`` is an existing directory."""
    if not workdir.is_dir():
        reason = "it does not exist" if not workdir.exists() else "it is not a directory"
        raise ShellWorkdirError(workdir, reason)


SPAWN_FAILURES = (OSError, ValueError, subprocess.SubprocessError)
"""What ``subprocess.Popen`` raises when it cannot start a child."""


def spawn_error(error: Exception, shell: str, command: str, workdir: Path) -> Exception:
    """The `ShellError` a failed spawn of ``shell -c command`` in ``workdir`` stands for."""
    if isinstance(error, FileNotFoundError | PermissionError | NotADirectoryError):
        if error.filename is not None and os.fspath(error.filename) == os.fspath(workdir):
            return ShellWorkdirError(workdir, error.strerror or str(error))
        return ShellNotFoundError(shell, error.strerror or str(error))
    return ShellSpawnError(command, str(error))


class _ChildProtocol(asyncio.SubprocessProtocol):
    def __init__(self, settlement: Settlement, stdout: OutputCollector, stderr: OutputCollector):
        self._settlement = settlement
        self._collectors = {1: stdout, 2: stderr}

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self._collectors[fd].feed(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self._settlement.stream_closed(fd)

    def process_exited(self) -> None:
        self._settlement.process_exited()


class TransportChild:
    """A child run through ``loop.subprocess_exec`` (portable; the loop's child watcher)."""

    def __init__(
        self,
        transport: asyncio.SubprocessTransport,
        settlement: Settlement,
        stdout: OutputCollector,
        stderr: OutputCollector,
    ) -> None:
        self._transport = transport
        self._settlement = settlement
        self._stdout = stdout
        self._stderr = stderr
        pid = transport.get_pid()
        assert pid is not None
        self.pgid = pid

    @property
    def exited(self) -> bool:
        """Whether the shell has exited."""
        return self._settlement.exited

    def settlement(self) -> asyncio.Future[None]:
        """A new future done at settlement."""
        return self._settlement.waiter()

    @property
    def exit_status(self) -> tuple[int | None, str | None]:
        """The decoded exit status once exited."""
        return decode_returncode(self._transport.get_returncode())

    def close(self) -> None:
        """Close the transport and seal both collectors."""
        self._transport.close()
        self._stdout.close()
        self._stderr.close()


async def _spawn_transport_child(
    shell: str,
    command: str,
    *,
    workdir: Path,
    env: dict[str, str],
    stdin: str | bytes | None,
    stdout: OutputCollector,
    stderr: OutputCollector,
    drain_bound: float,
) -> TransportChild:
    loop = asyncio.get_running_loop()
    settlement = Settlement(loop, {1, 2}, drain_bound)
    try:
        transport, _ = await loop.subprocess_exec(
            lambda: _ChildProtocol(settlement, stdout, stderr),
            shell,
            "-c",
            command,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=workdir,
            env=env,
            start_new_session=True,
        )
    except SPAWN_FAILURES as error:
        raise spawn_error(error, shell, command, workdir) from error
    child = TransportChild(transport, settlement, stdout, stderr)
    if stdin is not None:
        pipe = transport.get_pipe_transport(0)
        assert isinstance(pipe, asyncio.WriteTransport)
        data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
        with contextlib.suppress(OSError):
            if data:
                pipe.write(data)
            pipe.close()
    return child


async def spawn_transport_child(
    shell: str,
    command: str,
    *,
    workdir: Path,
    env: dict[str, str],
    stdin: str | bytes | None,
    stdout: OutputCollector,
    stderr: OutputCollector,
    drain_bound: float,
) -> tuple[Child, bool]:
    """Spawn through the loop's transport; a cancellation during the spawn is held.

    The spawn runs in its own task, so a cancellation that arrives meanwhile cannot leave a
    half-started child: the caller always gets it (and can terminate its group); the second
    value tells whether the caller was cancelled meanwhile.
    """
    spawning = asyncio.ensure_future(
        _spawn_transport_child(
            shell,
            command,
            workdir=workdir,
            env=env,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            drain_bound=drain_bound,
        )
    )
    try:
        return await asyncio.shield(spawning), False
    except asyncio.CancelledError:
        while not spawning.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(spawning)
        if spawning.cancelled():
            raise
        return spawning.result(), True
