"""An in-memory ``SessionPersistence`` backend: session logs kept in a Python dict.

What a third-party backend author writes against the ``dsh-persistence`` seam, kept small on
purpose. ``MemoryStore`` is the storage (a dict of logs plus the set of write owners);
``MemoryPersistence`` is one backend instance over it. Several instances over one store behave
like several processes over one database, so the backend honestly declares the ``reopen``
capability; nothing survives the Python process, so it declares nothing else.

Every operation completes without awaiting anything, so the event loop itself serializes them:
no locks are needed, an append is atomic, and a close can never be interrupted half way. Use a
store from one event loop (one thread) at a time.
"""

from __future__ import annotations

import builtins
import itertools
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from types import TracebackType

from dsh_persistence import (
    Access,
    PersistenceClosedError,
    SessionAlreadyExistsError,
    SessionAlreadyOwnedError,
    SessionHandleClosedError,
    SessionPersistenceNotFoundError,
    SessionReadOnlyError,
    SessionSnapshot,
    assert_contiguous,
    assert_writable_events,
    check_read_range,
    decode_stored_event,
    materialize_append_batch,
    materialize_create_header,
)
from dsh_session import SessionEvent, SessionHeader, encode_header_line

__all__ = ["MemoryHandle", "MemoryPersistence", "MemoryStore"]


@dataclass
class _StoredLog:
    """One materialized session: the header and the canonical line of every event."""

    header: SessionHeader
    inherited_event_count: int
    revision: int
    updated_at: int
    size_bytes: int
    # Lines, not event objects: a read decodes fresh events, so nothing a caller does to what
    # it got back (or to what it appended) can reach the stored log.
    lines: list[bytes] = field(default_factory=list)


def _decode(
    session_id: str, lines: list[bytes], offset: int, end: int | None
) -> Iterator[SessionEvent]:
    """The events stored as ``lines[offset:end]``: a line that is no event (damaged storage)
    raises ``SessionPersistenceCorruptionError`` naming the session and its seq."""
    for seq, line in enumerate(lines[offset:end], start=offset):
        yield decode_stored_event(session_id, line, seq, artifact="the MemoryStore")


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class MemoryStore:
    """The storage that ``MemoryPersistence`` instances share: logs by id and the write owners.

    Two instances over one store see each other's materialized sessions and exclude each
    other's writers, like two processes over one database.
    """

    def __init__(self) -> None:
        self.logs: dict[str, _StoredLog] = {}
        self.owners: set[str] = set()
        self._revisions = itertools.count(1)

    def next_revision(self) -> int:
        """A store-wide counter, so a revision is never reused, even by a re-created id."""
        return next(self._revisions)


class MemoryHandle:
    """One open session of a ``MemoryPersistence``: a read handle or the single write handle."""

    def __init__(
        self,
        owner: MemoryPersistence,
        header: SessionHeader,
        inherited_event_count: int,
        access: Access,
    ) -> None:
        self._owner = owner
        self._header = header
        self._inherited_event_count = inherited_event_count
        self._access: Access = access
        self._closed = False

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
        """How many leading events a fork inherited."""
        return self._inherited_event_count

    @property
    def access(self) -> Access:
        """``"read"`` or ``"write"``."""
        return self._access

    def _check(self, operation: str, *, write: bool = False) -> None:
        if self._closed:
            raise SessionHandleClosedError(self.id, operation=operation)
        if write and self._access != "write":
            raise SessionReadOnlyError(self.id, operation=operation)

    async def read(self, offset: int = 0, length: int | None = None) -> Sequence[SessionEvent]:
        """Decoded copies of the stored events with ``seq >= offset`` (at most ``length``)."""
        self._check("read")
        check_read_range(offset, length)
        log = self._owner.store.logs.get(self.id)
        if log is None:
            if self._owner.is_pending(self.id):
                return ()  # created here, not materialized yet: an empty log
            raise SessionPersistenceNotFoundError(self.id)
        end = None if length is None else offset + length
        return tuple(_decode(self.id, log.lines, offset, end))

    async def append(self, events: Sequence[SessionEvent]) -> None:
        """Store a contiguous batch; visible (and, in memory, as durable as it gets) at once."""
        self._check("append", write=True)
        batch = materialize_append_batch(self.id, events)  # TypeError for non-events
        log = self._owner.store.logs.get(self.id)
        assert_contiguous(self.id, batch.events, 0 if log is None else len(log.lines))
        if not batch.events:
            return
        log = self._materialize()
        log.lines.extend(batch.lines)
        log.size_bytes += sum(len(line) + 1 for line in batch.lines)
        log.revision = self._owner.store.next_revision()
        log.updated_at = _now_ms()

    async def flush(self) -> None:
        """Publish a created, still empty session; appended events are already stored."""
        self._check("flush", write=True)
        self._materialize()

    def _materialize(self) -> _StoredLog:
        store = self._owner.store
        log = store.logs.get(self.id)
        if log is None:
            header_line = encode_header_line(self._header, self._inherited_event_count)
            log = _StoredLog(
                header=self._header,
                inherited_event_count=self._inherited_event_count,
                revision=store.next_revision(),
                updated_at=_now_ms(),
                size_bytes=len(header_line) + 1,
            )
            store.logs[self.id] = log
            self._owner.forget_pending(self.id)
        return log

    async def close(self) -> None:
        """Release ownership; a created session that was never materialized never existed.

        Idempotent. Nothing here awaits, so a close cannot be cancelled half way.
        """
        if self._closed:
            return
        self._closed = True
        if self._access == "write":
            self._owner.forget_pending(self.id)  # erases an unmaterialized session
            self._owner.store.owners.discard(self.id)
        self._owner.forget_handle(self)

    async def __aenter__(self) -> MemoryHandle:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


