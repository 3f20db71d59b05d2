"""A test-only reference backend (files + ``fcntl.flock``) and deliberately broken variants.

``DirPersistence`` is small but honest: one directory per session holding ``log.jsonl`` (the
header line, then one canonical line per event: the plain export format) and ``lock`` (the
single-writer lock, an ``flock`` that the kernel drops when the holder dies). It passes every
clause of the contract, including the cross-process ones: a child process rebuilds it from this
very file (``child_backend``). Each ``Broken*`` subclass breaks one promise on purpose, so the
suite can be shown to catch it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from dsh_persistence import (
    Access,
    PersistenceClosedError,
    SessionAlreadyExistsError,
    SessionAlreadyOwnedError,
    SessionHandleClosedError,
    SessionPersistenceCorruptionError,
    SessionPersistenceNotFoundError,
    SessionReadOnlyError,
    SessionSnapshot,
    assert_contiguous,
    assert_writable_events,
    check_read_range,
    decode_stored_header,
    materialize_append_batch,
    materialize_create_header,
    refuse_reserved_type,
)
from dsh_persistence.testing import PersistenceFixture
from dsh_session import SessionEvent, SessionHeader, decode_event, encode_header_line

THIS_FILE = str(Path(__file__).resolve())
ALL_CAPABILITIES = frozenset(
    {"reopen", "cross_process", "corrupt_tail", "damage_event", "replace_record", "plain_path"}
)


def _parse(
    session_id: str,
    path: Path,
    *,
    tolerate_torn_tail: bool = True,
    tolerate_damage: bool = False,
    decode: Callable[[bytes], SessionEvent] = decode_event,
) -> tuple[SessionHeader, int, list[SessionEvent], int]:
    """(header, inherited count, events, byte length of the committed part) of a log file."""
    data = path.read_bytes()
    lines = data.split(b"\n")
    torn = lines.pop()  # b"" after a final newline, else a torn fragment
    committed = len(data) - len(torn)
    if torn and not tolerate_torn_tail:
        lines.append(torn)
    if not lines:
        raise SessionPersistenceCorruptionError(session_id, "no header", artifact=str(path))
    header, inherited = decode_stored_header(session_id, lines[0], artifact=str(path))
    events: list[SessionEvent] = []
    for number, line in enumerate(lines[1:], start=2):
        try:
            events.append(decode(line))
        except ValueError as error:
            if tolerate_torn_tail and number == len(lines):  # a torn tail, not damage
                committed -= len(line) + 1
                break
            if tolerate_damage:  # broken on purpose: damage taken for a torn tail
                committed -= sum(len(rest) + 1 for rest in lines[number - 1 :])
                break
            raise SessionPersistenceCorruptionError(
                session_id, str(error), artifact=str(path), line=number
            ) from error
        if events[-1].seq != number - 2:
            raise SessionPersistenceCorruptionError(
                session_id,
                f"the line of seq {number - 2} holds seq {events[-1].seq}",
                artifact=str(path),
                line=number,
            )
    return header, inherited, events, committed


class DirHandle:
    """A handle of ``DirPersistence``."""

    def __init__(
        self,
        owner: DirPersistence,
        header: SessionHeader,
        inherited: int,
        access: Access,
        *,
        lock: Any = None,
        next_seq: int = 0,
        materialized: bool = True,
    ) -> None:
        self._owner = owner
        self.id = header.id
        self.header = header
        self.inherited_event_count = inherited
        self.access: Access = access
        self._lock = lock
        self._next_seq = next_seq
        self._materialized = materialized
        self._closed = False
        self._closing: asyncio.Future[None] | None = None
        self._mutex = asyncio.Lock()

    def _check(self, operation: str, *, write: bool = False) -> None:
        if self._closed:
            raise SessionHandleClosedError(self.id, operation=operation)
        if write and self.access != "write":
            raise SessionReadOnlyError(self.id, operation=operation)

    async def read(self, offset: int = 0, length: int | None = None) -> Sequence[SessionEvent]:
        self._check("read")
        check_read_range(offset, length)
        path = self._owner.log_path(self.id)
        if not path.exists():
            if self.id in self._owner.pending:
                return []
            raise SessionPersistenceNotFoundError(self.id)
        parsed = self._owner.parse(self.id, path, tolerate_torn_tail=self._owner.tolerate_torn_tail)
        events = self._owner.served_events(self.id, parsed[2])
        end = None if length is None else offset + length
        return events[offset:end]

    async def append(self, events: Sequence[SessionEvent]) -> None:
        self._check("append", write=True)
        batch = materialize_append_batch(self.id, events)
        async with self._mutex:
            await asyncio.sleep(0)  # a real backend would wait for I/O here
            self._owner.check_contiguous(self.id, batch.events, self._next_seq)
            if not batch.events:
                return
            body = b"".join(line + b"\n" for line in batch.lines)
            if self._materialized:
                await self._owner.append_bytes(self._owner.log_path(self.id), body)
            else:
                self._write(body)
            self._next_seq += len(batch.events)

    def _write(self, body: bytes) -> None:
        path = self._owner.log_path(self.id)
        if not self._materialized:
            head = encode_header_line(self.header, self.inherited_event_count) + b"\n"
            with path.open("xb") as file:
                file.write(head + body)
                os.fsync(file.fileno())
            self._materialized = True
            self._owner.pending.discard(self.id)
            return
        with path.open("ab") as file:
            file.write(body)
            os.fsync(file.fileno())

    async def flush(self) -> None:
        self._check("flush", write=True)
        async with self._mutex:
            if not self._materialized:
                self._write(b"")

    async def close(self) -> None:
        if self._closing is None:
            self._closed = True
            self._closing = asyncio.ensure_future(self._close())
        await self._owner.await_close(self._closing)

    async def _close(self) -> None:
        async with self._mutex:
            await asyncio.sleep(0)  # draining would happen here
            if self.access == "write":
                if not self._materialized:
                    self._owner.erase(self)
                self._owner.release(self.id, self._lock)
            self._owner.handles.pop(self, None)

    async def __aenter__(self) -> DirHandle:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


class DirPersistence:
    """The reference backend: a directory of sessions, single writer by ``flock``."""

    tolerate_torn_tail: bool = True
    tolerate_damage: bool = False

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.pending: set[str] = set()
        self.handles: dict[DirHandle, None] = {}  # insertion-ordered: oldest first
        self.closed = False

    def refuse_if_closed(self, operation: str, session_id: str = "") -> None:
        if self.closed:
            backend = f"DirPersistence({self.root})"
            raise PersistenceClosedError(session_id, backend=backend, operation=operation)

    # --- layout and ownership (the broken variants override these) ---------------------------

    def parse(
        self, session_id: str, path: Path, *, tolerate_torn_tail: bool = True
    ) -> tuple[SessionHeader, int, list[SessionEvent], int]:
        return _parse(
            session_id,
            path,
            tolerate_torn_tail=tolerate_torn_tail,
            tolerate_damage=self.tolerate_damage,
            decode=self.decode,
        )

    def decode(self, line: bytes) -> SessionEvent:
        """One stored line's event; any malformed line raises ``ValueError``."""
        event = decode_event(line)
        refuse_reserved_type("", 0, event.type)
        return event

    def flush_order(self) -> list[DirHandle]:
        """The write handles a service ``flush`` reaches, oldest first."""
        return [h for h in self.handles if h.access == "write"]

    def session_dir(self, session_id: str) -> Path:
        return self.root / session_id.encode("utf-8", "surrogatepass").hex()

    def log_path(self, session_id: str) -> Path:
        return self.session_dir(session_id) / "log.jsonl"

    def acquire(self, session_id: str) -> Any:
        """The write lock of ``session_id``, or ``None`` when someone else holds it."""
        directory = self.session_dir(session_id)
        directory.mkdir(exist_ok=True)
        fd = os.open(directory / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        return fd

    def release(self, session_id: str, lock: Any) -> None:
        if lock is not None:
            os.close(lock)

    def abandon_claim(self, session_id: str, lock: Any) -> None:
        """Give up the lock of a write open that failed."""
        self.release(session_id, lock)

    async def await_close(self, closing: asyncio.Future[None]) -> None:
        await asyncio.shield(closing)

    def erase(self, handle: DirHandle) -> None:
        self.pending.discard(handle.id)

    def check_contiguous(self, session_id: str, events: Sequence[SessionEvent], nxt: int) -> None:
        assert_contiguous(session_id, events, nxt)

    def served_events(self, session_id: str, events: list[SessionEvent]) -> list[SessionEvent]:
        return events

    def repair(self, path: Path, committed: int) -> None:
        with path.open("r+b") as file:
            file.truncate(committed)
            os.fsync(file.fileno())

    async def append_bytes(self, path: Path, body: bytes) -> None:
        with path.open("ab") as file:
            file.write(body)
            os.fsync(file.fileno())

    def revision(self, path: Path) -> str:
        info = path.stat()
        return f"{info.st_ino}:{info.st_size}:{info.st_mtime_ns}"

    def vocabulary_check(self, session_id: str, events: list[SessionEvent], path: Path) -> None:
        assert_writable_events(session_id, events, artifact=str(path))

    # --- the service -------------------------------------------------------------------------

    def _track(self, handle: DirHandle) -> DirHandle:
        self.handles[handle] = None
        return handle

    async def create(self, header: SessionHeader, *, inherited_event_count: int = 0) -> DirHandle:
        self.refuse_if_closed("create", header.id)
        header = materialize_create_header(header, inherited_event_count)
        session_id = header.id
        if session_id in self.pending or self.log_path(session_id).exists():
            raise SessionAlreadyExistsError(session_id)
        lock = self.acquire(session_id)
        if lock is None or self.log_path(session_id).exists():
            self.release(session_id, lock)
            raise SessionAlreadyExistsError(session_id)
        self.pending.add(session_id)
        handle = DirHandle(
            self, header, inherited_event_count, "write", lock=lock, materialized=False
        )
        return self._track(handle)

    async def open(self, session_id: str, access: Access) -> DirHandle:
        self.refuse_if_closed("open", session_id)
        path = self.log_path(session_id)
        if session_id in self.pending:
            if access == "write":
                raise SessionAlreadyOwnedError(session_id)
            creator = next(h for h in self.handles if h.id == session_id and h.access == "write")
            header, inherited = creator.header, creator.inherited_event_count
            return self._track(DirHandle(self, header, inherited, "read"))
        if not path.exists():
            raise SessionPersistenceNotFoundError(session_id)
        if access == "read":
            header, inherited, _, _ = self.parse(session_id, path)
            return self._track(DirHandle(self, header, inherited, "read"))
        lock = self.acquire(session_id)
        if lock is None:
            raise SessionAlreadyOwnedError(session_id)
        try:
            header, inherited, events, committed = self.parse(session_id, path)
            self.vocabulary_check(session_id, events, path)
            if committed != path.stat().st_size:
                self.repair(path, committed)
            events = self.served_events(session_id, events)
        except BaseException:
            self.abandon_claim(session_id, lock)
            raise
        handle = DirHandle(self, header, inherited, "write", lock=lock, next_seq=len(events))
        return self._track(handle)

    def _snapshot(self, session_id: str) -> SessionSnapshot | None:
        if session_id in self.pending:
            creator = next(h for h in self.handles if h.id == session_id and h.access == "write")
            return SessionSnapshot(header=creator.header, revision="pending", event_count=0)
        path = self.log_path(session_id)
        try:
            header, _, events, _ = self.parse(session_id, path)
            info = path.stat()
        except FileNotFoundError:
            return None
        return SessionSnapshot(
            header=header,
            revision=self.revision(path),
            event_count=len(events),
            size_bytes=info.st_size,
            updated_at=info.st_mtime_ns // 1_000_000,
            plain_path=str(path),
        )

    async def stat(self, session_id: str) -> SessionSnapshot | None:
        self.refuse_if_closed("stat", session_id)
        return self._snapshot(session_id)

    async def list(self) -> list[SessionSnapshot]:
        self.refuse_if_closed("list")
        ids = set(self.pending)
        for directory in self.root.iterdir():
            if (directory / "log.jsonl").exists():
                ids.add(bytes.fromhex(directory.name).decode("utf-8", "surrogatepass"))
        snapshots = [self._snapshot(i) for i in sorted(ids)]
        return [s for s in snapshots if s is not None]

    async def flush(self) -> None:
        self.refuse_if_closed("flush")
        for handle in self.flush_order():
            with contextlib.suppress(SessionHandleClosedError):
                await handle.flush()

    async def aclose(self) -> None:
        self.closed = True
        for handle in list(self.handles):
            await handle.close()


# --- broken on purpose ---------------------------------------------------------------------


class BrokenDropsLastEventOnReopen(DirPersistence):
    """Loses the last stored event whenever an instance reads a log it did not write."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        super().__init__(root)
        self.written: set[str] = set()

    async def create(self, header: SessionHeader, *, inherited_event_count: int = 0) -> DirHandle:
        self.written.add(header.id)
        return await super().create(header, inherited_event_count=inherited_event_count)

    def served_events(self, session_id: str, events: list[SessionEvent]) -> list[SessionEvent]:
        return events if session_id in self.written else events[:-1]


class BrokenAllowsTwoWriters(DirPersistence):
    """No single-writer rule at all (but a creator's pending session stays its own)."""

    def acquire(self, session_id: str) -> Any:
        self.session_dir(session_id).mkdir(exist_ok=True)
        return "no lock at all"

    def release(self, session_id: str, lock: Any) -> None:
        return None


class BrokenKeepsOwnershipAfterClose(DirPersistence):
    """close() never releases the write lock."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        super().__init__(root)
        self.leaked: list[Any] = []

    def release(self, session_id: str, lock: Any) -> None:
        self.leaked.append(lock)

    async def aclose(self) -> None:
        await super().aclose()
        for lock in self.leaked:  # the process would keep them; free them for the test run
            if lock is not None:
                os.close(lock)
        self.leaked.clear()


class BrokenKeepsTornTail(DirPersistence):
    """Appends after a torn tail without truncating it first."""

    def repair(self, path: Path, committed: int) -> None:
        return None


class BrokenUnshieldedClose(DirPersistence):
    """A cancelled close stops half way and never releases ownership."""

    async def await_close(self, closing: asyncio.Future[None]) -> None:
        if not closing.done():
            await closing  # not shielded: cancelling the caller cancels the close itself


class BrokenKeepsUnmaterializedSessions(DirPersistence):
    """A created session closed with nothing appended stays visible."""

    def erase(self, handle: DirHandle) -> None:
        line = encode_header_line(handle.header, handle.inherited_event_count)
        self.log_path(handle.id).write_bytes(line + b"\n")
        super().erase(handle)


class BrokenNoContiguityCheck(DirPersistence):
    """Stores any seq at any position."""

    def check_contiguous(self, session_id: str, events: Sequence[SessionEvent], nxt: int) -> None:
        return None


class BrokenFailedOpenKeepsClaim(DirPersistence):
    """A write open that fails (an unknown event type) keeps its lock, so a retry says "owned"."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        super().__init__(root)
        self.leaked: list[Any] = []

    def abandon_claim(self, session_id: str, lock: Any) -> None:
        self.leaked.append(lock)

    async def aclose(self) -> None:
        await super().aclose()
        for lock in self.leaked:
            os.close(lock)
        self.leaked.clear()


class BrokenReadersTripOverWritesInProgress(DirPersistence):
    """Writes a batch in pieces (as a slow disk would) and its reads take the half-written last
    line for damage instead of a tail in progress."""

    tolerate_torn_tail = False

    async def append_bytes(self, path: Path, body: bytes) -> None:
        for start in range(0, len(body), 40):
            with path.open("ab") as file:
                file.write(body[start : start + 40])
            await asyncio.sleep(0)


class BrokenStaleRevision(DirPersistence):
    """Reports the same revision whatever happens to the log."""

    async def append_bytes(self, path: Path, body: bytes) -> None:
        with path.open("ab") as file:
            file.write(body)
            os.fsync(file.fileno())

    def revision(self, path: Path) -> str:
        return "always-the-same"


class BrokenLockFileOwnership(DirPersistence):
    """Ownership is a lock file created with O_EXCL and removed on close: a killed owner leaves
    it behind forever."""

    def acquire(self, session_id: str) -> Any:
        directory = self.session_dir(session_id)
        directory.mkdir(exist_ok=True)
        try:
            os.close(os.open(directory / "owner", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        except FileExistsError:
            return None
        return directory / "owner"

    def release(self, session_id: str, lock: Any) -> None:
        if lock is not None:
            Path(lock).unlink(missing_ok=True)


class BrokenOpaqueUnknownTypesRefusedOnRead(DirPersistence):
    """Refuses unknown event types on read (the TypeScript harness's rule, not ours)."""

    def served_events(self, session_id: str, events: list[SessionEvent]) -> list[SessionEvent]:
        assert_writable_events(session_id, events)
        return events


class BrokenReadNeverYields(DirPersistence):
    """A read that spins for ever without yielding to the event loop."""

    def served_events(self, session_id: str, events: list[SessionEvent]) -> list[SessionEvent]:
        while True:
            pass


class BrokenTruncatesDamage(DirPersistence):
    """Takes damage in the middle of a log for a torn tail: reads stop before it and a write
    open truncates the log there."""

    tolerate_damage = True


class BrokenTruncatesThenRefuses(DirPersistence):
    """A write open of a damaged log raises SessionPersistenceCorruptionError, but only after
    cutting the log at the damaged line."""

    async def open(self, session_id: str, access: Access) -> DirHandle:
        try:
            return await super().open(session_id, access)
        except SessionPersistenceCorruptionError as error:
            if access == "write" and error.line is not None:
                path = self.log_path(session_id)
                kept = path.read_bytes().split(b"\n")[: error.line - 1]
                path.write_bytes(b"".join(line + b"\n" for line in kept))
            raise


class BrokenServiceFlushSkipsTheOldest(DirPersistence):
    """persistence.flush() leaves out the oldest write handle when there are several (appends
    are written at once, so only a created session with nothing appended is left unpublished)."""

    def flush_order(self) -> list[DirHandle]:
        writers = super().flush_order()
        return writers[1:] if len(writers) > 1 else writers


class BrokenMalformedRecordsEscapeAsTypeErrors(DirPersistence):
    """Decodes stored lines by looking their type up first, so a record that is a list, or
    whose type is a list or an object, escapes as TypeError, not as corruption."""

    def decode(self, line: bytes) -> SessionEvent:
        wire = json.loads(line)
        _ = wire["type"] in {"turn/start", "turn/end"}  # unhashable: TypeError
        return super().decode(line)


class BrokenCorruptionNamesNoSession(DirPersistence):
    """Reports a record that parses but is no event as corruption of session '' at no line."""

    def decode(self, line: bytes) -> SessionEvent:
        try:
            return super().decode(line)
        except ValueError as error:
            try:
                json.loads(line)
            except ValueError:
                raise error from None  # not JSON at all: damage, named right by the caller
            raise SessionPersistenceCorruptionError("", str(error)) from error


class BrokenWorksAfterClose(DirPersistence):
    """Goes on serving calls after ``aclose()``."""

    def refuse_if_closed(self, operation: str, session_id: str = "") -> None:
        return None


VARIANTS: dict[str, type[DirPersistence]] = {
    cls.__name__: cls
    for cls in (
        DirPersistence,
        BrokenDropsLastEventOnReopen,
        BrokenAllowsTwoWriters,
        BrokenKeepsOwnershipAfterClose,
        BrokenKeepsTornTail,
        BrokenUnshieldedClose,
        BrokenKeepsUnmaterializedSessions,
        BrokenNoContiguityCheck,
        BrokenStaleRevision,
        BrokenFailedOpenKeepsClaim,
        BrokenReadersTripOverWritesInProgress,
        BrokenLockFileOwnership,
        BrokenOpaqueUnknownTypesRefusedOnRead,
        BrokenReadNeverYields,
        BrokenTruncatesDamage,
        BrokenTruncatesThenRefuses,
        BrokenServiceFlushSkipsTheOldest,
        BrokenMalformedRecordsEscapeAsTypeErrors,
        BrokenCorruptionNamesNoSession,
        BrokenWorksAfterClose,
    )
}


def child_backend(args: dict[str, str]) -> DirPersistence:
    """The ``child_factory`` target: the same backend over the same root, in a child process."""
    return VARIANTS[args["variant"]](args["root"])


def corrupt_tail_of(root: Path, variant: type[DirPersistence]) -> Callable[[str], None]:
    def corrupt(session_id: str) -> None:
        path = variant(root).log_path(session_id)
        with path.open("ab") as file:
            file.write(b'{"type":"turn/start","seq":6,"ti')

    return corrupt


def damage_event_of(root: Path, variant: type[DirPersistence]) -> Callable[[str, int], None]:
    def damage(session_id: str, seq: int) -> None:
        path = variant(root).log_path(session_id)
        lines = path.read_bytes().split(b"\n")
        lines[seq + 1] = b'{"type":"damaged' + b"#" * max(0, len(lines[seq + 1]) - 16)
        path.write_bytes(b"\n".join(lines))

    return damage


def replace_record_of(
    root: Path, variant: type[DirPersistence]
) -> Callable[[str, int, bytes], None]:
    def replace(session_id: str, seq: int, record: bytes) -> None:
        path = variant(root).log_path(session_id)
        lines = path.read_bytes().split(b"\n")
        lines[seq + 1] = record
        path.write_bytes(b"\n".join(lines))

    return replace


def dir_fixture(
    root: Path,
    variant: type[DirPersistence] = DirPersistence,
    capabilities: frozenset[str] = ALL_CAPABILITIES,
    *,
    cleanup: Callable[[], None] | None = None,
) -> PersistenceFixture:
    """A fixture over ``root`` (reopen = a new instance over the same directory)."""
    return PersistenceFixture(
        factory=lambda: variant(root),
        capabilities=capabilities,
        corrupt_tail=corrupt_tail_of(root, variant),
        damage_event=damage_event_of(root, variant),
        replace_record=replace_record_of(root, variant),
        child_factory=f"{THIS_FILE}:child_backend",
        child_args={"root": str(root), "variant": variant.__name__},
        cleanup=cleanup,
    )


def scratch_fixture_factory(
    variant: type[DirPersistence] = DirPersistence,
    capabilities: frozenset[str] = ALL_CAPABILITIES,
) -> Callable[[], PersistenceFixture]:
    """``make_fixture`` for ``validate()``: each call a fresh temporary directory."""

    def make() -> PersistenceFixture:
        root = Path(tempfile.mkdtemp(prefix="dsh-contract-"))
        return dir_fixture(
            root, variant, capabilities, cleanup=lambda: shutil.rmtree(root, ignore_errors=True)
        )

    return make


@pytest.fixture
def make_scratch_fixture() -> Callable[..., Callable[[], PersistenceFixture]]:
    """``scratch_fixture_factory`` as a fixture (test modules cannot import this file)."""
    return scratch_fixture_factory


@pytest.fixture
def variants() -> dict[str, type[DirPersistence]]:
    """The reference backend and its broken variants, by class name."""
    return VARIANTS


@pytest.fixture
def reference_dir_fixture(tmp_path: Path) -> PersistenceFixture:
    """The reference backend over ``tmp_path`` with every capability."""
    return dir_fixture(tmp_path / "sessions")
