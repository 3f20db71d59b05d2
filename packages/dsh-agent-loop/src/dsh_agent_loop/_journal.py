"""The journal: routes every committed session event into the session's write handle."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from dsh_agent_loop._errors import CheckpointError
from dsh_persistence import SessionHandle
from dsh_session import Session, SessionEvent

__all__ = ["Journal"]

_log = logging.getLogger("dsh_agent_loop")


class Journal:
    """Appends a session's events to its write handle, in order, as they commit.

    A subscriber queues each committed event; one pump task appends what is queued as a batch
    (so readers see events soon, and a burst costs one append). ``flush`` appends whatever is
    still queued and then flushes the handle: the durability barrier the checkpoints use. An
    append that fails keeps its batch queued (a refused batch stores nothing) and is tried again
    by the next flush, which raises :class:`CheckpointError` while it keeps failing. Events
    ``0..stored`` are already in the handle when the journal starts.
    """

    def __init__(self, session: Session, handle: SessionHandle, *, stored: int) -> None:
        self._session = session
        self._handle = handle
        self._pending: list[SessionEvent] = list(session.events[stored:])
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._failure: BaseException | None = None
        self._closed = False
        self._subscription = session.subscribe(self._queue)
        self._pump = asyncio.get_running_loop().create_task(self._run())
        if self._pending:
            self._wake.set()

    @property
    def handle(self) -> SessionHandle:
        """The write handle events go to."""
        return self._handle

    @property
    def pending(self) -> int:
        """How many committed events are not yet appended to the handle."""
        return len(self._pending)

    def _queue(self, event: SessionEvent) -> None:
        self._pending.append(event)
        if self._failure is None:
            self._wake.set()

    async def _run(self) -> None:
        while not self._closed:
            await self._wake.wait()
            await asyncio.sleep(0)  # let a burst (a streamed answer) commit: one append for it
            self._wake.clear()
            try:  # the pump is never cancelled (close stops it), so it appends plainly
                await self._append_pending(protected=False)
            except asyncio.CancelledError:
                raise
            except Exception as error:  # kept for the next flush, which raises it
                self._failure = error
                _log.warning(
                    "session %s: appending to persistence failed (the next checkpoint retries): %s",
                    self._session.id,
                    error,
                )

    async def _append_pending(self, *, protected: bool = True) -> None:
        if not self._pending:  # nothing queued, nothing in flight (a batch leaves when stored)
            self._failure = None
            return
        async with self._lock:
            while self._pending:
                batch = self._pending[:]
                if protected:  # the caller may be cancelled: see _append_whole
                    await self._append_whole(batch)
                else:
                    await self._handle.append(batch)
                del self._pending[: len(batch)]
            self._failure = None

    async def _append_whole(self, batch: list[SessionEvent]) -> None:
        """Append ``batch``; a cancel never splits "appended" from "accounted for".

        Backends finish a write they started even when the caller is cancelled, so the append
        runs as its own task and is waited for to the end; only then does the cancel go on (the
        batch counted as stored when the append succeeded, so it is never sent twice).
        """
        append = asyncio.ensure_future(self._handle.append(batch))
        cancelled = False
        while not append.done():
            try:
                await asyncio.shield(append)
            except asyncio.CancelledError:
                cancelled = True
        if cancelled:
            if not append.cancelled() and append.exception() is None:
                del self._pending[: len(batch)]
            raise asyncio.CancelledError
        append.result()

    async def flush(self) -> None:
        """Append everything committed so far, then make it durable; raises
        :class:`CheckpointError` naming the session when either step fails."""
        try:
            await self._append_pending()
            await self._handle.flush()
        except asyncio.CancelledError:
            raise
        except Exception as error:
            self._failure = error
            raise CheckpointError(self._session.id, error) from error

    async def close(self) -> None:
        """Stop routing, append what is queued, and close the handle (which drains it).

        Idempotent. Raises the append failure, if the last events could not be stored (the
        handle is closed all the same).
        """
        if self._closed:
            return
        self._closed = True
        self._subscription.close()
        self._wake.set()  # the pump finishes the append it is in, sees the close, and ends
        with contextlib.suppress(Exception):
            await asyncio.shield(self._pump)
        failure: BaseException | None = None
        try:
            await self._append_pending()
        except Exception as error:
            failure = error
        await self._handle.close()
        if failure is not None:
            raise CheckpointError(self._session.id, failure) from failure
