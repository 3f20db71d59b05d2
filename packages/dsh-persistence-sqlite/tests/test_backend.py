"""Backend behaviour beyond the contract: corruption, stat without bodies, headers, revisions."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dsh_persistence import (
    PersistenceClosedError,
    SessionAlreadyExistsError,
    SessionFormatUnsupportedError,
    SessionOwnershipLostError,
    SessionPersistenceCorruptionError,
    SessionPersistenceNotFoundError,
)
from dsh_persistence_sqlite import SqlitePersistence
from dsh_session import SessionHeader, encode_event, encode_header_line

Factory = Callable[..., SqlitePersistence]


def _execute(path: Path, statement: str, *params: Any) -> list[Any]:
    raw = sqlite3.connect(path, isolation_level=None)
    try:
        return list(raw.execute(statement, params))
    finally:
        raw.close()


async def _stored(make_store: Factory, mk: Any, session_id: str = "s", turns: int = 2) -> None:
    store = make_store()
    async with await store.create(mk.header(session_id)) as handle:
        for turn in range(turns):
            await handle.append(mk.one_turn(6 * turn, turn + 1))
    await store.aclose()


async def test_a_bad_row_before_the_end_is_corruption_naming_the_database_and_row(
    make_store: Factory, mk: Any, db_path: Path
) -> None:
    await _stored(make_store, mk)
    _execute(db_path, "UPDATE events SET line = '{broken', compressed = 0 WHERE seq = 3")
    store = make_store()
    async with await store.open("s", "read") as reader:
        with pytest.raises(SessionPersistenceCorruptionError) as info:
            await reader.read()
        assert await reader.read(4) != []  # rows after the damage still read from an offset
    assert info.value.artifact == str(db_path)
    assert info.value.row == 3
    assert "seq 3" in str(info.value)
    await store.aclose()


async def test_a_missing_row_is_corruption(make_store: Factory, mk: Any, db_path: Path) -> None:
    await _stored(make_store, mk)
    _execute(db_path, "DELETE FROM events WHERE seq = 2")
    store = make_store()
    async with await store.open("s", "read") as reader:
        with pytest.raises(SessionPersistenceCorruptionError, match="expected a row for seq 2"):
            await reader.read()
    await store.aclose()


async def test_a_row_holding_another_seq_is_corruption(
    make_store: Factory, mk: Any, db_path: Path
) -> None:
    await _stored(make_store, mk)
    line = encode_event(mk.one_turn(0)[0]).decode()
    _execute(db_path, "UPDATE events SET line = ?, compressed = 0 WHERE seq = 4", line)
    store = make_store()
    async with await store.open("s", "read") as reader:
        with pytest.raises(SessionPersistenceCorruptionError, match="seq 4"):
            await reader.read()
    await store.aclose()


async def test_stat_and_list_do_not_read_the_log_body(
    make_store: Factory, mk: Any, db_path: Path
) -> None:
    await _stored(make_store, mk)
    _execute(db_path, "UPDATE events SET line = 'not json' WHERE seq BETWEEN 0 AND 10")
    store = make_store()
    snapshot = await store.stat("s")
    assert snapshot is not None
    assert snapshot.event_count == 12
    (listed,) = await store.list()
    assert listed.event_count == 12
    assert listed.revision == snapshot.revision
    await store.aclose()


async def test_event_count_comes_from_the_last_packed_row(db_path: Path, mk: Any) -> None:
    store = SqlitePersistence(db_path, pack_chunks=True)
    async with await store.create(mk.header("s")) as handle:
        await handle.append([*mk.one_turn(0)[:3], *mk.text_chunks(3, 10)])
    snapshot = await store.stat("s")
    assert snapshot is not None
    assert snapshot.event_count == 13
    await store.aclose()


async def test_every_header_field_round_trips(make_store: Factory) -> None:
    header = SessionHeader(
        id="child",
        created_at=1_760_000_000_000,
        cwd="/home/u/p",
        parent_session="parent",
        origin="subagent",
        delegation_depth=0,
        agent_preset="ephemeral",
        is_seeded=True,
    )
    store = make_store()
    async with await store.create(header, inherited_event_count=4) as handle:
        await handle.flush()
    fresh = make_store()
    snapshot = await fresh.stat("child")
    assert snapshot is not None
    assert snapshot.header == header
    assert encode_header_line(snapshot.header, 4) == encode_header_line(header, 4)
    async with await fresh.open("child", "read") as reader:
        assert reader.inherited_event_count == 4
    bare = SessionHeader(id="bare", created_at=1)
    async with await fresh.create(bare) as handle:
        await handle.flush()
    again = await fresh.stat("bare")
    assert again is not None
    assert again.header == bare
    assert again.header.delegation_depth is None
    await store.aclose()
    await fresh.aclose()


async def test_a_foreign_format_version_is_unsupported_not_corrupt(
    make_store: Factory, mk: Any, db_path: Path
) -> None:
    await _stored(make_store, mk)
    _execute(db_path, "UPDATE sessions SET version = 7")
    store = make_store()
    with pytest.raises(SessionFormatUnsupportedError, match="upgrade"):
        await store.open("s", "read")
    with pytest.raises(SessionFormatUnsupportedError, match="newer"):
        await store.stat("s")
    assert await store.list() == []
    await store.aclose()


async def test_snapshot_metadata_tracks_appends(make_store: Factory, mk: Any) -> None:
    store = make_store()
    handle = await store.create(mk.header("s"))
    await handle.append(mk.one_turn())
    first = await store.stat("s")
    await handle.append(mk.one_turn(6, 2))
    second = await store.stat("s")
    await handle.close()
    assert first is not None
    assert second is not None
    assert first.revision != second.revision
    assert (first.event_count, second.event_count) == (6, 12)
    assert first.size_bytes is None  # no per-session artifact
    assert second.updated_at is not None
    assert second.updated_at >= (first.updated_at or 0)
    assert second.plain_path is None
    await store.aclose()


async def test_revisions_differ_for_a_recreated_session(
    make_store: Factory, mk: Any, db_path: Path
) -> None:
    await _stored(make_store, mk, turns=1)
    store = make_store()
    before = await store.stat("s")
    raw = sqlite3.connect(db_path, isolation_level=None)
    raw.execute("PRAGMA foreign_keys = ON")
    raw.execute("DELETE FROM sessions WHERE id = 's'")
    raw.close()
    async with await store.create(mk.header("s")) as handle:
        await handle.append(mk.one_turn())
    after = await store.stat("s")
    assert before is not None
    assert after is not None
    assert before.revision != after.revision
    await store.aclose()


async def test_deleting_a_session_row_cascades_to_its_events(
    make_store: Factory, mk: Any, db_path: Path
) -> None:
    await _stored(make_store, mk)
    raw = sqlite3.connect(db_path, isolation_level=None)
    raw.execute("PRAGMA foreign_keys = ON")
    raw.execute("DELETE FROM sessions WHERE id = 's'")
    (count,) = raw.execute("SELECT count(*) FROM events").fetchone()
    raw.close()
    assert count == 0


async def test_two_instances_write_different_sessions_at_once(make_store: Factory, mk: Any) -> None:
    first, second = make_store(), make_store()

    async def write(store: SqlitePersistence, session_id: str) -> None:
        async with await store.create(mk.header(session_id)) as handle:
            for turn in range(20):
                await handle.append(mk.one_turn(6 * turn, turn + 1))

    await asyncio.gather(write(first, "a"), write(second, "b"))
    for session_id in ("a", "b"):
        snapshot = await first.stat(session_id)
        assert snapshot is not None
        assert snapshot.event_count == 120
    await first.aclose()
    await second.aclose()


async def test_create_in_a_fresh_instance_while_another_creates_is_refused(
    make_store: Factory, mk: Any
) -> None:
    first, second = make_store(), make_store()
    pending = await first.create(mk.header("racing"))
    with pytest.raises(SessionAlreadyExistsError):
        await second.create(mk.header("racing"))
    await pending.close()
    async with await second.create(mk.header("racing")) as handle:
        await handle.append(mk.one_turn())
    await first.aclose()
    await second.aclose()


async def test_a_torn_final_row_is_dropped_by_the_next_append(
    make_store: Factory, mk: Any, db_path: Path
) -> None:
    await _stored(make_store, mk, turns=1)
    _execute(
        db_path,
        "INSERT INTO events VALUES ('s', 6, 6, 'turn/start', 0, 0, '{\"type\":\"tu', 0)",
    )
    store = make_store()
    before = await store.stat("s")
    async with await store.open("s", "write") as writer:
        assert len(await writer.read()) == 6
        await writer.append(mk.one_turn(6, 2))
    after = await store.stat("s")
    assert before is not None
    assert after is not None
    assert before.revision != after.revision
    rows = _execute(db_path, "SELECT seq, type FROM events WHERE seq = 6")
    assert rows == [(6, "turn/start")]
    async with await store.open("s", "read") as reader:
        assert [e.seq for e in await reader.read()] == list(range(12))
    await store.aclose()


async def test_operations_after_aclose_raise(make_store: Factory, mk: Any) -> None:
    store = make_store()
    await store.aclose()
    await store.aclose()
    with pytest.raises(PersistenceClosedError, match="cannot list: SqlitePersistence"):
        await store.list()


async def test_an_append_cancelled_before_it_starts_stores_nothing(
    make_store: Factory, mk: Any
) -> None:
    store = make_store()
    async with await store.create(mk.header("s")) as handle:
        await handle.append(mk.one_turn())
        gate = threading.Event()
        busy = store._submit(gate.wait)  # the database thread is busy until the gate opens
        cancelled = asyncio.ensure_future(handle.append(mk.one_turn(6, 2)))
        await asyncio.sleep(0)
        cancelled.cancel()
        gate.set()
        await busy
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        assert [e.seq for e in await handle.read()] == list(range(6))
        await handle.append(mk.one_turn(6, 2))
        assert [e.seq for e in await handle.read()] == list(range(12))
    await store.aclose()


async def test_stored_lines_are_json_text_that_sql_can_query(
    make_store: Factory, mk: Any, db_path: Path
) -> None:
    await _stored(make_store, mk, turns=1)
    rows = _execute(
        db_path,
        "SELECT seq, json_extract(line, '$.type'), type FROM events WHERE compressed = 0 "
        "ORDER BY seq",
    )
    assert [(seq, kind) for seq, kind, _ in rows] == [(e.seq, e.type) for e in mk.one_turn()]
    assert all(kind == column for _, kind, column in rows)


async def test_rows_written_behind_the_writers_back_lose_ownership(
    make_store: Factory, mk: Any, db_path: Path
) -> None:
    await _stored(make_store, mk, turns=1)
    store = make_store()
    async with await store.open("s", "write") as writer:
        line = encode_event(mk.one_turn(6, 2)[0]).decode()
        _execute(
            db_path,
            "INSERT INTO events VALUES ('s', 6, 6, 'turn/start', 0, 0, ?, 0)",
            line,
        )
        with pytest.raises(SessionOwnershipLostError, match="seq 6"):
            await writer.append(mk.one_turn(6, 2))
    await store.aclose()


async def test_appending_to_a_session_deleted_behind_the_writer_is_not_found(
    make_store: Factory, mk: Any, db_path: Path
) -> None:
    await _stored(make_store, mk, turns=1)
    store = make_store()
    async with await store.open("s", "write") as writer:
        raw = sqlite3.connect(db_path, isolation_level=None)
        raw.execute("PRAGMA foreign_keys = ON")
        raw.execute("DELETE FROM sessions WHERE id = 's'")
        raw.close()
        with pytest.raises(SessionPersistenceNotFoundError):
            await writer.append(mk.one_turn(6, 2))
        with pytest.raises(SessionPersistenceNotFoundError):
            await writer.read()
    await store.aclose()


async def test_a_read_handle_never_serves_a_shorter_log_than_before(
    make_store: Factory, mk: Any, db_path: Path
) -> None:
    await _stored(make_store, mk)
    store = make_store()
    async with await store.open("s", "read") as reader:
        assert len(await reader.read()) == 12
        _execute(db_path, "DELETE FROM events WHERE seq >= 10")
        with pytest.raises(SessionPersistenceCorruptionError, match="shrank"):
            await reader.read()
        with pytest.raises(SessionPersistenceCorruptionError, match="shrank"):
            await reader.read(8)
        assert len(await reader.read(0, 5)) == 5  # a window it can still serve whole
    async with await store.open("s", "read") as fresh:
        assert len(await fresh.read()) == 10  # a new handle has no earlier view to honour
    await store.aclose()
