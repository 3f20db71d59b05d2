"""The executor and background-process protocols that implementations provide."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from dsh_shell._request import ShellExecRequest, ShellExecSpec
from dsh_shell._results import ProcessRead, ProcessStatus, ShellRunResult


@runtime_checkable
class ShellProcess(Protocol):
    """A command started in the background by `ShellExecutor.start`.

    ``status`` settles exactly once: ``completed`` when the command exited on its own,
    ``killed`` when it was killed (by `kill`, by a signal it received, or because it could not
    be spawned, in which case the error is delivered once through `read_output`).
    """

    @property
    def status(self) -> ProcessStatus:
        """``running``, then ``completed`` or ``killed``."""
        ...

    @property
    def exit_code(self) -> int | None:
        """The exit code once settled; ``None`` while running or when killed by a signal."""
        ...

    @property
    def signal(self) -> str | None:
        """The name of the signal that ended the command (``"SIGTERM"``), if one did."""
        ...

    async def wait(self) -> ProcessStatus:
        """Wait until the process has settled; never raises for the command's own failures."""
        ...

    def read_output(self) -> ProcessRead:
        """The output since the previous read (consuming, incremental, valid after exit)."""
        ...

    def kill(self) -> bool:
        """Terminate the process group; True the first time on a running process, else False."""
        ...


@runtime_checkable
class ShellExecutor(Protocol):
    """Runs shell commands; `dsh_shell.testing.ExecutorContract` pins the behaviour.

    ``run`` raises (a `ShellError`) only for infrastructure failures: an unusable workdir, a
    missing shell, a task already cancelled. A nonzero exit, a timeout kill, and the
    cancellation of the awaiting task (which kills the process group and returns a result
    with ``aborted``) all return a `ShellRunResult`. ``start`` returns at once and must be
    called with a running event loop.
    """

    def resolve(self, request: ShellExecRequest) -> ShellExecSpec:
        """Fill defaults and check values; an ``env`` key in ``DSH_*`` raises."""
        ...

    async def run(self, spec: ShellExecSpec) -> ShellRunResult:
        """Run the command in the foreground until it exits, times out or is cancelled."""
        ...

    def start(self, spec: ShellExecSpec) -> ShellProcess:
        """Start the command in the background (no timeout) and return at once."""
        ...
