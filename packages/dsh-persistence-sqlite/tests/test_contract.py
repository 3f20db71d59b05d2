"""The seam's contract suite (dsh_persistence.testing) over the compressed, plain and packed
variants (`DSH_SQLITE_VARIANT` picks one)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from dsh_persistence import text_to_column
from dsh_persistence.testing import PersistenceContract, PersistenceFixture

CHILD_FACTORY = f"{Path(__file__).parent / 'child_factory.py'}:make"
TORN_LINE = b'{"type":"turn/start","seq":99,"ti'
DAMAGED_LINE = b'{"type":"user/mes\x00sage" this row was damaged on disk'


def _insert_torn_row(path: Path, session_id: str) -> None:
    """Out of band: a final events row whose line is cut short (what a torn write would be)."""
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        (last,) = connection.execute(
            "SELECT coalesce(max(last_seq), -1) FROM events WHERE session_id = ?", (session_id,)
        ).fetchone()
        connection.execute(
            "INSERT INTO events (session_id, seq, last_seq, type, time, compressed, line, "
            "written_at) VALUES (?, ?, ?, 'turn/start', 0, 0, CAST(? AS TEXT), 0)",
            (session_id, last + 1, last + 1, TORN_LINE),
        )
    finally:
        connection.close()


def damage_row(path: Path, session_id: str, seq: int, line: bytes = DAMAGED_LINE) -> None:
    """Out of band, in place: the row holding event ``seq`` no longer decodes (its line becomes
    text that is not JSON, or ``line``: short, so stored uncompressed as the backend would);
    every other row is left as it is."""
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        cursor = connection.execute(
            "UPDATE events SET compressed = 0, line = CAST(? AS TEXT) "
            "WHERE session_id = ? AND seq <= ? AND last_seq >= ?",
            (line, text_to_column(session_id), seq, seq),
        )
        assert cursor.rowcount == 1, f"no row holds seq {seq} of {session_id!r}"
    finally:
        connection.close()


class TestSqlitePersistenceContract(PersistenceContract):
    """Every clause, once per selected variant (the ``variant`` fixture of conftest.py)."""

    @pytest.fixture
    def persistence_fixture(self, db_path: Path, variant: Any) -> PersistenceFixture:
        async def corrupt_tail(session_id: str) -> None:
            await asyncio.to_thread(_insert_torn_row, db_path, session_id)

        async def damage_event(session_id: str, seq: int) -> None:
            await asyncio.to_thread(damage_row, db_path, session_id, seq)

        async def replace_record(session_id: str, seq: int, record: bytes) -> None:
            await asyncio.to_thread(damage_row, db_path, session_id, seq, record)

        return PersistenceFixture(
            factory=lambda: variant.make(db_path),
            capabilities=frozenset(
                {"reopen", "cross_process", "corrupt_tail", "damage_event", "replace_record"}
            ),
            corrupt_tail=corrupt_tail,
            damage_event=damage_event,
            replace_record=replace_record,
            child_factory=CHILD_FACTORY,
            child_args={"path": str(db_path), **variant.child_args},
        )
