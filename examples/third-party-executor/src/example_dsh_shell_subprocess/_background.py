"""A command started with ``start()``: the seam's `ShellProcess`."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from dsh_shell import ProcessRead, ProcessStatus, merge_streams
from example_dsh_shell_subprocess._command import Command, signal_name
from example_dsh_shell_subprocess._output import StreamCapture

Spawner = Callable[[StreamCapture, StreamCapture], Awaitable[Command]]
"""Starts the command with the two captures it should feed."""

Terminator = Callable[[Command], Awaitable[None]]
"""Terminates a command's whole process family."""


class BackgroundProcess:
    """A background command: no timeout, output read incrementally, settled exactly once.

    It is ``running`` from the moment `start` returns (the spawn happens on the event loop right
    after), then ``completed`` (it exited on its own) or ``killed`` (by `kill`, by a signal, or
    because it could not be spawned, which the next `read_output` reports).
    """

    def __init__(
        self,
        spawner: Spawner,
        terminator: Terminator,
        stdout: StreamCapture,
        stderr: StreamCapture,
    ) -> None:
        self._stdout = stdout
        self._stderr = stderr
        self._terminator = terminator
        self._status: ProcessStatus = "running"
        self._exit_code: int | None = None
        self._signal: str | None = None
        self._notice = ""
        self._kill_requested = False
        self._command: Command | None = None
        self._killer: asyncio.Task[None] | None = None
        self._settled = asyncio.get_running_loop().create_future()
        self._life = asyncio.ensure_future(self._live(spawner))

    @property
    def status(self) -> ProcessStatus:
        """``running``, then ``completed`` or ``killed``."""
        return self._status

    @property
    def exit_code(self) -> int | None:
        """The exit code once settled; ``None`` while running or after a deadly signal."""
        return self._exit_code

    @property
    def signal(self) -> str | None:
        """The signal that ended the command, if one did."""
        return self._signal

    async def _live(self, spawner: Spawner) -> None:
        try:
            self._command = await spawner(self._stdout, self._stderr)
        except Exception as error:  # any spawn failure settles the process; it never escapes
            self._notice = f"spawn failed: {error}\n"
            self._stdout.close()
            self._stderr.close()
            self._settle("killed", None, None)
            return
        if self._kill_requested:  # kill() came before the spawn finished
            self._killer = asyncio.ensure_future(self._terminator(self._command))
        code = await self._command.exited
        self._command.finish()
        if self._kill_requested or code < 0:
            self._settle("killed", code if code >= 0 else None, signal_name(code))
        else:
            self._settle("completed", code, None)

    def _settle(self, status: ProcessStatus, exit_code: int | None, signal: str | None) -> None:
        self._status, self._exit_code, self._signal = status, exit_code, signal
        self._settled.set_result(status)

    async def wait(self) -> ProcessStatus:
        """Wait until the process has settled; cancelling the wait leaves the process alone."""
        return await asyncio.shield(self._settled)

    def read_output(self) -> ProcessRead:
        """The output since the previous read: stdout, then stderr under ``[stderr]``."""
        notice, self._notice = self._notice, ""
        out, out_lossy = self._stdout.take()
        err, err_lossy = self._stderr.take()
        lossy = out_lossy or err_lossy
        return ProcessRead(
            notice + merge_streams(out, err),
            lossy=lossy,
            stdout_spill_path=self._stdout.spill_path if lossy else None,
            stderr_spill_path=self._stderr.spill_path if lossy else None,
        )

    def kill(self) -> bool:
        """Terminate the whole process family; True only for the first call while running."""
        if self._status != "running" or self._kill_requested:
            return False
        self._kill_requested = True
        if self._command is not None:
            self._killer = asyncio.ensure_future(self._terminator(self._command))
        return True