class MemoryPersistence:
    """A ``SessionPersistence`` over a ``MemoryStore`` (a new, private store by default)."""

    handle_type: type[MemoryHandle] = MemoryHandle
    """The class of the handles ``create`` and ``open`` return (a subclass may swap it)."""

    def __init__(self, store: MemoryStore | None = None) -> None:
        self.store = store if store is not None else MemoryStore()
        self._pending: dict[str, MemoryHandle] = {}  # created here, not materialized yet
        self._handles: set[MemoryHandle] = set()
        self._closed = False

    def check_open(self, operation: str, session_id: str = "") -> None:
        """Refuse every call after ``aclose()`` with the seam's ``PersistenceClosedError``."""
        if self._closed:
            raise PersistenceClosedError(
                session_id, backend="MemoryPersistence", operation=operation
            )

    # --- bookkeeping the handles call ---------------------------------------------------------

    def is_pending(self, session_id: str) -> bool:
        """Whether ``session_id`` was created by this instance and is not materialized yet."""
        return session_id in self._pending

    def forget_pending(self, session_id: str) -> None:
        """Drop ``session_id`` from this instance's pending sessions (materialized or erased)."""
        self._pending.pop(session_id, None)

    def forget_handle(self, handle: MemoryHandle) -> None:
        """Stop tracking a closed handle."""
        self._handles.discard(handle)

    def _track(self, handle: MemoryHandle) -> MemoryHandle:
        self._handles.add(handle)
        return handle

    # --- the service ----------------------------------------------------------------------------

    async def create(
        self, header: SessionHeader, *, inherited_event_count: int = 0
    ) -> MemoryHandle:
        """Claim a new id and return its write handle; the log appears on the first append."""
        self.check_open("create", header.id)
        header = materialize_create_header(header, inherited_event_count)
        session_id = header.id
        # An owner without a stored log is a session pending in some instance of this store.
        if session_id in self.store.logs or session_id in self.store.owners:
            raise SessionAlreadyExistsError(session_id)
        self.store.owners.add(session_id)
        handle = self.handle_type(self, header, inherited_event_count, "write")
        self._pending[session_id] = handle
        return self._track(handle)

    async def open(self, session_id: str, access: Access) -> MemoryHandle:
        """Open a stored session (or one pending in this instance, for reading)."""
        self.check_open("open", session_id)
        creator = self._pending.get(session_id)
        if creator is not None:
            if access == "write":
                raise SessionAlreadyOwnedError(session_id)
            header, inherited = creator.header, creator.inherited_event_count
            return self._track(self.handle_type(self, header, inherited, "read"))
        log = self.store.logs.get(session_id)
        if log is None:
            raise SessionPersistenceNotFoundError(session_id)
        if access == "write":
            if session_id in self.store.owners:
                raise SessionAlreadyOwnedError(session_id)
            # Checked before claiming, so a refused open leaves no claim behind.
            assert_writable_events(session_id, _decode(session_id, log.lines, 0, None))
            self.store.owners.add(session_id)
        handle = self.handle_type(self, log.header, log.inherited_event_count, access)
        return self._track(handle)

    def _snapshot(self, session_id: str) -> SessionSnapshot | None:
        log = self.store.logs.get(session_id)
        if log is not None:
            return SessionSnapshot(
                header=log.header,
                revision=str(log.revision),
                event_count=len(log.lines),
                size_bytes=log.size_bytes,
                updated_at=log.updated_at,
            )
        creator = self._pending.get(session_id)
        if creator is not None:
            return SessionSnapshot(header=creator.header, revision="pending", event_count=0)
        return None

    async def stat(self, session_id: str) -> SessionSnapshot | None:
        """The snapshot of ``session_id``, or ``None`` when this instance cannot see it."""
        self.check_open("stat", session_id)
        return self._snapshot(session_id)

    async def list(self) -> builtins.list[SessionSnapshot]:
        """Every stored session, plus the ones pending in this instance."""
        self.check_open("list")
        ids = sorted(self.store.logs.keys() | self._pending.keys())
        return [s for s in map(self._snapshot, ids) if s is not None]

    async def flush(self) -> None:
        """Publish every session this instance created and has not materialized yet."""
        self.check_open("flush")
        for handle in builtins.list(self._pending.values()):
            await handle.flush()

    async def aclose(self) -> None:
        """Close every handle of this instance; safe to call more than once."""
        self._closed = True
        for handle in builtins.list(self._handles):
            await handle.close()
