"""The backend's own promises beyond the contract: schema versioning, the DSN shown without its
password, a server that is away, losing the lock connection, snapshots from the sessions row."""

from __future__ import annotations

import asyncio
import io
import os
import time
from typing import Any

import pytest
from psycopg import sql

from dsh_persistence import (
    SessionAlreadyOwnedError,
    SessionFormatUnsupportedError,
    SessionOwnershipLostError,
    SessionStorageError,
    export_session,
)
from dsh_persistence_postgres import SCHEMA_VERSION, PostgresPersistence, PostgresUnavailableError
from dsh_persistence_postgres._dsn import Target
from dsh_persistence_postgres._lock import store_tag


def _exec(mk: Any, schema: str, statement: str, *params: Any) -> list[tuple[Any, ...]]:
    with mk.admin() as connection:
        cursor = connection.execute(
            sql.SQL(statement).format(s=sql.Identifier(schema)), params or None
        )
        return cursor.fetchall() if cursor.description else []


async def test_the_schema_is_created_with_its_version_row(make_store: Any, mk: Any, schema: str):
    store = make_store()
    assert await store.list() == []
    await store.aclose()
    rows = _exec(mk, schema, "SELECT schema_version, length(store_id) FROM {s}.store_info")
    assert rows == [(SCHEMA_VERSION, 32)]
    tables = _exec(
        mk,
        schema,
        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s "
        "ORDER BY table_name",
        schema,
    )
    assert [t for (t,) in tables] == ["events", "session_locks", "sessions", "store_info"]


async def test_a_newer_schema_version_is_refused_as_upgrade(make_store: Any, mk: Any, schema: str):
    store = make_store()
    await store.list()
    await store.aclose()
    _exec(mk, schema, "UPDATE {s}.store_info SET schema_version = %s", SCHEMA_VERSION + 1)
    again = make_store()
    with pytest.raises(SessionFormatUnsupportedError, match="upgrade") as caught:
        await again.list()
    assert caught.value.version == SCHEMA_VERSION + 1
    assert schema in str(caught.value)
    await again.aclose()


async def test_an_unknown_schema_version_and_a_foreign_schema_are_refused(
    make_store: Any, mk: Any, schema: str
):
    store = make_store()
    await store.list()
    await store.aclose()
    _exec(mk, schema, "UPDATE {s}.store_info SET schema_version = 0")
    with pytest.raises(SessionFormatUnsupportedError, match="not one this build knows"):
        await make_store().list()
    _exec(mk, schema, "DROP TABLE {s}.store_info")
    with pytest.raises(SessionFormatUnsupportedError, match="not a dsh session store"):
        await make_store().list()


async def test_concurrent_instances_set_up_one_schema_once(make_store: Any, mk: Any, schema: str):
    stores = [make_store() for _ in range(4)]
    results = await asyncio.gather(*(s.list() for s in stores))
    assert results == [[]] * 4
    for store in stores:
        await store.aclose()
    assert len(_exec(mk, schema, "SELECT * FROM {s}.store_info")) == 1


def test_the_password_is_masked_everywhere() -> None:
    store = PostgresPersistence("postgresql://alice:s3cret-pw@db.example:6543/app", schema="x")
    assert "s3cret-pw" not in repr(store)
    assert store.dsn == "postgresql://alice:***@db.example:6543/app"
    target = Target.parse("host=h port=1 user=u password=hunter2 dbname=d")
    assert "hunter2" not in repr(target)
    assert "hunter2" not in target.display
    assert target.scrub("auth failed for hunter2") == "auth failed for ***"
    with pytest.raises(ValueError, match="not a PostgreSQL connection string") as caught:
        Target.parse("postgresql://u:topsecret@h:5432/d?no_such_option=1")
    assert "topsecret" not in str(caught.value)


async def test_a_server_that_is_away_is_a_typed_error_naming_host_and_port_at_once() -> None:
    store = PostgresPersistence("postgresql://bob:pw-never-shown@127.0.0.1:1/nothing")
    started = time.monotonic()
    with pytest.raises(PostgresUnavailableError) as caught:
        await store.list()
    assert time.monotonic() - started < 10  # refused at once (well inside connect_timeout)
    message = str(caught.value)
    assert "127.0.0.1:1" in message
    assert "pw-never-shown" not in message
    assert "pw-never-shown" not in repr(caught.value)
    assert isinstance(caught.value, SessionStorageError)
    assert caught.value.artifact == "postgresql://bob:***@127.0.0.1:1/nothing"
    await store.aclose()


