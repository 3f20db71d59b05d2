"""The seam itself: what a persistence backend and its per-session handles promise."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from types import TracebackType
from typing import Literal, Protocol, Self, runtime_checkable

from dsh_persistence._snapshot import SessionSnapshot
from dsh_session import SessionEvent, SessionHeader

Access = Literal["read", "write"]
"""How a handle was opened: ``"read"`` never owns the session, ``"write"`` is the single owner."""


@runtime_checkable
class SessionHandle(Protocol):
    """One session opened through a backend; every log read and write flows through it.

    A handle is an async context manager: leaving the ``async with`` block closes it.
    ``close()`` is idempotent, drains, releases ownership and is not cancellable; afterwards every
    operation raises ``SessionHandleClosedError``.
    """

    @property
    def id(self) -> str:
        """The session id."""
        ...

    @property
    def header(self) -> SessionHeader:
        """The header, fixed at create/open."""
        ...

    @property
    def inherited_event_count(self) -> int:
        """How many leading events a fork inherited (0 when the header is not seeded)."""
        ...

    @property
    def access(self) -> Access:
        """``"read"`` or ``"write"``."""
        ...

    async def read(self, offset: int = 0, length: int | None = None) -> Sequence[SessionEvent]:
        """The logical events with ``seq >= offset``, at most ``length`` of them.

        Past the end gives ``[]``; a negative or non-integer argument raises. Never a torn tail;
        never shorter than an earlier read on the same handle.
        """
        ...

    async def append(self, events: Sequence[SessionEvent]) -> None:
        """Append a contiguous batch whose first seq is the stored next seq.

        Visible to every later read once this returns; durable only after ``flush``. A rejected
        batch stores nothing; an empty batch is a no-op.
        """
        ...

    async def flush(self) -> None:
        """Make every appended event durable (and materialize an empty created session)."""
        ...

    async def close(self) -> None:
        """Drain, complete durability, release ownership. Idempotent; shielded from cancel."""
        ...

    async def __aenter__(self) -> Self:
        """Return the handle itself."""
        ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the handle."""
        ...


@runtime_checkable
class SessionPersistence(Protocol):
    """A storage backend for session logs: ``create``/``open`` hand out per-session handles.

    Single writer per session, across processes too; reads never take ownership.
    """

    async def create(
        self, header: SessionHeader, *, inherited_event_count: int = 0
    ) -> SessionHandle:
        """Start a new session and return its write handle (the caller owns it from now on).

        The session materializes lazily, on the first append or flush; one closed with neither
        never existed. Raises ``SessionAlreadyExistsError`` for a stored or pending id.
        """
        ...

    async def open(self, session_id: str, access: Access) -> SessionHandle:
        """Open a stored session; ``"write"`` claims single ownership or raises
        ``SessionAlreadyOwnedError``; a failed write open releases its claim."""
        ...

    async def stat(self, session_id: str) -> SessionSnapshot | None:
        """The snapshot of one session without reading its body, or ``None`` when absent."""
        ...

    async def list(self) -> builtins.list[SessionSnapshot]:
        """A snapshot of every visible session, in no promised order."""
        ...

    async def flush(self) -> None:
        """A durability barrier over every write handle active at the time of the call."""
        ...

    async def aclose(self) -> None:
        """Close every handle of this instance and release every lock."""
        ...
