"""`LocalShellProcess`: a background command, its settlement and consuming reads."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from dsh_bash_local._child import Child, Launch, check_workdir
from dsh_bash_local._group import kill_group_now, terminate_group
from dsh_bash_local._spawn import spawn
from dsh_shell import ProcessRead, ProcessStatus, ShellExecSpec, merge_streams


class LocalShellProcess:
    """A command started by `LocalBashExecutor.start` (implements `dsh_shell.ShellProcess`).

    Spawning happens in a task, so construction returns at once; a spawn failure settles the
    process as ``killed`` and its error is delivered once through `read_output`.
    """

    def __init__(
        self,
        spec: ShellExecSpec,
        launch: Launch,
        *,
        on_settled: Callable[[LocalShellProcess], None],
    ) -> None:
        loop = asyncio.get_running_loop()
        self.spec = spec
        self._launch = launch
        self._stdout = launch.stdout
        self._stderr = launch.stderr
        self._on_settled = on_settled
        self._status: ProcessStatus = "running"
        self._exit_code: int | None = None
        self._signal: str | None = None
        self._kill_requested = False
        self._child: Child | None = None
        self._terminator: asyncio.Task[None] | None = None
        self._offsets = [0, 0]
        self._settled: asyncio.Future[None] = loop.create_future()
        self._task = loop.create_task(self._main(), name=f"dsh-shell: {spec.command[:40]}")
        # A task cancelled before its first step never runs _main: settle it anyway.
        self._task.add_done_callback(lambda _: self._settle("killed"))

    @property
    def status(self) -> ProcessStatus:
        """``running``, then ``completed`` or ``killed`` (exactly once)."""
        return self._status

    @property
    def exit_code(self) -> int | None:
        """The exit code once exited; ``None`` while running or when a signal ended it."""
        return self._exit_code

    @property
    def signal(self) -> str | None:
        """The signal that ended the command, if one did."""
        return self._signal

    @property
    def pgid(self) -> int | None:
        """The process group id (the shell's pid) once spawned."""
        return self._child.pgid if self._child is not None else None

    async def wait(self) -> ProcessStatus:
        """Wait for settlement; never raises for the command's own failures."""
        await asyncio.shield(self._settled)
        return self._status

    def kill(self) -> bool:
        """Mark ``killed`` and terminate the group (TERM, grace, KILL); False if settled."""
        if self._status != "running":
            return False
        self._kill_requested = True
        self._status = "killed"
        if self._child is not None:
            self._begin_termination(self._child)
        return True

    def read_output(self) -> ProcessRead:
        """Output since the previous read, stdout then ``[stderr]``; valid after exit."""
        final = self._settled.done()
        out, self._offsets[0], out_lossy = self._stdout.read_from(self._offsets[0], final=final)
        err, self._offsets[1], err_lossy = self._stderr.read_from(self._offsets[1], final=final)
        return ProcessRead(
            delta=merge_streams(out, err),
            lossy=out_lossy or err_lossy,
            stdout_spill_path=self._stdout.spill_path,
            stderr_spill_path=self._stderr.spill_path,
        )

    def _begin_termination(self, child: Child) -> None:
        if self._terminator is None:
            self._terminator = asyncio.get_running_loop().create_task(
                terminate_group(child.pgid, self._launch.grace)
            )

    def _settle(self, status: ProcessStatus) -> None:
        if self._status == "running":
            self._status = status
        if not self._settled.done():
            self._settled.set_result(None)
        self._on_settled(self)

    async def _main(self) -> None:
        if self._status == "killed":  # killed before the spawn: the command never starts
            self._end_unspawned(note=None)
            return
        try:
            check_workdir(self.spec.workdir)
            child, cancelled = await spawn(self._launch)
        except Exception as error:  # whatever failed, the process settles and says why
            self._end_unspawned(note=f"spawn failed: {error}")
            return
        self._child = child
        try:
            if cancelled:
                raise asyncio.CancelledError
            if self._kill_requested:
                self._begin_termination(child)
            await child.settlement()
            child.close()
            if self._terminator is not None:
                await self._terminator
        except asyncio.CancelledError:
            kill_group_now(child.pgid)
            child.close()
            self._record_exit(child)
            self._settle("killed")
            raise
        self._record_exit(child)
        killed = self._kill_requested or self._signal is not None
        self._settle("killed" if killed else "completed")

    def _end_unspawned(self, *, note: str | None) -> None:
        if note is not None:  # delivered once, through read_output's [stderr] section
            self._stderr.feed(f"{note}\n".encode())
        self._stdout.close()
        self._stderr.close()
        self._settle("killed")

    def _record_exit(self, child: Child) -> None:
        self._exit_code, self._signal = child.exit_status
