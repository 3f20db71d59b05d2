"""Issue 24 §1.1/§1.5: reserved row names, lone surrogates in every text column, damage in the
middle refused by a write open, reads from any offset however large."""

from __future__ import annotations

import io
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dsh_persistence import (
    SessionPersistenceCorruptionError,
    SessionPersistenceNotFoundError,
    export_session,
)
from dsh_persistence_sqlite import SqlitePersistence
from dsh_session import SessionHeader, encode_event, encode_header_line, make_event

Factory = Callable[..., SqlitePersistence]


def _rows(path: Path, statement: str, *params: Any) -> list[Any]:
    raw = sqlite3.connect(path, isolation_level=None)
    try:
        return list(raw.execute(statement, params))
    finally:
        raw.close()


# -- §1.1 reserved row names -------------------------------------------------------------------


@pytest.mark.parametrize("reserved", ["text-chunks", "reasoning-chunks", "tool-call-chunks"])
async def test_an_event_named_like_a_packed_row_is_refused_and_nothing_is_stored(
    make_store: Factory, mk: Any, db_path: Path, reserved: str
) -> None:
    store = make_store()
    async with await store.create(mk.header("s")) as handle:
        await handle.append(mk.one_turn())
        bad = make_event(reserved, 7, 1, {"turn": 2}, ignorable=True)
        batch = [make_event("turn/start", 6, 1, {"turn": 2}), bad]
        with pytest.raises(ValueError, match="reserved for packed chunk rows"):
            await handle.append(batch)
        assert len(await handle.read()) == 6
    await store.aclose()
    assert _rows(db_path, "SELECT count(*) FROM events") == [(6,)]
    fresh = make_store()
    async with await fresh.open("s", "write") as writer:  # the log is intact and writable
        await writer.append(mk.one_turn(6, 2))
        assert len(await writer.read()) == 12
    await fresh.aclose()


# -- §1.5 a read from any offset ---------------------------------------------------------------


@pytest.mark.parametrize("offset", [2**63 - 1, 2**63, 2**100])
async def test_a_read_from_an_offset_beyond_any_integer_sqlite_holds_is_empty(
    make_store: Factory, mk: Any, offset: int
) -> None:
    store = make_store()
    async with await store.create(mk.header("s")) as handle:
        await handle.append(mk.one_turn())
    async with await store.open("s", "read") as reader:
        assert await reader.read(offset) == []
        assert await reader.read(offset, 5) == []
    await store.aclose()


@pytest.mark.parametrize("length", [2**63 - 1, 2**63, 2**100])
async def test_a_huge_length_means_to_the_end(make_store: Factory, mk: Any, length: int) -> None:
    store = make_store()
    async with await store.create(mk.header("s")) as handle:
        await handle.append(mk.one_turn())
        assert [e.seq for e in await handle.read(2, length)] == [2, 3, 4, 5]
    await store.aclose()


# -- §1.5 lone surrogates ----------------------------------------------------------------------

SURROGATE_HEADER = SessionHeader(
    id="sess",
    created_at=1000,
    cwd="/home/u/\udfff proj",
    parent_session="parent-\udc00",
    agent_preset="preset-\ud83d",
    origin="subagent",
    delegation_depth=1,
).model_copy(update={"id": "sess-\ud800-x"})
"""Every text field with a lone surrogate. ``SessionHeader`` itself refuses one in ``id`` (its
validator wants valid Unicode there, though not in the other fields); a backend still stores
whatever id a header holds, so the id is set past the validator."""


def _surrogate_events() -> list[Any]:
    return [
        make_event("turn/start", 0, 2000, {"turn": 1}),
        make_event("x-vendor/\ud800note", 1, 2001, {"text": "a \udfff b"}, ignorable=True),
        make_event(
            "turn/end", 2, 2002, {"turn": 1, "reason": {"kind": "completed"}, "n": "\ud800"}
        ),
    ]


async def test_a_header_and_event_types_with_lone_surrogates_are_stored_and_read_back_exactly(
    make_store: Factory,
) -> None:
    store = make_store()
    events = _surrogate_events()
    async with await store.create(SURROGATE_HEADER) as handle:
        await handle.append(events)
        await handle.flush()
    await store.aclose()
    fresh = make_store()
    snapshot = await fresh.stat(SURROGATE_HEADER.id)
    assert snapshot is not None
    assert snapshot.header == SURROGATE_HEADER
    assert snapshot.event_count == 3
    (listed,) = await fresh.list()
    assert listed.header == SURROGATE_HEADER
    async with await fresh.open(SURROGATE_HEADER.id, "read") as reader:
        assert [encode_event(e) for e in await reader.read()] == [encode_event(e) for e in events]
    async with await fresh.open(SURROGATE_HEADER.id, "write") as writer:
        assert writer.header == SURROGATE_HEADER
        more = make_event("x-vendor/\udbffmore", 3, 2003, {}, ignorable=True)
        await writer.append([more])
        assert (await writer.read(3))[0].type == "x-vendor/\udbffmore"
    await fresh.aclose()