def _end_idle_pooled_connections(mk: Any) -> int:
    """End this process's idle pooled connections from another connection, as a server restart,
    a failover or an idle timeout would; how many were ended."""
    with mk.admin() as connection:
        rows = connection.execute(
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity "
            "WHERE application_name LIKE %s AND state = 'idle' AND pid <> pg_backend_pid()",
            (f"dsh-pool pid={os.getpid()} %",),
        ).fetchall()
    assert all(terminated for (terminated,) in rows)
    return len(rows)


async def test_pooled_connections_the_server_ended_while_idle_are_replaced(
    make_store: Any, mk: Any
) -> None:
    store = make_store()
    async with await store.create(mk.header("idle")) as writer:
        await writer.append(mk.one_turn())
    held = await store.create(mk.header("held"))  # its lock connection is not pooled
    await held.append(mk.one_turn())
    reader = await store.open("idle", "read")

    async def read_fresh() -> int:
        async with await store.open("idle", "read") as fresh:
            return len(await fresh.read())

    async def create_one() -> str:
        async with await store.create(mk.header("created-after")) as created:
            await created.flush()
            return created.id

    async def open_write() -> int:
        async with await store.open("idle", "write") as writer:
            await writer.append(mk.one_turn(6))
            return len(await writer.read())

    async def stat() -> int | None:
        snapshot = await store.stat("idle")
        assert snapshot is not None
        return snapshot.event_count

    async def list_ids() -> list[str]:
        return sorted(s.header.id for s in await store.list())

    async def append_held() -> int:
        await held.append(mk.one_turn(6))
        await held.flush()
        return len(await held.read())

    async def read_open_handle() -> int:
        return len(await reader.read())

    steps = [
        (stat, 6),
        (list_ids, ["held", "idle"]),
        (read_fresh, 6),
        (read_open_handle, 6),
        (create_one, "created-after"),
        (open_write, 12),
        (append_held, 12),
        (list_ids, ["created-after", "held", "idle"]),
    ]
    for step, expected in steps:
        assert _end_idle_pooled_connections(mk) >= 1, step.__name__
        assert await step() == expected, step.__name__
    await reader.close()
    await held.close()
    await store.aclose()


async def test_an_unreachable_server_is_an_error_naming_the_session_of_the_call(mk: Any) -> None:
    store = PostgresPersistence("postgresql://bob@127.0.0.1:1/nothing")
    calls = {
        "create": lambda: store.create(mk.header("s-away")),
        "open": lambda: store.open("s-away", "read"),
        "stat": lambda: store.stat("s-away"),
    }
    for operation, call in calls.items():
        with pytest.raises(PostgresUnavailableError) as caught:
            await call()
        assert caught.value.session_id == "s-away", operation
        assert f"cannot {operation} session 's-away'" in str(caught.value)
    with pytest.raises(PostgresUnavailableError) as caught:
        await store.open("s-away", "write")
    assert caught.value.session_id == "s-away"
    with pytest.raises(PostgresUnavailableError) as caught:
        await store.list()
    assert str(caught.value).startswith("cannot list (postgresql://bob@127.0.0.1:1/nothing): ")
    await store.aclose()


async def test_losing_the_lock_connection_loses_ownership_and_frees_the_session(
    make_store: Any, mk: Any
) -> None:
    store = make_store()
    handle = await store.create(mk.header("cut"))
    await handle.append(mk.one_turn())
    await handle.flush()
    pid = handle.lock_backend_pid
    assert isinstance(pid, int)
    with mk.admin() as connection:
        (terminated,) = connection.execute(
            "SELECT pg_terminate_backend(%s, 5000)", (pid,)
        ).fetchone()
    assert terminated is True
    with pytest.raises(SessionOwnershipLostError, match="lost"):
        await handle.append(mk.one_turn(6))
    with pytest.raises(SessionOwnershipLostError):
        await handle.flush()
    with pytest.raises(SessionOwnershipLostError):
        await handle.append(mk.one_turn(6))
    assert [e.seq for e in await handle.read()] == list(range(6))  # reads still work
    other = make_store()
    async with await other.open("cut", "write") as writer:  # the server freed the lock
        await writer.append(mk.one_turn(6))
    await handle.close()
    await store.aclose()
    async with await other.open("cut", "read") as reader:
        assert [e.seq for e in await reader.read()] == list(range(12))
    await other.aclose()


