"""Deliberately broken copies of the in-memory backend, one defect each, and the write-back
backend two of them break.

Each ``Broken*`` class makes one mistake a backend author could make; ``test_broken_variants.py``
runs the contract suite against each and checks that a *named* clause fails with a message that
points at the mistake. ``WriteBackPersistence`` is a correct variant (appends are buffered per
instance and published by ``flush``), so the defects of the flush path have something to break.
"""

from __future__ import annotations

import builtins
import dataclasses
import itertools
import time
from collections.abc import Sequence

from example_dsh_persistence_memory import MemoryHandle, MemoryPersistence, MemoryStore, _StoredLog

from dsh_persistence import (
    Access,
    SessionHandleClosedError,
    SessionPersistenceNotFoundError,
    SessionReadOnlyError,
    SessionSnapshot,
    assert_contiguous,
    check_read_range,
    materialize_append_batch,
)
from dsh_session import SessionEvent, SessionHeader, decode_event, encode_event

# --- the write-back backend (correct) -----------------------------------------------------------


class WriteBackHandle(MemoryHandle):
    """Appends wait in the instance's buffer until ``flush`` or ``close`` publishes them."""

    _owner: WriteBackPersistence

    def _lines(self) -> list[bytes]:
        log = self._owner.store.logs.get(self.id)
        stored = [] if log is None else log.lines
        return stored + self._owner.unflushed.get(self.id, [])

    async def read(self, offset: int = 0, length: int | None = None) -> Sequence[SessionEvent]:
        self._check("read")
        check_read_range(offset, length)
        if self.id not in self._owner.store.logs and not self._owner.is_pending(self.id):
            raise SessionPersistenceNotFoundError(self.id)
        end = None if length is None else offset + length
        return tuple(decode_event(line) for line in self._lines()[offset:end])

    async def append(self, events: Sequence[SessionEvent]) -> None:
        self._check("append", write=True)
        batch = materialize_append_batch(self.id, events)
        assert_contiguous(self.id, batch.events, len(self._lines()))
        if batch.events:
            log = self._materialize()
            log.updated_at = time.time_ns() // 1_000_000
            self._owner.unflushed.setdefault(self.id, []).extend(batch.lines)

    async def flush(self) -> None:
        self._check("flush", write=True)
        self._owner.publish(self, empty_too=True)

    async def close(self) -> None:
        if not self._closed and self._access == "write":
            self._owner.publish(self, empty_too=False)
        await super().close()


class WriteBackPersistence(MemoryPersistence):
    """``MemoryPersistence`` whose appends are durable (seen by other instances) after a flush."""

    handle_type = WriteBackHandle

    def __init__(self, store: MemoryStore | None = None) -> None:
        super().__init__(store)
        self.unflushed: dict[str, list[bytes]] = {}
        self.writers: list[WriteBackHandle] = []  # oldest first

    def publish(self, handle: WriteBackHandle, *, empty_too: bool) -> None:
        """Move ``handle``'s buffered lines into the store; with ``empty_too``, materialize a
        created session that has none."""
        lines = self.unflushed.pop(handle.id, [])
        if lines or empty_too:
            log = handle._materialize()
            log.lines.extend(lines)
            log.size_bytes += sum(len(line) + 1 for line in lines)

    def _track(self, handle: MemoryHandle) -> MemoryHandle:
        if isinstance(handle, WriteBackHandle) and handle.access == "write":
            self.writers.append(handle)
        return super()._track(handle)

    def forget_handle(self, handle: MemoryHandle) -> None:
        if handle in self.writers:
            self.writers.remove(handle)
        super().forget_handle(handle)

    def pending_writers(self) -> builtins.list[WriteBackHandle]:
        """The open write handles, oldest first."""
        return builtins.list(self.writers)

    async def flush(self) -> None:
        self.check_open("flush")
        for handle in self.pending_writers():
            await handle.flush()

    def _snapshot(self, session_id: str) -> SessionSnapshot | None:
        # The revision is the log's creation and its length: publishing changes neither.
        snapshot = super()._snapshot(session_id)
        log = self.store.logs.get(session_id)
        if snapshot is None or log is None:
            return snapshot
        count = len(log.lines) + len(self.unflushed.get(session_id, []))
        return dataclasses.replace(snapshot, revision=f"{log.revision}:{count}", event_count=count)


class BrokenServiceFlushSkipsTheOldest(WriteBackPersistence):
    """persistence.flush() forgets the oldest pending write handle."""

    def pending_writers(self) -> builtins.list[WriteBackHandle]:
        return super().pending_writers()[1:]


