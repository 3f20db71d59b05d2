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
    """Collects both pipes and settles once the shell has exited and its pipes are done.

    The pipes are done when both closed, or ``drain_bound`` seconds after the exit at the
    latest, so a grandchild holding a pipe cannot delay settlement forever. Each waiter is a
    private future, so cancelling one waiter never disturbs the others.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        stdout: OutputCollector,
        stderr: OutputCollector,
        drain_bound: float,
    ) -> None:
        self._loop = loop
        self._collectors = {1: stdout, 2: stderr}
        self._open = {1, 2}
        self._drain_bound = drain_bound
        self._drain_timer: asyncio.TimerHandle | None = None
        self.exited = False
        self.settled = False
        self._waiters: list[asyncio.Future[None]] = []

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self._collectors[fd].feed(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self._open.discard(fd)
        if self.exited and not self._open:
            self._settle()

    def process_exited(self) -> None:
        self.exited = True
        if not self._open:
            self._settle()
        else:
            self._drain_timer = self._loop.call_later(self._drain_bound, self._settle)

    def _settle(self) -> None:
        if self.settled:
            return
        self.settled = True
        if self._drain_timer is not None:
            self._drain_timer.cancel()
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()

    def waiter(self) -> asyncio.Future[None]:
        """A new future that completes at settlement."""
        future: asyncio.Future[None] = self._loop.create_future()
        if self.settled:
            future.set_result(None)
        else:
            self._waiters.append(future)
        return future


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
    def exited(self) -> bool:
        """Whether the shell process (the group leader) has exited."""
        return self._protocol.exited

    def settlement(self) -> asyncio.Future[None]:
        """A new future done once the shell exited and its pipes closed (or were given up)."""
        return self._protocol.waiter()

    async def settle(self) -> None:
        """Wait for settlement (a cancellation is held until then), then close everything."""
        while not self._protocol.settled:
            with contextlib.suppress(asyncio.CancelledError):
                await self.settlement()
        self.close()

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

    def close(self) -> None:
        """Close the transport (abandoning pipes a grandchild holds) and seal both collectors."""
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
    drain_bound: float,
) -> Child:
    """Start ``shell -c command`` (non-login) in a new session; raise a `ShellError` if it fails."""
    loop = asyncio.get_running_loop()
    protocol = _ChildProtocol(loop, stdout, stderr, drain_bound)
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
    except (FileNotFoundError, PermissionError, NotADirectoryError) as error:
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
    drain_bound: float,
) -> tuple[Child, bool]:
    """`spawn_child` that a cancellation cannot interrupt halfway.

    A cancellation that arrives while the child is being spawned is held until the spawn has
    finished, so the caller always gets the child (and can terminate its whole group); the
    second value tells whether the caller was cancelled meanwhile.
    """
    spawning = asyncio.ensure_future(
        spawn_child(
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
