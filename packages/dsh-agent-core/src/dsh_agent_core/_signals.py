"""``shutdown_on_signals``: a harness that a SIGTERM or SIGHUP closes cleanly before the process
exits (running commands killed, session logs flushed and closed)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator, Iterable

from dsh_agent_core._harness import Harness

__all__ = ["SHUTDOWN_SIGNALS", "shutdown_on_signals"]

SHUTDOWN_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGHUP)
"""The signals ``shutdown_on_signals`` handles unless told otherwise: a polite kill and a lost
terminal."""


class _Shutdown:
    """The first signal received, and whether the cancel it sent to the body is still owed."""

    def __init__(self, task: asyncio.Task[object]) -> None:
        self.task = task
        self.received: signal.Signals | None = None
        self.closing = False
        self._cancel_pending = False

    def on_signal(self, signum: int) -> None:
        if self.received is not None:  # a second signal: the close already under way goes on
            return
        self.received = signal.Signals(signum)
        if not self.closing:
            self._cancel_pending = True
            self.task.cancel()

    def take_back_cancel(self) -> bool:
        """Whether a ``CancelledError`` the task just got is the one this signal sent (then it
        is taken back, so the close can await)."""
        if not self._cancel_pending:
            return False
        self._cancel_pending = False
        self.task.uncancel()
        return True


async def _close(harness: Harness, shutdown: _Shutdown) -> None:
    """Close ``harness`` to its end. The signal's cancel may still be owed when the body ended on
    its own just as the signal came: it lands on this await and is taken back."""
    closing = asyncio.ensure_future(harness.aclose())
    while True:
        try:
            await asyncio.shield(closing)
            return
        except asyncio.CancelledError:
            if closing.done() or not shutdown.take_back_cancel():
                raise


@contextlib.asynccontextmanager
async def shutdown_on_signals(
    harness: Harness, signals: Iterable[int] = SHUTDOWN_SIGNALS
) -> AsyncIterator[Harness]:
    """Close ``harness`` when the block ends, and end the block early when the process gets one
    of ``signals`` (default :data:`SHUTDOWN_SIGNALS`: SIGTERM, SIGHUP). Use it in place of
    ``async with harness``, in the task that runs the block::

        async with shutdown_on_signals(compose(config)) as harness:
            ...

    On the first of ``signals`` the block's task is cancelled, then :meth:`Harness.aclose`
    runs to its end: every running turn is cancelled (its ``turn/end`` says ``aborted``, cause
    ``disposed``), a running bash command's process group is killed, every session log is
    flushed and closed, background jobs are killed. Then ``SystemExit(128 + signum)`` is raised
    (143 for SIGTERM, 129 for SIGHUP, as a shell reports a process killed by that signal).
    A signal that arrives while the harness is already closing lets the close finish, then
    exits the same way; further signals are ignored (SIGKILL still works). A failure to close
    is raised instead of the exit.

    A signal the process ignores when the block starts stays ignored (``nohup`` keeps working
    on SIGHUP). The handlers are those of the running asyncio loop
    (``loop.add_signal_handler``, which replaces any handler the loop had for that signal):
    where the loop cannot install them (not the main thread, Windows) the block runs without
    them. When the block ends they are removed: the signals' default actions apply again.
    """
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    if task is None:
        raise RuntimeError("shutdown_on_signals needs to run in an asyncio task")
    shutdown = _Shutdown(task)
    installed: list[int] = []
    for signum in signals:
        if signal.getsignal(signum) == signal.SIG_IGN:
            continue  # ignored on purpose (nohup): not ours to turn into a shutdown
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, shutdown.on_signal, signum)
            installed.append(signum)
    try:
        try:
            yield harness
        except asyncio.CancelledError:
            if not shutdown.take_back_cancel():
                raise
        finally:
            shutdown.closing = True
            await _close(harness, shutdown)
    finally:
        for signum in installed:
            loop.remove_signal_handler(signum)
    if shutdown.received is not None:
        raise SystemExit(128 + shutdown.received)