class BrokenServiceFlushSkipsTheOldestOfSeveral(MemoryPersistence):
    """persistence.flush() leaves out the oldest created session when several wait (appends
    are stored at once, so only one with nothing appended stays unpublished)."""

    async def flush(self) -> None:
        waiting = builtins.list(self._pending.values())
        for handle in waiting[1:] if len(waiting) > 1 else waiting:
            await handle.flush()


class BrokenFlushPublishesNothing(WriteBackPersistence):
    """flush() returns without publishing anything; only close does."""

    def publish(self, handle: WriteBackHandle, *, empty_too: bool) -> None:
        if empty_too:  # called by flush, not by close
            return
        super().publish(handle, empty_too=empty_too)


# --- what stat and list report -----------------------------------------------------------------


class BrokenSizeNeverGrows(MemoryPersistence):
    """size_bytes stays the header's size whatever is appended."""

    def _snapshot(self, session_id: str) -> SessionSnapshot | None:
        snapshot = super()._snapshot(session_id)
        if snapshot is None or snapshot.size_bytes is None:
            return snapshot
        return dataclasses.replace(snapshot, size_bytes=100)


class BrokenUpdatedAtFrozen(MemoryPersistence):
    """updated_at is the time the session was first seen, never later."""

    def __init__(self, store: MemoryStore | None = None) -> None:
        super().__init__(store)
        self.first_seen: dict[str, int] = {}

    def _snapshot(self, session_id: str) -> SessionSnapshot | None:
        snapshot = super()._snapshot(session_id)
        if snapshot is None or snapshot.updated_at is None:
            return snapshot
        frozen = self.first_seen.setdefault(session_id, snapshot.updated_at)
        return dataclasses.replace(snapshot, updated_at=frozen)


