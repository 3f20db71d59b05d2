"""When a child is done: the shell exited and its pipes closed, or were given up on."""

from __future__ import annotations

import asyncio
from collections.abc import Hashable


class Settlement:
    """Settles once the shell has exited and every stream is closed.

    After the exit, streams still open (a grandchild holds them) are given up on after
    ``drain_bound`` seconds, so settlement never waits forever. Each `waiter` is a private
    future: cancelling one never disturbs the others.
    """

    def __init__(
        self, loop: asyncio.AbstractEventLoop, streams: set[Hashable], drain_bound: float
    ) -> None:
        self._loop = loop
        self._open = set(streams)
        self._drain_bound = drain_bound
        self._drain_timer: asyncio.TimerHandle | None = None
        self._waiters: list[asyncio.Future[None]] = []
        self.exited = False
        self.settled = False

    def stream_closed(self, stream: Hashable) -> None:
        """One stream reached end-of-file."""
        self._open.discard(stream)
        if self.exited and not self._open:
            self._settle()

    def process_exited(self) -> None:
        """The shell exited; settle now or after the bounded drain."""
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