async def test_flush_alone_notices_a_lost_lock_connection(make_store: Any, mk: Any) -> None:
    store = make_store()
    handle = await store.create(mk.header("cut-flush"))
    await handle.flush()
    with mk.admin() as connection:
        connection.execute("SELECT pg_terminate_backend(%s, 5000)", (handle.lock_backend_pid,))
    with pytest.raises(SessionOwnershipLostError):
        await handle.flush()
    await store.aclose()


async def test_a_second_writer_elsewhere_is_refused_naming_the_holder(
    make_store: Any, mk: Any
) -> None:
    first, second = make_store(), make_store(lock_grace_s=0)
    async with await first.create(mk.header("held")) as writer:
        await writer.flush()
        started = time.monotonic()
        with pytest.raises(SessionAlreadyOwnedError) as caught:
            await second.open("held", "write")
        assert time.monotonic() - started < 5
        assert caught.value.holder is not None
        assert "dsh-writer" in caught.value.holder
    async with await second.open("held", "write"):
        pass
    await first.aclose()
    await second.aclose()


async def test_snapshots_come_from_the_sessions_row_and_size_is_the_export_size(
    make_store: Any, mk: Any, schema: str
) -> None:
    store = make_store()
    big = mk.user(6, "y" * 20_000)  # compressed on disk; size counts the plain line
    async with await store.create(mk.header("sized")) as writer:
        await writer.append(mk.one_turn())
        await writer.append([big])
    snapshot = await store.stat("sized")
    assert snapshot is not None
    assert snapshot.event_count == 7
    out = io.BytesIO()
    assert await export_session(store, "sized", out) == 7
    assert snapshot.size_bytes == len(out.getvalue())
    rows = _exec(mk, schema, "SELECT zline IS NOT NULL FROM {s}.events WHERE seq = 6")
    assert rows == [(True,)]
    # the snapshot is the row: change the row out of band and stat follows without a scan
    _exec(mk, schema, "UPDATE {s}.sessions SET size_bytes = 12345")
    again = await store.stat("sized")
    assert again is not None
    assert again.size_bytes == 12345
    await store.aclose()


async def test_the_stored_line_is_the_canonical_text(make_store: Any, mk: Any, schema: str):
    from dsh_session import encode_event

    store = make_store(compression=False)
    events = mk.one_turn(text="é 中 🎉 \udfff \x00")
    async with await store.create(mk.header("text")) as writer:
        await writer.append(events)
    rows = _exec(mk, schema, "SELECT line FROM {s}.events ORDER BY seq")
    assert [line.encode() for (line,) in rows] == [encode_event(e) for e in events]
    await store.aclose()


async def test_ids_with_lone_surrogates_are_distinct_sessions(make_store: Any, mk: Any):
    store = make_store()
    ids = ["a\ud800b", "a\udc00b", "\uffffa", "plain"]
    for session_id in ids:
        async with await store.create(mk.header(session_id)) as writer:
            await writer.append(mk.one_turn())
    assert sorted(s.id for s in await store.list()) == sorted(ids)
    for session_id in ids:
        async with await store.open(session_id, "read") as reader:
            assert reader.header.id == session_id
            assert len(await reader.read()) == 6
    await store.aclose()


async def test_schemas_are_separate_stores_with_separate_lock_keys(mk: Any, schema: str) -> None:
    other = schema + "_b"
    try:
        a = PostgresPersistence(mk.dsn, schema=schema)
        b = PostgresPersistence(mk.dsn, schema=other)
        assert store_tag(schema) != store_tag(other)
        async with await a.create(mk.header("same-id")) as wa:
            await wa.flush()
            async with await b.create(mk.header("same-id")) as wb:  # no shared lock
                await wb.append(mk.one_turn())
        assert (await a.stat("same-id")).event_count == 0  # type: ignore[union-attr]
        assert (await b.stat("same-id")).event_count == 6  # type: ignore[union-attr]
        await a.aclose()
        await b.aclose()
    finally:
        mk.drop_schema(other)


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        PostgresPersistence("")
    with pytest.raises(ValueError, match="non-empty str"):
        PostgresPersistence("postgresql://h/d", schema="")
    with pytest.raises(ValueError, match="at most 63 bytes"):
        PostgresPersistence("postgresql://h/d", schema="x" * 64)
    with pytest.raises(ValueError, match="reserved"):
        PostgresPersistence("postgresql://h/d", schema="pg_catalog")
    with pytest.raises(TypeError):
        PostgresPersistence("postgresql://h/d", compression="yes")  # type: ignore[arg-type]
