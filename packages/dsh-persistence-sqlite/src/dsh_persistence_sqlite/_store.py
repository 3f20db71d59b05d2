"""The synchronous side: every statement against one connection (run on the instance's thread).

Nothing here touches the event loop. Methods raise the seam's errors (naming the session, and the
database path as the artifact) or ``SqliteStoreError``.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zstandard

from dsh_persistence import (
    SessionAlreadyExistsError,
    SessionOwnershipLostError,
    SessionPersistenceCorruptionError,
    SessionPersistenceError,
    SessionPersistenceNotFoundError,
    SessionSnapshot,
    assert_format_version,
    assert_writable_event,
    gc_paused,
    text_from_column,
    text_to_column,
)
from dsh_persistence_sqlite import _sql as sql
from dsh_persistence_sqlite._db import open_database
from dsh_persistence_sqlite._headers import header_columns, header_from_columns
from dsh_persistence_sqlite._read import READ_BATCH, RowsDecoder
from dsh_persistence_sqlite._rows import (
    COMPRESSION_LEVEL,
    MAX_PACK_MEMBERS,
    Row,
)
from dsh_session import (
    SessionEvent,
    SessionFormatError,
    SessionHeader,
    is_known_event_type,
)

_HEADER_CACHE_SIZE = 65536

MAX_SEQ = 2**63 - 1
"""The largest INTEGER SQLite stores: no row has a seq above it, so a read from beyond it is
empty and a range ending beyond it runs to the end (a larger bound would not bind)."""


@dataclass(slots=True)
class StoredSession:
    """A session row: its header, its fork cut, and the parts of its revision."""

    header: SessionHeader
    inherited_event_count: int
    revision: str
    event_count: int
    updated_at: int


@dataclass(slots=True)
class WriteTail:
    """What a write open learns: where the log continues, and a torn final row to drop."""

    stored: StoredSession
    next_seq: int
    torn_seq: int | None


def now_ms() -> int:
    """Wall-clock epoch milliseconds."""
    return time.time_ns() // 1_000_000


class Store:
    """One verified connection to the session database and the statements over it."""

    def __init__(self, path: Path, *, busy_timeout_ms: int, compression: bool) -> None:
        self.path = path
        self._busy_timeout_ms = busy_timeout_ms
        self._connection: sqlite3.Connection | None = None
        self._store_id = ""
        self._headers: dict[str, tuple[tuple[Any, ...], SessionHeader]] = {}
        self.compressor = (
            zstandard.ZstdCompressor(level=COMPRESSION_LEVEL, write_content_size=True)
            if compression
            else None
        )

    @property
    def artifact(self) -> str:
        """The database path, as errors name it."""
        return str(self.path)

    def connection(self) -> sqlite3.Connection:
        """The connection, opened and verified on first use."""
        if self._connection is None:
            opened = open_database(self.path, busy_timeout_ms=self._busy_timeout_ms)
            self._connection, self._store_id = opened.connection, opened.store_id
        return self._connection

    def close(self) -> None:
        """Close the connection (idempotent)."""
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    @contextlib.contextmanager
    def _transaction(self, begin: str) -> Iterator[sqlite3.Connection]:
        connection = self.connection()
        connection.execute(begin)
        try:
            yield connection
            connection.execute(sql.COMMIT)  # a COMMIT that fails (full, busy) rolls back too
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                connection.execute(sql.ROLLBACK)
            raise

    def read_transaction(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """A consistent snapshot across several statements."""
        return self._transaction(sql.BEGIN_DEFERRED)

    def write_transaction(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """The database write lock for the whole block (waits up to busy_timeout)."""
        return self._transaction(sql.BEGIN_IMMEDIATE)

    # -- sessions --------------------------------------------------------------------------

    def corruption(self, session_id: str, reason: str, seq: int | None = None) -> Exception:
        """A corruption error naming this database (and the row by its first seq)."""
        if seq is not None:
            reason = f"events row at seq {seq}: {reason}"
        return SessionPersistenceCorruptionError(
            session_id, reason, artifact=self.artifact, row=seq
        )

    def _header(self, row: Sequence[Any]) -> SessionHeader:
        """The header of a ``SELECT_SESSION`` row: the id column decodes, the format version is
        checked before anything else of the row, then the header columns (a header built for
        the same columns before is reused: headers are immutable)."""
        key = row[0]
        columns = tuple(row[:9])
        cached = self._headers.get(key)
        if cached is not None and cached[0] == columns:
            return cached[1]  # built from these very columns: id and version passed then
        version = row[1]
        if not (type(key) is str and key.isascii() and type(version) is int and version == 0):
            try:  # (an ASCII id column is the id itself, and version 0 is the current format)
                session_id = text_from_column(key)
            except ValueError as error:
                raise self.corruption(str(key), f"bad id column: {error}") from error
            assert isinstance(session_id, str)
            assert_format_version(session_id, version, artifact=self.artifact)
        else:
            session_id = key
        try:
            header = header_from_columns(columns)
        except ValueError as error:
            raise self.corruption(session_id, f"bad header columns: {error}") from error
        if len(self._headers) >= _HEADER_CACHE_SIZE:
            self._headers.clear()
        self._headers[key] = (columns, header)
        return header

    def _stored(self, row: Sequence[Any]) -> StoredSession:
        header = self._header(row)
        last_seq, written_at = row[13], row[14]
        return StoredSession(
            header=header,
            inherited_event_count=row[9],
            revision=f"sqlite:{self._store_id}:{row[10]}:{row[11]}:"
            f"{'-' if last_seq is None else last_seq}",
            event_count=0 if last_seq is None else last_seq + 1,
            updated_at=row[12] if written_at is None else max(written_at, row[12]),
        )

    def exists(self, session_id: str) -> bool:
        """Whether a session row with this id is stored."""
        key = text_to_column(session_id)
        return self.connection().execute(sql.SESSION_EXISTS, (key,)).fetchone() is not None

    def load(self, session_id: str) -> StoredSession | None:
        """The stored session (version checked first), or ``None``."""
        row = (
            self.connection().execute(sql.SELECT_SESSION, (text_to_column(session_id),)).fetchone()
        )
        return None if row is None else self._stored(row)

    def snapshot(self, session_id: str) -> SessionSnapshot | None:
        """``stat``: the session row and its last event row only."""
        stored = self.load(session_id)
        return None if stored is None else self.to_snapshot(stored)

    @staticmethod
    def to_snapshot(stored: StoredSession) -> SessionSnapshot:
        """The seam's snapshot of a stored session."""
        return SessionSnapshot(
            header=stored.header,
            revision=stored.revision,
            event_count=stored.event_count,
            size_bytes=None,
            updated_at=stored.updated_at,
            plain_path=None,
        )

    def snapshots(self) -> list[SessionSnapshot]:
        """``list``: every session row (and each one's last event row), in no promised order.

        A session this build cannot read (a foreign format version, bad columns) is left out;
        ``stat``/``open`` of it name the problem.
        """
        out: list[SessionSnapshot] = []
        append = out.append
        header_of = self._header
        prefix = f"sqlite:{self._store_id}:"
        with gc_paused():  # a bulk build: no cyclic GC passes over the new objects
            rows = self.connection().execute(sql.SELECT_SESSIONS).fetchall()
            for row in rows:  # _stored + to_snapshot, inline: one pass per session
                try:
                    header = header_of(row)
                except (SessionPersistenceError, SessionFormatError, ValueError):
                    continue
                last_seq, written_at, updated_at = row[13], row[14], row[12]
                append(
                    SessionSnapshot(  # positional (header, revision, event_count, size_bytes,
                        # updated_at, plain_path): measurably cheaper than keywords per session
                        header,
                        f"{prefix}{row[10]}:{row[11]}:{'-' if last_seq is None else last_seq}",
                        0 if last_seq is None else last_seq + 1,
                        None,
                        updated_at if written_at is None else max(written_at, updated_at),
                        None,
                    )
                )
        return out

    # -- writing ---------------------------------------------------------------------------

    def insert_session(
        self, connection: sqlite3.Connection, header: SessionHeader, inherited_event_count: int
    ) -> None:
        """Insert a session row (inside a write transaction)."""
        values = (
            text_to_column(header.id),
            *header_columns(header),
            inherited_event_count,
            uuid.uuid4().hex,
            now_ms(),
        )
        try:
            connection.execute(sql.INSERT_SESSION, values)
        except sqlite3.IntegrityError as error:
            raise SessionAlreadyExistsError(header.id) from error

    @staticmethod
    def insert_rows(connection: sqlite3.Connection, rows: Sequence[Row]) -> None:
        """Insert physical rows (inside a write transaction)."""
        connection.executemany(sql.INSERT_ROW, rows)

    def materialize(
        self, header: SessionHeader, inherited_event_count: int, rows: Sequence[Row]
    ) -> None:
        """Publish a created session: its row and its first rows, in one transaction."""
        with self.write_transaction() as connection:
            self.insert_session(connection, header, inherited_event_count)
            self.insert_rows(connection, rows)

    def append(self, session_id: str, rows: Sequence[Row], torn_seq: int | None) -> None:
        """Append rows to a stored session in one transaction (dropping a torn final row
        first, which counts as a rewrite). The rows carry the id's column form."""
        key = text_to_column(session_id)
        connection = self.connection()
        connection.execute(sql.BEGIN_IMMEDIATE)  # the hot path: no context manager
        try:
            if torn_seq is not None:
                connection.execute(sql.DELETE_ROW, (key, torn_seq))
                cursor = connection.execute(sql.UPDATE_AFTER_REWRITE, (now_ms(), key))
                if cursor.rowcount != 1:
                    raise SessionPersistenceNotFoundError(session_id)
            try:
                connection.executemany(sql.INSERT_ROW, rows)
            except sqlite3.IntegrityError as error:
                if connection.execute(sql.SESSION_EXISTS, (key,)).fetchone() is None:
                    raise SessionPersistenceNotFoundError(session_id) from error
                raise SessionOwnershipLostError(
                    session_id,
                    reason=f"the stored log already holds seq {rows[0][1]} (written by "
                    "something that does not take the session lock)",
                ) from error
            connection.execute(sql.COMMIT)  # a COMMIT that fails (full, busy) rolls back too
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                connection.execute(sql.ROLLBACK)
            raise

    # -- reading ---------------------------------------------------------------------------

    def read(
        self, session_id: str, offset: int, length: int | None, *, must_exist: bool
    ) -> list[SessionEvent] | None:
        """Logical events ``offset``.. (at most ``length``); ``None`` when no such session.

        A malformed *final* row is a torn tail and is not served; any other bad row, or a gap
        in the seqs, is corruption. Any non-negative ``offset``/``length`` is accepted, however
        large.
        """
        anchor = max(0, offset - MAX_PACK_MEMBERS + 1)
        key = text_to_column(session_id)
        with self.read_transaction() as connection:
            if connection.execute(sql.SESSION_EXISTS, (key,)).fetchone() is None:
                if must_exist:
                    raise SessionPersistenceNotFoundError(session_id)
                return None
            if length == 0 or offset > MAX_SEQ:
                return []
            if length is not None and offset + length > MAX_SEQ:
                length = None  # "to the end": no seq is that large
            last = connection.execute(sql.SELECT_LAST_ROW_SEQ, (key,)).fetchone()
            if length is None:
                cursor = connection.execute(sql.SELECT_ROWS_FROM, (key, anchor, offset))
            else:
                cursor = connection.execute(
                    sql.SELECT_ROWS_RANGE, (key, anchor, offset, offset + length)
                )
            decoder = RowsDecoder(
                offset,
                None if last is None else last[0],
                lambda reason, seq: self.corruption(session_id, reason, seq),
            )
            with gc_paused():  # a bulk load: no cyclic GC passes over the new objects
                while not decoder.torn and (rows := cursor.fetchmany(READ_BATCH)):
                    decoder.feed(rows)
        events = decoder.events
        if events and events[0].seq < offset:
            del events[: offset - events[0].seq]
        if length is not None and len(events) > length:
            del events[length:]
        return events

    def open_for_write(self, session_id: str) -> WriteTail:
        """A write open's checks, over the whole log as a JSONL write open does: the header
        (version first); every row decodes and the seqs run on (a bad row with rows after it
        is corruption naming the row, never dropped); a bad *final* row is a torn tail to drop
        on the next append; no event of an unknown type lacks ``ignorable`` (refused, naming the
        type)."""
        key = text_to_column(session_id)
        with self.read_transaction() as connection:
            stored = self.load(session_id)
            if stored is None:
                raise SessionPersistenceNotFoundError(session_id)
            last = connection.execute(sql.SELECT_LAST_ROW_SEQ, (key,)).fetchone()
            cursor = connection.execute(sql.SELECT_ROWS_FROM, (key, 0, 0))
            decoder = RowsDecoder(
                0,
                None if last is None else last[0],
                lambda reason, seq: self.corruption(session_id, reason, seq),
            )
            next_seq = 0
            with gc_paused():
                while not decoder.torn and (rows := cursor.fetchmany(READ_BATCH)):
                    decoder.feed(rows)
                    events = decoder.events
                    if events:
                        next_seq = events[-1].seq + 1
                        for event in events:
                            if not is_known_event_type(event.type):
                                assert_writable_event(session_id, event, artifact=self.artifact)
                        events.clear()  # checked: a long log is not held in memory
        torn = last[0] if decoder.torn and last is not None else None
        return WriteTail(stored, next_seq, torn)
