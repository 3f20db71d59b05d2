"""`SubprocessExecutor`: the seam's `ShellExecutor` over plain asyncio subprocesses."""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Awaitable
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from dsh_shell import (
    OutputStream,
    SandboxUnavailableError,
    ShellCancelledError,
    ShellExecRequest,
    ShellExecSpec,
    ShellRunResult,
    ShellValueError,
    check_byte_count,
    check_timeout,
    compose_child_environment,
    resolve_request,
)
from example_dsh_shell_subprocess._background import BackgroundProcess
from example_dsh_shell_subprocess._command import Command, signal_name, spawn
from example_dsh_shell_subprocess._family import terminate_family
from example_dsh_shell_subprocess._output import SpillDirectory, StreamCapture

T = TypeVar("T")


async def _uncancellable(awaitable: Awaitable[T]) -> tuple[T, bool]:
    """Await ``awaitable`` to its end even if the caller is cancelled meanwhile.

    Returns its result and whether a cancellation arrived: a kill or a spawn in progress
    must finish, or a process would be left behind with nobody to reap it.
    """
    future = asyncio.ensure_future(awaitable)
    cancelled = False
    while True:
        try:
            return await asyncio.shield(future), cancelled
        except asyncio.CancelledError:
            if future.cancelled():  # the work itself was cancelled (the loop is closing)
                raise
            cancelled = True


def _streams(stdout: int, stderr: int) -> tuple[tuple[OutputStream, int], ...]:
    """Each stream's name and in-memory budget."""
    return (("stdout", stdout), ("stderr", stderr))


