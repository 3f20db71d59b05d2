"""Spawning one ``<shell> -c`` child in its own session and collecting its two pipes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from pathlib import Path

from dsh_bash_local._collector import OutputCollector
from dsh_shell import ShellNotFoundError, ShellSpawnError, ShellWorkdirError


class _ChildProtocol(asyncio.SubprocessProtocol):
    def __init__(
        self, loop: asyncio.AbstractEventLoop, stdout: OutputCollector, stderr: OutputCollector
    ) -> None:
        self.exited: asyncio.Future[None] = loop.create_future()
        self.pipes_closed: asyncio.Future[None] = loop.create_future()
        self._collectors = {1: stdout, 2: stderr}
        self._open = {1, 2}

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self._collectors[fd].feed(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self._open.discard(fd)
        if not self._open and not self.pipes_closed.done():
            self.pipes_closed.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


def check_workdir(workdir: Path) -> None:
    """Raise `ShellWorkdirError` unless ``workdir`` is an existing directory."""
    if not workdir.is_dir():
        reason = "it does not exist" if not workdir.exists() else "it is not a directory"
        raise ShellWorkdirError(workdir, reason)


class Child:
    """A spawned command: its pid (also its process group id) and both collectors."""

    def __init__(
        self,
        transport: asyncio.SubprocessTransport,
        protocol: _ChildProtocol,
        stdout: OutputCollector,
        stderr: OutputCollector,
    ) -> None:
        self._transport = transport
        self._protocol = protocol
        self.stdout = stdout
        self.stderr = stderr
        pid = transport.get_pid()
        assert pid is not None
        self.pgid = pid

    @property
    def exited(self) -> asyncio.Future[None]:
        """Done when the shell process (the group leader) has exited."""
        return self._protocol.exited

    @property
    def exit_status(self) -> tuple[int | None, str | None]:
        """``(exit_code, None)`` or ``(None, signal name)`` once exited."""
        code = self._transport.get_returncode()
        if code is None:
            return None, None
        if code < 0:
            try:
                return None, signal.Signals(-code).name
            except ValueError:
                return None, f"signal {-code}"
        return code, None

    async def drain(self, bound: float) -> None:
        """Wait up to ``bound`` seconds for both pipes to close, then close them ourselves.

        A grandchild that keeps a pipe open therefore cannot hold the caller forever.
        """
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._protocol.pipes_closed), bound)
        self.close()

    def close(self) -> None:
        """Close the transport and seal both collectors."""
        self._transport.close()
        self.stdout.close()
        self.stderr.close()


async def spawn_child(
    shell: str,
    command: str,
    *,
    workdir: Path,
    env: dict[str, str],
    stdin: str | bytes | None,
    stdout: OutputCollector,
    stderr: OutputCollector,
) -> Child:
    """Start ``shell -c command`` (non-login) in a new session; raise a `ShellError` if it fails."""
    loop = asyncio.get_running_loop()
    protocol = _ChildProtocol(loop, stdout, stderr)
    try:
        transport, _ = await loop.subprocess_exec(
            lambda: protocol,
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
    except FileNotFoundError as error:
        if error.filename is not None and os.fspath(error.filename) == os.fspath(workdir):
            raise ShellWorkdirError(workdir, error.strerror or str(error)) from error
        raise ShellNotFoundError(shell, error.strerror or str(error)) from error
    except PermissionError as error:
        if error.filename is not None and os.fspath(error.filename) == os.fspath(workdir):
            raise ShellWorkdirError(workdir, error.strerror or str(error)) from error
        raise ShellNotFoundError(shell, error.strerror or str(error)) from error
    except OSError as error:
        raise ShellSpawnError(command, str(error)) from error
    child = Child(transport, protocol, stdout, stderr)
    if stdin is not None:
        pipe = transport.get_pipe_transport(0)
        assert isinstance(pipe, asyncio.WriteTransport)
        data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
        with contextlib.suppress(OSError):
            if data:
                pipe.write(data)
            pipe.close()
    return child


async def spawn_child_shielded(
    shell: str,
    command: str,
    *,
    workdir: Path,
    env: dict[str, str],
    stdin: str | bytes | None,
    stdout: OutputCollector,
    stderr: OutputCollector,
) -> tuple[Child, bool]:
    """`spawn_child` that a cancellation cannot interrupt halfway.

    A cancellation that arrives while the child is being spawned is held until the spawn has
    finished, so the caller always gets the child (and can terminate its whole group); the
    second value tells whether the caller was cancelled meanwhile.
    """
    spawning = asyncio.ensure_future(
        spawn_child(
            shell, command, workdir=workdir, env=env, stdin=stdin, stdout=stdout, stderr=stderr
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
