"""`LocalBashExecutor`: the dsh-shell executor over local asyncio subprocesses."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import os
import weakref
from types import TracebackType
from typing import Literal

from dsh_bash_local._child import Child, Launch, check_workdir, encode_stdin, settle
from dsh_bash_local._collector import OutputCollector
from dsh_bash_local._config import LocalBashConfig
from dsh_bash_local._group import kill_group_now, terminate_group
from dsh_bash_local._process import LocalShellProcess
from dsh_bash_local._spawn import spawn
from dsh_bash_local._spill import SpillFiles
from dsh_shell import (
    CollectedOutput,
    OutputListener,
    OutputStream,
    SandboxUnavailableError,
    ShellCancelledError,
    ShellExecRequest,
    ShellExecSpec,
    ShellNotFoundError,
    ShellRunResult,
    compose_child_environment,
    find_program,
    resolve_request,
)

_Cause = Literal["timeout", "abort"] | None


def _kill_live_groups(ref: weakref.ref[LocalBashExecutor]) -> None:
    executor = ref()
    if executor is not None:
        executor._kill_everything_now()


class LocalBashExecutor:
    """Runs commands as ``bash -c`` (non-login) children on this host.

    Each command gets its own session and process group; stdin is ``/dev/null`` unless given;
    the environment is the scrubbed parent (no inherited ``DSH_*``, credential-shaped names,
    ``BASH_ENV``/``ENV``) → terminal defaults → ``env`` → ``dsh_env`` (``os.environ`` is never
    modified). A timeout or the cancellation of the awaiting task terminates the whole group
    (SIGTERM, ``grace``, SIGKILL) and ``run`` returns once it is gone; after the shell exits,
    pipes a grandchild still holds are abandoned after ``grace``. Each stream keeps its tail in
    memory and the complete stream in a 0600 spill file up to ``max_spill_bytes``. Use it as an
    async context manager (or call `aclose`) to kill background processes it started; groups
    still alive when the interpreter exits are SIGKILLed.

    It does not confine commands: a spec whose ``sandbox`` policy is not
    ``danger-full-access`` raises `SandboxUnavailableError` from `run` and `start` (nothing is
    started); wrap it in dsh-bash-sandbox's ``SandboxExecutor`` to confine them.

    The shell (``config.shell``) is found once, when the executor is built, and kept as the
    absolute `shell_path`: a path is used as given; a bare name is searched only in the
    system program folders (`dsh_shell.SYSTEM_PROGRAM_DIRS`), never on ``PATH``, so a ``bash``
    any command dropped into a ``PATH`` folder (``~/bin``, ``.venv/bin``) is never run in its
    place (`dsh_shell.find_program`). Not found, or found where group or others may write it,
    every ``run`` and ``start`` raises `ShellNotFoundError` saying why.
    """

    def __init__(self, config: LocalBashConfig | None = None) -> None:
        self.config = config if config is not None else LocalBashConfig()
        self._shell_problem = (
            "not found in the system program folders (PATH is never searched); name it by "
            "absolute path"
        )
        try:
            found = find_program(self.config.shell)
        except ShellNotFoundError as refused:
            found, self._shell_problem = None, refused.reason
        self.shell_path: str | None = found
        """The absolute path of the shell every command runs in (``None``: not found)."""
        self._spill = SpillFiles(self.config.spill_dir)
        self._running_groups: set[int] = set()
        self._processes: set[LocalShellProcess] = set()
        self._atexit = functools.partial(_kill_live_groups, weakref.ref(self))
        atexit.register(self._atexit)

    def resolve(self, request: ShellExecRequest) -> ShellExecSpec:
        """Fill defaults from the config, clamp the timeout, and refuse ``DSH_*`` env keys."""
        return resolve_request(
            request,
            default_workdir=self.config.cwd,
            default_timeout=self.config.timeout,
            max_timeout=self.config.max_timeout,
            default_stdout_max_bytes=self.config.max_output_bytes,
        )

    def _collector(
        self, max_bytes: int, label: OutputStream, on_output: OutputListener | None = None
    ) -> OutputCollector:
        on_text = None if on_output is None else functools.partial(on_output, label)
        return OutputCollector(
            max_bytes, self.config.max_spill_bytes, lambda: self._spill.open(label), on_text
        )

    def _launch(
        self, spec: ShellExecSpec, stdout: OutputCollector, stderr: OutputCollector
    ) -> Launch:
        if self.shell_path is None:
            raise ShellNotFoundError(self.config.shell, self._shell_problem)
        return Launch(
            shell=self.shell_path,
            command=spec.command,
            workdir=spec.workdir,
            env=compose_child_environment(os.environ, env=spec.env, dsh_env=spec.dsh_env),
            stdin=encode_stdin(spec.stdin),
            stdout=stdout,
            stderr=stderr,
            grace=self.config.grace,
        )

    async def run(self, spec: ShellExecSpec) -> ShellRunResult:
        """Run in the foreground; see `dsh_shell.ShellExecutor.run`.

        Raises `ShellWorkdirError`, `ShellNotFoundError`, `ShellSpawnError`,
        `ShellCancelledError` (the calling task was already cancelled; nothing is started), or
        `SandboxUnavailableError` (the spec must be confined; nothing is started).
        """
        _refuse_confinement(spec)
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise ShellCancelledError(spec.command)
        check_workdir(spec.workdir)
        stdout = self._collector(spec.stdout_max_bytes, "stdout", spec.on_output)
        stderr = self._collector(self.config.max_output_bytes, "stderr", spec.on_output)
        loop = asyncio.get_running_loop()
        started = loop.time()
        child, cancelled = await spawn(self._launch(spec, stdout, stderr))
        self._running_groups.add(child.pgid)
        try:
            cause: _Cause = (
                "abort" if cancelled else await _wait_for_settlement(child, spec.timeout)
            )
            if cause is not None:
                # A cancellation during the grace escalates to SIGKILL at once; the first
                # cause (timeout or abort) stays the reported one.
                with contextlib.suppress(asyncio.CancelledError):
                    await terminate_group(child.pgid, self.config.grace)
            await settle(child)
        except BaseException:
            kill_group_now(child.pgid)
            child.close()
            raise
        finally:
            self._running_groups.discard(child.pgid)
        exit_code, signal = child.exit_status
        return ShellRunResult(
            exit_code=exit_code,
            signal=signal,
            timed_out=cause == "timeout",
            aborted=cause == "abort",
            timeout=spec.timeout,
            stdout=CollectedOutput(stdout.text(), stdout.truncated, stdout.spill_path),
            stderr=CollectedOutput(stderr.text(), stderr.truncated, stderr.spill_path),
            duration=loop.time() - started,
        )

    def start(self, spec: ShellExecSpec) -> LocalShellProcess:
        """Start in the background and return at once (needs a running event loop).

        Raises `SandboxUnavailableError` when the spec must be confined (nothing is started).
        """
        _refuse_confinement(spec)
        launch = self._launch(
            spec,
            self._collector(self.config.max_output_bytes, "stdout"),
            self._collector(self.config.max_output_bytes, "stderr"),
        )
        process = LocalShellProcess(spec, launch, on_settled=self._processes.discard)
        self._processes.add(process)
        return process

    async def aclose(self) -> None:
        """Kill every background process still running and wait for them to settle."""
        processes = list(self._processes)
        for process in processes:
            process.kill()
        await asyncio.gather(*(process.wait() for process in processes))
        atexit.unregister(self._atexit)

    async def __aenter__(self) -> LocalBashExecutor:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    def _kill_everything_now(self) -> None:
        for pgid in list(self._running_groups):
            kill_group_now(pgid)
        for process in list(self._processes):
            if process.pgid is not None:
                kill_group_now(process.pgid)


def _refuse_confinement(spec: ShellExecSpec) -> None:
    """Fail closed: this executor never runs a command that must be confined."""
    if spec.sandbox is not None and spec.sandbox.mode != "danger-full-access":
        raise SandboxUnavailableError(
            "the local executor does not confine commands",
            "use dsh-bash-sandbox's SandboxExecutor or mode danger-full-access",
        )


async def _wait_for_settlement(child: Child, limit: float) -> _Cause:
    """Wait for the shell to exit and its pipes to drain; report which cause came first.

    A deadline that passes after the shell exited (while a grandchild holds a pipe) is not a
    timeout: the drain is bounded on its own.
    """
    try:
        try:
            async with asyncio.timeout(limit):
                await child.settlement()
        except TimeoutError:
            return None if child.exited else "timeout"
    except asyncio.CancelledError:
        return "abort"
    return None