class BrokenUpdatedAtInSeconds(MemoryPersistence):
    """updated_at in epoch seconds, not milliseconds."""

    def _snapshot(self, session_id: str) -> SessionSnapshot | None:
        snapshot = super()._snapshot(session_id)
        if snapshot is None or snapshot.updated_at is None:
            return snapshot
        return dataclasses.replace(snapshot, updated_at=snapshot.updated_at // 1000)


class BrokenListMissesASession(MemoryPersistence):
    """list() leaves out the last session."""

    async def list(self) -> builtins.list[SessionSnapshot]:
        return (await super().list())[:-1]


class BrokenListShowsErasedSessions(MemoryPersistence):
    """list() keeps showing a created session after a close erased it."""

    def __init__(self, store: MemoryStore | None = None) -> None:
        super().__init__(store)
        self.created: dict[str, SessionHeader] = {}

    async def create(
        self, header: SessionHeader, *, inherited_event_count: int = 0
    ) -> MemoryHandle:
        handle = await super().create(header, inherited_event_count=inherited_event_count)
        self.created[header.id] = handle.header
        return handle

    async def list(self) -> builtins.list[SessionSnapshot]:
        listed = await super().list()
        seen = {s.header.id for s in listed}
        ghosts = [SessionSnapshot(header=h, revision="erased") for i, h in self.created.items()]
        return listed + [g for g in ghosts if g.header.id not in seen]


class BrokenRevisionNotBumped(MemoryPersistence):
    """An append leaves the revision as it was."""

    def _snapshot(self, session_id: str) -> SessionSnapshot | None:
        snapshot = super()._snapshot(session_id)
        if snapshot is None:
            return snapshot
        return dataclasses.replace(snapshot, revision="1")


# --- the stored header ------------------------------------------------------------------------


def _without(header: SessionHeader, *names: str) -> SessionHeader:
    return header.model_copy(update=dict.fromkeys(names))


class _LosesLineageHandle(MemoryHandle):
    def _materialize(self) -> _StoredLog:
        log = super()._materialize()
        log.header = _without(
            log.header, "parent_session", "origin", "delegation_depth", "agent_preset"
        )
        return log


class BrokenLosesParentSession(MemoryPersistence):
    """The stored header drops parentSession, origin, delegationDepth and agentPreset (the
    creator's handle still has them)."""

    handle_type = _LosesLineageHandle


class _LosesCwdHandle(MemoryHandle):
    def _materialize(self) -> _StoredLog:
        log = super()._materialize()
        log.header = _without(log.header, "cwd")
        return log


class BrokenLosesCwd(MemoryPersistence):
    """The stored header drops cwd (the creator's handle still has it)."""

    handle_type = _LosesCwdHandle


class BrokenRefusesLoneSurrogatesInHeaders(MemoryPersistence):
    """create encodes header strings as strict UTF-8, so a lone surrogate raises."""

    async def create(
        self, header: SessionHeader, *, inherited_event_count: int = 0
    ) -> MemoryHandle:
        for value in header.model_dump().values():
            if isinstance(value, str):
                value.encode("utf-8")
        return await super().create(header, inherited_event_count=inherited_event_count)


class _InheritedLostHandle(MemoryHandle):
    @property
    def inherited_event_count(self) -> int:
        return 0 if self._access == "read" else self._inherited_event_count


class BrokenInheritedCountLost(MemoryPersistence):
    """Handles opened for reading say a seeded session inherited nothing."""

    handle_type = _InheritedLostHandle


# --- reads ----------------------------------------------------------------------------------


class _ReversedHandle(MemoryHandle):
    async def read(self, offset: int = 0, length: int | None = None) -> Sequence[SessionEvent]:
        return tuple(reversed(await super().read(offset, length)))


class BrokenReversedReads(MemoryPersistence):
    """read() returns the events newest first."""

    handle_type = _ReversedHandle


class _ShiftedHandle(MemoryHandle):
    async def read(self, offset: int = 0, length: int | None = None) -> Sequence[SessionEvent]:
        if offset > 0 and length is None:
            return await super().read(offset - 1, length)  # off by one
        return await super().read(offset, length)


class BrokenShiftedReads(MemoryPersistence):
    """read(offset) from a non-zero offset starts one event early."""

    handle_type = _ShiftedHandle


class _OffsetBlindHandle(MemoryHandle):
    async def read(self, offset: int = 0, length: int | None = None) -> Sequence[SessionEvent]:
        return await super().read(0, length)


class BrokenReadIgnoresItsOffset(MemoryPersistence):
    """read(offset, length) always starts at the first event (export used to loop for ever)."""

    handle_type = _OffsetBlindHandle


class _SpinningHandle(MemoryHandle):
    async def read(self, offset: int = 0, length: int | None = None) -> Sequence[SessionEvent]:
        while True:  # never returns, never yields to the event loop
            pass


class BrokenReadNeverReturns(MemoryPersistence):
    """read() spins for ever without yielding to the event loop."""

    handle_type = _SpinningHandle


class _IsliceHandle(MemoryHandle):
    async def read(self, offset: int = 0, length: int | None = None) -> Sequence[SessionEvent]:
        self._check("read")
        check_read_range(offset, length)
        log = self._owner.store.logs.get(self.id)
        lines = [] if log is None else log.lines
        end = None if length is None else offset + length
        return tuple(decode_event(line) for line in itertools.islice(lines, offset, end))


class BrokenHugeReadRaises(MemoryPersistence):
    """read() slices with itertools.islice, which refuses offsets past sys.maxsize."""

    handle_type = _IsliceHandle


class SharedObjectsStore(MemoryStore):
    """A store that also keeps the appended event objects themselves."""

    def __init__(self) -> None:
        super().__init__()
        self.events: dict[str, list[SessionEvent]] = {}


class _SharingHandle(MemoryHandle):
    as_tuple = False

    async def append(self, events: Sequence[SessionEvent]) -> None:
        await super().append(events)
        store = self._owner.store
        assert isinstance(store, SharedObjectsStore)
        store.events.setdefault(self.id, []).extend(
            materialize_append_batch(self.id, events).events
        )

    async def read(self, offset: int = 0, length: int | None = None) -> Sequence[SessionEvent]:
        await super().read(offset, length)  # the checks
        store = self._owner.store
        assert isinstance(store, SharedObjectsStore)
        end = None if length is None else offset + length
        shared = store.events.get(self.id, [])[offset:end]  # a new list, the same objects
        return tuple(shared) if self.as_tuple else shared


class BrokenReadsShareStoredObjectsInAList(MemoryPersistence):
    """read() returns a new list of the very event objects it stores."""

    handle_type = _SharingHandle
    store_type = SharedObjectsStore


class _SharingTupleHandle(_SharingHandle):
    as_tuple = True


class BrokenReadsShareStoredObjectsInATuple(MemoryPersistence):
    """read() returns a tuple of the very event objects it stores."""

    handle_type = _SharingTupleHandle
    store_type = SharedObjectsStore


# --- appends --------------------------------------------------------------------------------


class _EmptyBumpsHandle(MemoryHandle):
    async def append(self, events: Sequence[SessionEvent]) -> None:
        await super().append(events)
        log = self._owner.store.logs.get(self.id)
        if not events and log is not None:
            log.revision = self._owner.store.next_revision()


class BrokenEmptyAppendBumpsRevision(MemoryPersistence):
    """append([]) on a stored session gives it a new revision."""

    handle_type = _EmptyBumpsHandle


class _EmptyMaterializesHandle(MemoryHandle):
    async def append(self, events: Sequence[SessionEvent]) -> None:
        await super().append(events)
        if not events:
            self._materialize()


class BrokenEmptyAppendMaterializes(MemoryPersistence):
    """append([]) on a created session stores it (its header alone)."""

    handle_type = _EmptyMaterializesHandle


class _PrefixHandle(MemoryHandle):
    async def append(self, events: Sequence[SessionEvent]) -> None:
        for event in events:  # one at a time: the valid prefix is stored before the bad item
            await super().append([event])


class BrokenRejectedBatchStoresItsPrefix(MemoryPersistence):
    """A batch is stored event by event, so the events before a bad item stay stored."""

    handle_type = _PrefixHandle


class _NoContiguityHandle(MemoryHandle):
    async def append(self, events: Sequence[SessionEvent]) -> None:
        self._check("append", write=True)
        batch = materialize_append_batch(self.id, events)
        if batch.events:
            log = self._materialize()
            log.lines.extend(batch.lines)
            log.revision = self._owner.store.next_revision()


class BrokenNoContiguityCheck(MemoryPersistence):
    """append stores any seqs at the end of the log."""

    handle_type = _NoContiguityHandle


class _OwnEncodingHandle(MemoryHandle):
    async def append(self, events: Sequence[SessionEvent]) -> None:
        self._check("append", write=True)
        log = self._owner.store.logs.get(self.id)
        assert_contiguous(self.id, events, 0 if log is None else len(log.lines))
        if events:
            log = self._materialize()
            log.lines.extend(encode_event(event) for event in events)  # no reserved-type check
            log.revision = self._owner.store.next_revision()


class BrokenAcceptsReservedTypes(MemoryPersistence):
    """append encodes events itself and never refuses a packed-row type."""

    handle_type = _OwnEncodingHandle


# --- ownership and handle states ----------------------------------------------------------------


class BrokenAllowsASecondWriter(MemoryPersistence):
    """open(write) of a stored session never checks for another writer."""

    async def open(self, session_id: str, access: Access) -> MemoryHandle:
        if access == "write" and session_id in self.store.logs:
            self.store.owners.discard(session_id)
        return await super().open(session_id, access)


class _KeepsOwnershipHandle(MemoryHandle):
    async def close(self) -> None:
        owners = set(self._owner.store.owners)
        await super().close()
        if self.id in self._owner.store.logs:
            self._owner.store.owners |= owners & {self.id}


class BrokenKeepsOwnershipAfterClose(MemoryPersistence):
    """close() of a write handle keeps the session owned."""

    handle_type = _KeepsOwnershipHandle


class _ClosedStillWorksHandle(MemoryHandle):
    def _check(self, operation: str, *, write: bool = False) -> None:
        try:
            super()._check(operation, write=write)
        except SessionHandleClosedError:
            return


class BrokenClosedHandleStillWorks(MemoryPersistence):
    """A closed handle keeps reading and appending."""

    handle_type = _ClosedStillWorksHandle


class _ReadOnlyAppendsHandle(MemoryHandle):
    def _check(self, operation: str, *, write: bool = False) -> None:
        try:
            super()._check(operation, write=write)
        except SessionReadOnlyError:
            return


class BrokenReadHandleAppends(MemoryPersistence):
    """A read handle appends and flushes like a write handle."""

    handle_type = _ReadOnlyAppendsHandle


VARIANTS: dict[str, type[MemoryPersistence]] = {
    cls.__name__: cls
    for cls in (
        BrokenServiceFlushSkipsTheOldest,
        BrokenServiceFlushSkipsTheOldestOfSeveral,
        BrokenFlushPublishesNothing,
        BrokenSizeNeverGrows,
        BrokenUpdatedAtFrozen,
        BrokenUpdatedAtInSeconds,
        BrokenListMissesASession,
        BrokenListShowsErasedSessions,
        BrokenRevisionNotBumped,
        BrokenLosesParentSession,
        BrokenLosesCwd,
        BrokenRefusesLoneSurrogatesInHeaders,
        BrokenInheritedCountLost,
        BrokenReversedReads,
        BrokenShiftedReads,
        BrokenReadIgnoresItsOffset,
        BrokenReadNeverReturns,
        BrokenHugeReadRaises,
        BrokenReadsShareStoredObjectsInAList,
        BrokenReadsShareStoredObjectsInATuple,
        BrokenEmptyAppendBumpsRevision,
        BrokenEmptyAppendMaterializes,
        BrokenRejectedBatchStoresItsPrefix,
        BrokenNoContiguityCheck,
        BrokenAcceptsReservedTypes,
        BrokenAllowsASecondWriter,
        BrokenKeepsOwnershipAfterClose,
        BrokenClosedHandleStillWorks,
        BrokenReadHandleAppends,
    )
}
"""Every broken variant, by class name."""

CORRECT: dict[str, type[MemoryPersistence]] = {
    cls.__name__: cls for cls in (MemoryPersistence, WriteBackPersistence)
}
"""The correct backends the variants break."""