async def test_a_surrogate_session_exports_the_bytes_a_jsonl_log_holds(
    make_store: Factory,
) -> None:
    store = make_store()
    events = _surrogate_events()
    async with await store.create(SURROGATE_HEADER) as handle:
        await handle.append(events)
    out = io.BytesIO()
    assert await export_session(store, SURROGATE_HEADER.id, out) == 3
    await store.aclose()
    # What the JSONL backend writes: the canonical header line, then each event's line.
    expected = (
        encode_header_line(SURROGATE_HEADER)
        + b"\n"
        + b"".join(encode_event(e) + b"\n" for e in events)
    )
    assert out.getvalue() == expected


async def test_ids_differing_only_in_a_surrogate_or_in_the_escape_are_different_sessions(
    make_store: Factory, mk: Any
) -> None:
    ids = [
        "a\ud800",
        "a\ud801",
        "a",
        '\uffff"a\\ud800"',  # the escaped column text of "a\ud800", as an id of its own
        "\uffffplain",
    ]
    store = make_store()
    for number, session_id in enumerate(ids):
        header = mk.header("x").model_copy(update={"id": session_id})  # past the validator
        async with await store.create(header) as handle:
            await handle.append(mk.one_turn(text=f"text {number}"))
    await store.aclose()
    fresh = make_store()
    assert sorted(s.header.id for s in await fresh.list()) == sorted(ids)
    for number, session_id in enumerate(ids):
        async with await fresh.open(session_id, "read") as reader:
            (message,) = [e for e in await reader.read() if e.type == "assistant/message"]
            assert message.data["content"][0]["text"] == f"text {number}"
    await fresh.aclose()


async def test_a_lookup_of_an_id_with_a_lone_surrogate_is_not_found_not_a_unicode_error(
    make_store: Factory, mk: Any
) -> None:
    store = make_store()
    async with await store.create(mk.header("a")) as handle:
        await handle.append(mk.one_turn())
    assert await store.stat("a\ud800") is None
    with pytest.raises(SessionPersistenceNotFoundError):
        await store.open("a\ud800", "read")
    with pytest.raises(SessionPersistenceNotFoundError):
        await store.open("a\ud800", "write")
    await store.aclose()


async def test_plain_text_columns_stay_readable_with_sql(
    make_store: Factory, mk: Any, db_path: Path
) -> None:
    store = make_store()
    async with await store.create(mk.header("s-ü", cwd="/home/ü")) as handle:
        await handle.append(mk.one_turn())
    await store.aclose()
    assert _rows(db_path, "SELECT id, cwd FROM sessions") == [("s-ü", "/home/ü")]
    assert ("turn/start",) in _rows(db_path, "SELECT DISTINCT type FROM events")


# -- §1.5 damage in the middle -----------------------------------------------------------------


async def test_a_write_open_refuses_a_bad_row_in_the_middle_naming_the_database_and_row(
    make_store: Factory, mk: Any, db_path: Path
) -> None:
    store = make_store()
    async with await store.create(mk.header("s")) as handle:
        await handle.append(mk.one_turn() + mk.one_turn(6, 2))
    await store.aclose()
    _rows(db_path, "UPDATE events SET line = '{broken', compressed = 0 WHERE seq = 3")
    fresh = make_store()
    for _attempt in range(2):
        with pytest.raises(SessionPersistenceCorruptionError) as info:
            await fresh.open("s", "write")
        assert (info.value.artifact, info.value.row) == (str(db_path), 3)
    await fresh.aclose()
    assert _rows(db_path, "SELECT count(*) FROM events") == [(12,)]  # nothing dropped


async def test_a_write_open_refuses_a_gap_in_the_seqs(
    make_store: Factory, mk: Any, db_path: Path
) -> None:
    store = make_store()
    async with await store.create(mk.header("s")) as handle:
        await handle.append(mk.one_turn() + mk.one_turn(6, 2))
    await store.aclose()
    _rows(db_path, "DELETE FROM events WHERE seq = 7")
    fresh = make_store()
    with pytest.raises(SessionPersistenceCorruptionError, match="seq 7") as info:
        await fresh.open("s", "write")
    assert info.value.row == 8
    await fresh.aclose()


async def test_a_write_open_refuses_a_bad_compressed_row_in_the_middle(
    db_path: Path, mk: Any
) -> None:
    store = SqlitePersistence(db_path, compression=True)
    big = mk.one_turn(text="compressible " * 1000)
    async with await store.create(mk.header("s")) as handle:
        await handle.append(big + mk.one_turn(6, 2))
    await store.aclose()
    assert _rows(db_path, "SELECT seq FROM events WHERE compressed = 1") == [(3,)]
    _rows(db_path, "UPDATE events SET line = zeroblob(40) WHERE seq = 3")
    fresh = SqlitePersistence(db_path)
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        await fresh.open("s", "write")
    assert info.value.row == 3
    await fresh.aclose()


async def test_a_write_open_still_drops_only_a_bad_final_row(
    make_store: Factory, mk: Any, db_path: Path
) -> None:
    store = make_store()
    async with await store.create(mk.header("s")) as handle:
        await handle.append(mk.one_turn())
    await store.aclose()
    _rows(db_path, "UPDATE events SET line = '{torn', compressed = 0 WHERE seq = 5")
    fresh = make_store()
    async with await fresh.open("s", "write") as writer:
        await writer.append(mk.one_turn(5, 2)[:1])
        assert [e.seq for e in await writer.read()] == [0, 1, 2, 3, 4, 5]
    await fresh.aclose()