class SubprocessExecutor:
    """Runs each command as ``bash -c <command>`` in a new session, with bounded output.

    ``cwd`` is the default workdir (else this process's working directory at `resolve`);
    ``timeout`` the default and ``max_timeout`` the cap, in seconds; ``stdout_max_bytes`` the
    in-memory budget of each stream (a request may change it for stdout); a stream longer
    than that keeps its tail, and its whole text is in a 0600 spill file while the stream is at
    most ``max_spill_bytes`` long (files live under ``spill_dir``, default the system temp
    directory, until `aclose`). A timeout, a cancellation or `kill` sends SIGTERM to the
    command's whole process family, then SIGKILL after ``grace`` seconds.

    It does not confine commands: a spec carrying a confining `SandboxPolicy` raises
    `SandboxUnavailableError` (``dsh_bash_sandbox.SandboxExecutor`` can wrap this executor).
    """

    def __init__(
        self,
        *,
        shell: str = "/bin/bash",
        cwd: str | os.PathLike[str] | None = None,
        timeout: float = 120.0,
        max_timeout: float = 600.0,
        stdout_max_bytes: int = 64 * 1024,
        max_spill_bytes: int = 64 * 1024 * 1024,
        spill_dir: str | os.PathLike[str] | None = None,
        grace: float = 2.0,
    ) -> None:
        if not isinstance(shell, str) or not os.path.isabs(shell):
            raise ShellValueError("shell", shell, "an absolute path to a shell")
        self.shell = shell
        self.cwd = None if cwd is None else Path(cwd)
        self.timeout = check_timeout("timeout", timeout)
        self.max_timeout = check_timeout("max_timeout", max_timeout)
        if self.timeout > self.max_timeout:
            raise ShellValueError("timeout", timeout, f"at most max_timeout ({max_timeout})")
        self.stdout_max_bytes = check_byte_count("stdout_max_bytes", stdout_max_bytes)
        self.max_spill_bytes = check_byte_count("max_spill_bytes", max_spill_bytes)
        self.grace = check_timeout("grace", grace)
        self._spill = SpillDirectory(None if spill_dir is None else Path(spill_dir))
        self._background: set[BackgroundProcess] = set()

    def resolve(self, request: ShellExecRequest) -> ShellExecSpec:
        """Fill this executor's defaults into ``request`` (the seam's `resolve_request`)."""
        return resolve_request(
            request,
            default_workdir=self.cwd,
            default_timeout=self.timeout,
            max_timeout=self.max_timeout,
            default_stdout_max_bytes=self.stdout_max_bytes,
        )

    def _captures(self, spec: ShellExecSpec, *, eager_spill: bool) -> tuple[StreamCapture, ...]:
        listener = None if eager_spill else spec.on_output  # live output: foreground runs only
        return tuple(
            StreamCapture(
                label,
                budget,
                self._spill,
                self.max_spill_bytes,
                eager_spill=eager_spill,
                on_text=None if listener is None else functools.partial(listener, label),
            )
            for label, budget in _streams(spec.stdout_max_bytes, self.stdout_max_bytes)
        )

    async def run(self, spec: ShellExecSpec) -> ShellRunResult:
        """Run until the command exits, times out, or the awaiting task is cancelled.

        A timeout or a cancellation kills the process family and returns a result that says
        ``timed_out`` or ``aborted`` (whichever came first); a task cancelled before the call
        gets `ShellCancelledError` and nothing is started.
        """
        _refuse_confinement(spec)
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise ShellCancelledError(spec.command)
        loop = asyncio.get_running_loop()
        started = loop.time()
        stdout, stderr = self._captures(spec, eager_spill=False)
        environment = self._child_environment(spec)
        spawning = spawn(self.shell, spec, environment, stdout, stderr)
        command, aborted = await _uncancellable(spawning)
        timed_out = False
        if not aborted:
            try:
                async with asyncio.timeout(spec.timeout):
                    await asyncio.shield(command.exited)
            except TimeoutError:
                timed_out = True
            except asyncio.CancelledError:
                aborted = True
        if timed_out or aborted:
            await _uncancellable(self._terminate(command))
        code, _ = await _uncancellable(command.exited)
        command.finish()
        return ShellRunResult(
            exit_code=code if code >= 0 else None,
            signal=signal_name(code),
            timed_out=timed_out,
            aborted=aborted,
            timeout=spec.timeout,
            stdout=stdout.collected(),
            stderr=stderr.collected(),
            duration=loop.time() - started,
        )

    def start(self, spec: ShellExecSpec) -> BackgroundProcess:
        """Start the command in the background (no timeout); call with a running loop."""
        _refuse_confinement(spec)
        stdout, stderr = self._captures(spec, eager_spill=True)

        def spawner(out: StreamCapture, err: StreamCapture) -> Awaitable[Command]:
            return spawn(self.shell, spec, self._child_environment(spec), out, err)

        process = BackgroundProcess(spawner, self._terminate, stdout, stderr)
        self._background = {p for p in self._background if p.status == "running"}
        self._background.add(process)
        return process

    def _child_environment(self, spec: ShellExecSpec) -> dict[str, str]:
        """The seam's one rule: scrubbed parent, terminal defaults, ``env``, ``dsh_env``."""
        return compose_child_environment(os.environ, env=spec.env, dsh_env=spec.dsh_env)

    async def _terminate(self, command: Command) -> None:
        """SIGTERM the command's process family, SIGKILL what is left after the grace."""
        await terminate_family(command.process.pid, self.grace, lambda: command.running)

    async def aclose(self) -> None:
        """Kill every background process still running, then delete the spill files."""
        for process in list(self._background):
            process.kill()
            await process.wait()
        self._background.clear()
        self._spill.remove()

    async def __aenter__(self) -> SubprocessExecutor:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def _refuse_confinement(spec: ShellExecSpec) -> None:
    if spec.sandbox is not None and spec.sandbox.mode != "danger-full-access":
        raise SandboxUnavailableError(
            f"SubprocessExecutor does not confine commands ({spec.sandbox.mode} was asked for)",
            "wrap it in dsh_bash_sandbox.SandboxExecutor, or ask for danger-full-access",
        )
