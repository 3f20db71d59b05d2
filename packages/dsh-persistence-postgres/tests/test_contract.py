"""The seam's contract suite (dsh_persistence.testing) against the real server, every clause,
in a schema of its own per test (dropped afterwards), compressed and plain."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from dsh_persistence.testing import PersistenceContract, PersistenceFixture
from dsh_persistence_postgres import PostgresPersistence
from dsh_persistence_postgres._text import to_column

DSN = os.environ.get("DSH_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")
CHILD_FACTORY = f"{Path(__file__).parent / 'child_factory.py'}:make"
TORN_LINE = '{"type":"turn/start","seq":99,"ti'
DAMAGED_LINE = '{"type":"user/mes sage" this row was damaged on disk'


def insert_torn_row(schema: str, session_id: str) -> None:
    """Out of band: an events row past the commit point whose line is cut short (what a torn
    write would leave, were one possible)."""
    with psycopg.connect(DSN, autocommit=True, connect_timeout=5) as connection:
        connection.execute(
            sql.SQL(
                "INSERT INTO {s}.events (session_id, seq, line) "
                "SELECT id, event_count, %s FROM {s}.sessions WHERE id = %s"
            ).format(s=sql.Identifier(schema)),
            (TORN_LINE, to_column(session_id)),
        )


def damage_row(schema: str, session_id: str, seq: int, line: str = DAMAGED_LINE) -> None:
    """Out of band, in place: the row of event ``seq`` no longer decodes (its line becomes text
    that is not JSON, or ``line``: short, so stored uncompressed as the backend would); every
    other row is left as it is."""
    with psycopg.connect(DSN, autocommit=True, connect_timeout=5) as connection:
        cursor = connection.execute(
            sql.SQL(
                "UPDATE {s}.events SET line = %s, zline = NULL WHERE session_id = %s AND seq = %s"
            ).format(s=sql.Identifier(schema)),
            (line, to_column(session_id), seq),
        )
        assert cursor.rowcount == 1, f"no row holds seq {seq} of {session_id!r}"


@pytest.fixture(params=[True, False], ids=["compressed", "plain"])
def compression(request: pytest.FixtureRequest) -> bool:
    """Each storage setting in turn."""
    return bool(request.param)


class TestPostgresPersistenceContract(PersistenceContract):
    """Every clause, once per storage setting."""

    @pytest.fixture
    def persistence_fixture(self, schema: str, compression: bool, mk: Any) -> Any:
        async def corrupt_tail(session_id: str) -> None:
            await asyncio.to_thread(insert_torn_row, schema, session_id)

        async def damage_event(session_id: str, seq: int) -> None:
            await asyncio.to_thread(damage_row, schema, session_id, seq)

        async def replace_record(session_id: str, seq: int, record: bytes) -> None:
            await asyncio.to_thread(damage_row, schema, session_id, seq, record.decode())

        async def cleanup() -> None:
            await asyncio.to_thread(mk.drop_schema, schema)

        return PersistenceFixture(
            factory=lambda: PostgresPersistence(DSN, schema=schema, compression=compression),
            capabilities=frozenset(
                {"reopen", "cross_process", "corrupt_tail", "damage_event", "replace_record"}
            ),
            corrupt_tail=corrupt_tail,
            damage_event=damage_event,
            replace_record=replace_record,
            child_factory=CHILD_FACTORY,
            child_args=mk.child_args(schema, compression=compression),
            cleanup=cleanup,
        )
