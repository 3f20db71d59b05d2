"""``SessionHandleBase``: what every backend's handle does the same way."""

from __future__ import annotations

from types import TracebackType
from typing import Self

from dsh_persistence._errors import SessionHandleClosedError
from dsh_persistence._protocols import Access
from dsh_session import SessionHeader

__all__ = ["SessionHandleBase"]


class SessionHandleBase:
    """The identity of a handle and its async context manager, for backends to inherit.

    A subclass sets ``_header``, ``_inherited`` (the fork's inherited event count), ``_access``
    and ``_closed`` in its ``__init__`` and implements ``read``, ``append``, ``flush`` and
    ``close`` (see `SessionHandle`); ``_check_open(operation)`` raises
    `SessionHandleClosedError` naming the session and the operation once it is closed.
    """

    _header: SessionHeader
    _inherited: int
    _access: Access
    _closed: bool

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

    def _check_open(self, operation: str) -> None:
        if self._closed:
            raise SessionHandleClosedError(self.id, operation=operation)

    async def close(self) -> None:
        """Release the handle (a subclass's own; idempotent)."""
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
