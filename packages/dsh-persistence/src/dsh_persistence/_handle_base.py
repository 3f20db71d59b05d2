"""``SessionHandleBase``: what every backend's handle does the same way."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, NotRequired, Self, TypedDict

from dsh_persistence._errors import (
    SessionHandleClosedError,
    SessionPersistenceCorruptionError,
    SessionReadOnlyError,
)
from dsh_persistence._protocols import Access
from dsh_session import SessionEvent, SessionHeader

__all__ = ["HandleIdentity", "SessionHandleBase"]


class HandleIdentity(TypedDict):
    """The keyword arguments of ``SessionHandleBase.__init__``, for a subclass to pass on
    without listing them again: ``def __init__(self, ..., **identity: Unpack[HandleIdentity])``
    then ``super().__init__(**identity)``."""

    header: SessionHeader
    inherited_event_count: int
    access: Access
    materialized: NotRequired[bool]


class SessionHandleBase:
    """What every backend's handle does the same way, for backends to inherit.

    The identity (``id``, ``header``, ``inherited_event_count``, ``access``), ``materialized``,
    the async context manager, and ``close``: idempotent (a later call returns once the first
    one finished) and shielded from cancellation, marking the handle closed before it awaits
    the subclass's ``_close()`` (drain, release ownership), then dropping the handle from its
    backend's books (the `PersistenceBase` that handed it out; nothing for a handle it never
    handed out).

    A subclass calls ``super().__init__(header=..., inherited_event_count=..., access=...)``
    (or passes on ``**identity: Unpack[HandleIdentity]``) and implements ``read``, ``append``,
    ``flush`` and ``_close`` (see `SessionHandle`). Its checks: ``_check_open(operation)``
    raises `SessionHandleClosedError` once the handle is closed; ``_check_writable(operation)``
    also `SessionReadOnlyError` on a read handle; ``_check_served(...)`` refuses a read that
    returns less than this handle served before; ``_session_pending()`` tells whether its
    session is a create of its backend with nothing written yet (a read then finds no stored
    log, and that is no error).
    """

    _header: SessionHeader
    _inherited: int
    _access: Access
    _closed: bool
    _materialized: bool

    def __init__(
        self,
        *,
        header: SessionHeader,
        inherited_event_count: int,
        access: Access,
        materialized: bool = True,
    ) -> None:
        self._header = header
        self._inherited = inherited_event_count
        self._access = access
        self._materialized = materialized
        self._closed = False
        self._close_task: asyncio.Future[None] | None = None
        self._served = 0  # how far reads of this handle reached: a later one never serves less
        self._books: _Books | None = None  # set by the PersistenceBase that hands it out

    def _bind(self, forget: Callable[[Any], None], is_pending: Callable[[str], bool]) -> None:
        """Called by `PersistenceBase` as it hands the handle out: ``forget(handle)`` drops it
        from the books once closed; ``is_pending(session_id)`` answers ``_session_pending``."""
        self._books = _Books(forget, is_pending)

    def _session_pending(self) -> bool:
        """Whether this handle's session is a create of its backend with nothing written yet."""
        books = self._books
        return books is not None and books.is_pending(self.id)

    @property
    def id(self) -> str:
        """The session id."""
        return self._header.id

    @property
    def header(self) -> SessionHeader:
        """The header, fixed at create/open."""
        return self._header

    @property
    def inherited_event_count(self) -> int:
        """How many leading events a fork inherited (0 when not seeded)."""
        return self._inherited

    @property
    def access(self) -> Access:
        """``"read"`` or ``"write"``."""
        return self._access

    @property
    def materialized(self) -> bool:
        """False while a created session exists only in its instance (nothing written yet)."""
        return self._materialized

    def _check_open(self, operation: str) -> None:
        if self._closed:
            raise SessionHandleClosedError(self.id, operation=operation)

    def _check_writable(self, operation: str) -> None:
        self._check_open(operation)
        if self._access == "read":
            raise SessionReadOnlyError(self.id, operation=operation)

    def _check_served(self, offset: int, length: int | None, count: int, artifact: str) -> None:
        """After a read of ``count`` events from ``offset``: refuse a log that shrank under
        what this handle served before (`SessionPersistenceCorruptionError`), else note it."""
        end = offset + count
        need = self._served if length is None else min(self._served, offset + length)
        if offset < need and end < need:
            raise SessionPersistenceCorruptionError(
                self.id,
                f"the log shrank: this handle already served {self._served} events",
                artifact=artifact,
            )
        if count:
            self._served = max(self._served, end)

    async def read(self, offset: int = 0, length: int | None = None) -> Sequence[SessionEvent]:
        """The events with ``seq >= offset``, at most ``length`` of them (the subclass's)."""
        raise NotImplementedError

    async def append(self, events: Sequence[SessionEvent]) -> None:
        """Append a contiguous batch at the stored next seq (the subclass's)."""
        raise NotImplementedError

    async def flush(self) -> None:
        """Make every appended event durable (the subclass's)."""
        raise NotImplementedError

    async def close(self) -> None:
        """Drain, release ownership. Idempotent and shielded from cancellation."""
        if self._close_task is None:
            self._closed = True
            self._close_task = asyncio.ensure_future(self._close_and_forget())
        await asyncio.shield(self._close_task)

    async def _close_and_forget(self) -> None:
        try:
            await self._close()
        finally:
            books = self._books
            if books is not None:
                books.forget(self)

    async def _close(self) -> None:
        """The subclass's closing work, run once by ``close``: drain, release ownership."""
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        """Return the handle itself."""
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the handle."""
        await self.close()


class _Books:
    """What a handle holds of the backend that handed it out."""

    __slots__ = ("forget", "is_pending")

    def __init__(self, forget: Callable[[Any], None], is_pending: Callable[[str], bool]) -> None:
        self.forget = forget
        self.is_pending = is_pending
