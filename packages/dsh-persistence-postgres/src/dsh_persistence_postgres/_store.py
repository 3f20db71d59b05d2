"""The reading side over one pooled connection: session rows, log pages, the write-open scan.

Nothing here writes. The log of a session is the events rows ``0 .. event_count - 1`` of its
sessions row (the commit point, updated in the same transaction as the rows): rows at or past
it are never served (only something writing out of band can leave one there; the next writer
deletes them).
"""

from __future__ import annotations

from psycopg import AsyncConnection

from dsh_persistence import (
    SessionPersistenceCorruptionError,
    SessionSnapshot,
    assert_writable_event,
    decode_stored_header,
    gc_paused,
)
from dsh_persistence_postgres._rows import StoredRow, decode_stored_rows
from dsh_persistence_postgres._sql import Statements
from dsh_persistence_postgres._text import to_column
from dsh_session import SessionEvent, SessionFormatError, decode_header_line, is_known_event_type

PAGE_ROWS = 8192
"""Rows fetched per query of a read: bounded memory and few round trips."""


class Reader:
    """Statements of one store for reading, and how its errors name the store."""

    def __init__(self, statements: Statements, store_id: str, artifact: str) -> None:
        self.statements = statements
        self.store_id = store_id
        self.artifact = artifact

    def corruption(self, session_id: str, reason: str, seq: int | None = None) -> Exception:
        """A corruption error naming the events table (and the row by its seq)."""
        if seq is not None:
            reason = f"events row at seq {seq}: {reason}"
        return SessionPersistenceCorruptionError(
            session_id, reason, artifact=self.artifact, row=seq
        )

    def _snapshot(
        self, session_id: str, line: str, incarnation: str, count: int, size: int, updated: int
    ) -> tuple[SessionSnapshot, int]:
        header, inherited = decode_stored_header(session_id, line.encode(), artifact=self.artifact)
        snapshot = SessionSnapshot(
            header=header,
            revision=f"postgres:{self.store_id}:{incarnation}:{count}",
            event_count=count,
            size_bytes=size,
            updated_at=updated,
            plain_path=None,
        )
        return snapshot, inherited

    async def exists(self, connection: AsyncConnection, session_id: str) -> bool:
        """Whether a sessions row with this id is stored."""
        cursor = await connection.execute(self.statements.session_exists, (to_column(session_id),))
        return await cursor.fetchone() is not None

    async def load(
        self, connection: AsyncConnection, session_id: str
    ) -> tuple[SessionSnapshot, int] | None:
        """``(snapshot, inherited_event_count)`` from the sessions row, or ``None``; the header's
        format version is checked first (``SessionFormatUnsupportedError``)."""
        cursor = await connection.execute(self.statements.select_session, (to_column(session_id),))
        row = await cursor.fetchone()
        if row is None:
            return None
        return self._snapshot(session_id, *row)

    async def snapshots(self, connection: AsyncConnection) -> list[SessionSnapshot]:
        """Every sessions row; one this build cannot read (a foreign format version, a bad
        header) is left out (``stat``/``open`` of it name the problem)."""
        cursor = await connection.execute(self.statements.select_sessions)
        rows = await cursor.fetchall()
        out: list[SessionSnapshot] = []
        prefix = f"postgres:{self.store_id}:"
        with gc_paused():
            for key, line, incarnation, count, size, updated in rows:
                try:
                    header, _inherited = decode_header_line(line)
                except (SessionFormatError, ValueError):
                    continue
                if to_column(header.id) != key:
                    continue
                out.append(
                    SessionSnapshot(
                        header=header,
                        revision=f"{prefix}{incarnation}:{count}",
                        event_count=count,
                        size_bytes=size,
                        updated_at=updated,
                        plain_path=None,
                    )
                )
        return out

    async def read(
        self,
        connection: AsyncConnection,
        session_id: str,
        offset: int,
        length: int | None,
    ) -> list[SessionEvent] | None:
        """Events ``offset``.. (at most ``length``) of the committed log; ``None`` when no such
        session. A missing or undecodable row is corruption naming the row."""
        key = to_column(session_id)
        cursor = await connection.execute(self.statements.select_event_count, (key,))
        row = await cursor.fetchone()
        if row is None:
            return None
        count = int(row[0])
        end = count if length is None else min(count, offset + length)
        events: list[SessionEvent] = []
        start = offset
        while start < end:
            stop = min(end, start + PAGE_ROWS)
            events += await self._page(connection, session_id, key, start, stop)
            start = stop
        return events

    async def _page(
        self, connection: AsyncConnection, session_id: str, key: str, start: int, stop: int
    ) -> list[SessionEvent]:
        cursor = await connection.execute(self.statements.select_rows, (key, start, stop))
        rows: list[StoredRow] = await cursor.fetchall()

        def corruption(reason: str, seq: int) -> Exception:
            return self.corruption(session_id, reason, seq)

        with gc_paused():
            events = decode_stored_rows(rows, start, corruption)
        if len(events) != stop - start:
            missing = start + len(events)
            raise corruption(f"the log has no row for seq {missing}", missing)
        return events

    async def scan_for_write(
        self, connection: AsyncConnection, session_id: str
    ) -> tuple[SessionSnapshot, int] | None:
        """A write open's checks over the whole committed log, as a JSONL write open does: the
        header (version first), every row decodes and the seqs run on (a bad row is corruption
        naming the row, never dropped), no event of an unknown type lacks ``ignorable``.
        Returns what ``load`` does (``event_count`` is the next seq)."""
        loaded = await self.load(connection, session_id)
        if loaded is None:
            return None
        snapshot, _inherited = loaded
        count = snapshot.event_count or 0
        key = to_column(session_id)
        start = 0
        while start < count:
            stop = min(count, start + PAGE_ROWS)
            for event in await self._page(connection, session_id, key, start, stop):
                if not is_known_event_type(event.type):
                    assert_writable_event(session_id, event, artifact=self.artifact)
            start = stop
        return loaded
