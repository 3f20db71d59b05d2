"""Stored rows changed out of band, the commit point, pool limits, a schema name that needs
quoting."""

from __future__ import annotations

import asyncio
import os
import uuid
from typing import Any

import pytest
from psycopg import sql

from dsh_persistence import SessionOwnershipLostError, SessionPersistenceCorruptionError
from dsh_persistence_postgres import PostgresPersistence
from dsh_persistence_postgres._connect import POOL_MAX_SIZE


def _exec(mk: Any, schema: str, statement: str, *params: Any) -> list[tuple[Any, ...]]:
    with mk.admin() as connection:
        cursor = connection.execute(
            sql.SQL(statement).format(s=sql.Identifier(schema)), params or None
        )
        return cursor.fetchall() if cursor.description else []


async def _stored(make_store: Any, mk: Any, session_id: str, **kwargs: Any) -> None:
    store = make_store(**kwargs)
    async with await store.create(mk.header(session_id)) as writer:
        await writer.append(mk.one_turn())
        await writer.append([mk.user(6, "z" * 9000)])  # compressed when compression is on
    await store.aclose()


async def test_a_write_past_the_lock_is_refused_and_stores_nothing(
    make_store: Any, mk: Any, schema: str
) -> None:
    store = make_store()
    async with await store.create(mk.header("moved")) as writer:
        await writer.append(mk.one_turn())
        _exec(mk, schema, "UPDATE {s}.sessions SET event_count = 4")  # out of band
        with pytest.raises(SessionOwnershipLostError, match="holds 4 events"):
            await writer.append(mk.one_turn(6))
    assert _exec(mk, schema, "SELECT count(*) FROM {s}.events") == [(6,)]
    await store.aclose()


async def test_rows_past_the_commit_point_are_never_served_and_the_next_writer_drops_them(
    make_store: Any, mk: Any, schema: str
) -> None:
    await _stored(make_store, mk, "past")
    _exec(
        mk,
        schema,
        "INSERT INTO {s}.events (session_id, seq, line) VALUES ('past', 7, %s)",
        '{"type":"turn/start","seq":7,"time":1,"data":{"turn":9}}',
    )
    store = make_store()
    async with await store.open("past", "read") as reader:
        assert len(await reader.read()) == 7
    async with await store.open("past", "write") as writer:
        await writer.append(mk.one_turn(7))
    async with await store.open("past", "read") as reader:
        events = await reader.read()
    assert [e.seq for e in events] == list(range(13))
    assert events[7].to_wire()["data"] == {"turn": 1}
    await store.aclose()


@pytest.mark.parametrize("seq", [3, 6])
async def test_a_damaged_row_plain_or_compressed_is_corruption_naming_the_row(
    make_store: Any, mk: Any, schema: str, seq: int
) -> None:
    await _stored(make_store, mk, "bad")
    if seq == 6:  # the compressed row: a frame that does not decompress
        rows = _exec(mk, schema, "SELECT zline IS NOT NULL FROM {s}.events WHERE seq = 6")
        assert rows == [(True,)]
        _exec(mk, schema, "UPDATE {s}.events SET zline = '\\x28b52ffd00'::bytea WHERE seq = 6")
    else:
        _exec(mk, schema, "UPDATE {s}.events SET line = 'not json' WHERE seq = 3")
    store = make_store()
    for opening in ("read", "write"):
        with pytest.raises(SessionPersistenceCorruptionError) as caught:
            async with await store.open("bad", opening) as handle:  # type: ignore[arg-type]
                await handle.read()
        assert caught.value.row == seq
        assert schema in (caught.value.artifact or "")
    await store.aclose()


async def test_a_missing_row_is_corruption_not_a_shorter_log(
    make_store: Any, mk: Any, schema: str
) -> None:
    await _stored(make_store, mk, "gap")
    _exec(mk, schema, "DELETE FROM {s}.events WHERE seq = 2")
    store = make_store()
    async with await store.open("gap", "read") as reader:
        with pytest.raises(SessionPersistenceCorruptionError, match="no row for seq 2"):
            await reader.read()
        assert len(await reader.read(0, 2)) == 2
        assert [e.seq for e in await reader.read(3)] == [3, 4, 5, 6]
    with pytest.raises(SessionPersistenceCorruptionError):
        await store.open("gap", "write")
    await store.aclose()


async def test_many_concurrent_reads_stay_within_the_pool(make_store: Any, mk: Any) -> None:
    await _stored(make_store, mk, "busy")
    store = make_store()
    readers = [await store.open("busy", "read") for _ in range(40)]
    results = await asyncio.gather(*(r.read() for _ in range(3) for r in readers))
    assert all(len(events) == 7 for events in results)
    with mk.admin() as connection:
        (count,) = connection.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
            (f"dsh-pool pid={os.getpid()} host={os.uname().nodename}"[:63],),
        ).fetchone()
    assert 1 <= count <= POOL_MAX_SIZE
    await store.aclose()


async def test_a_schema_name_that_needs_quoting_works(mk: Any) -> None:
    schema = f'dsh test "{uuid.uuid4().hex[:8]}"; drop'
    try:
        store = PostgresPersistence(mk.dsn, schema=schema)
        async with await store.create(mk.header("quoted")) as writer:
            await writer.append(mk.one_turn())
        assert [s.event_count for s in await store.list()] == [6]
        await store.aclose()
    finally:
        mk.drop_schema(schema)


async def test_a_cancelled_append_still_ends_and_the_next_one_continues_after_it(
    make_store: Any, mk: Any
) -> None:
    store = make_store()
    async with await store.create(mk.header("cancelled")) as writer:
        await writer.append(mk.one_turn())
        task = asyncio.create_task(writer.append(mk.one_turn(6)))
        await asyncio.sleep(0)  # the append is now waiting on its (shielded) commit
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await writer.append(mk.one_turn(12))  # waits for the cancelled one's commit first
        assert [e.seq for e in await writer.read()] == list(range(18))
    await store.aclose()
