"""Row storage: zstd only for rows of 4 KiB and more and only when smaller; packed chunk rows."""

from __future__ import annotations

import random
import sqlite3
import string
from pathlib import Path
from typing import Any

import pytest

from dsh_persistence_sqlite import SqlitePersistence
from dsh_persistence_sqlite._rows import (
    MAX_PACK_BYTES,
    MAX_PACK_MEMBERS,
    ROW_COMPRESSED,
    ROW_PAYLOAD,
    rows_of_batch,
)
from dsh_session import encode_event, make_event


def _message(seq: int, text: str) -> Any:
    return make_event(
        "user/message",
        seq,
        5000 + seq,
        {"content": [{"type": "text", "text": text}], "source": {"kind": "user"}},
        surface_op="append",
    )


def _rows(path: Path) -> list[tuple[int, int, str, int, str]]:
    raw = sqlite3.connect(path, isolation_level=None)
    try:
        return list(
            raw.execute(
                "SELECT seq, last_seq, type, compressed, typeof(line) FROM events ORDER BY seq"
            )
        )
    finally:
        raw.close()


async def _write_and_read(store: SqlitePersistence, mk: Any, events: list[Any]) -> list[Any]:
    async with await store.create(mk.header("s")) as handle:
        await handle.append(events)
    fresh = SqlitePersistence(store.path)
    try:
        async with await fresh.open("s", "read") as reader:
            return list(await reader.read())
    finally:
        await store.aclose()
        await fresh.aclose()


async def test_a_big_compressible_row_is_stored_compressed_and_reads_back(
    db_path: Path, mk: Any
) -> None:
    events = [_message(0, "tool output line\n" * 2000), _message(1, "small")]
    got = await _write_and_read(SqlitePersistence(db_path, compression=True), mk, events)
    assert [encode_event(e) for e in got] == [encode_event(e) for e in events]
    assert [(r[3], r[4]) for r in _rows(db_path)] == [(1, "blob"), (0, "text")]


async def test_without_compression_a_big_row_stays_text(db_path: Path, mk: Any) -> None:
    events = [_message(0, "tool output line\n" * 2000)]
    got = await _write_and_read(SqlitePersistence(db_path, compression=False), mk, events)
    assert [encode_event(e) for e in got] == [encode_event(e) for e in events]
    assert [(r[3], r[4]) for r in _rows(db_path)] == [(0, "text")]


async def test_a_compressible_row_under_4_kib_stays_text(db_path: Path, mk: Any) -> None:
    events = [_message(0, "x" * 3800)]
    await _write_and_read(SqlitePersistence(db_path, compression=True), mk, events)
    assert [(r[3], r[4]) for r in _rows(db_path)] == [(0, "text")]


def test_a_row_whose_frame_is_not_smaller_stays_raw() -> None:
    class Inflating:
        def compress(self, data: bytes) -> bytes:
            return data + b"\x00"

    rng = random.Random(7)
    text = "".join(rng.choice(string.printable) for _ in range(6000))
    event = _message(0, text)
    (row,) = rows_of_batch(
        "s",
        [event],
        [encode_event(event)],
        first_seq=0,
        written_at=1,
        pack_chunks=False,
        compressor=Inflating(),  # type: ignore[arg-type]
    )
    assert row[ROW_COMPRESSED] == 0
    assert row[ROW_PAYLOAD] == encode_event(event).decode()  # TEXT, bound as str


async def test_random_text_over_4_kib_round_trips_either_way(db_path: Path, mk: Any) -> None:
    rng = random.Random(11)
    text = "".join(chr(rng.randrange(0x20, 0xD7FF)) for _ in range(5000))
    events = [_message(0, text)]
    got = await _write_and_read(SqlitePersistence(db_path, compression=True), mk, events)
    assert [encode_event(e) for e in got] == [encode_event(e) for e in events]


async def test_packed_chunk_rows_round_trip_and_take_one_row(db_path: Path, mk: Any) -> None:
    events = [*mk.one_turn(0)[:3], *mk.text_chunks(3, 10), *mk.one_turn(13)]
    got = await _write_and_read(SqlitePersistence(db_path, pack_chunks=True), mk, events)
    assert [encode_event(e) for e in got] == [encode_event(e) for e in events]
    packed = [r for r in _rows(db_path) if r[1] > r[0]]
    assert packed == [(3, 12, "text-chunks", 0, "text")]


async def test_a_run_of_two_chunks_is_stored_one_row_per_event(db_path: Path, mk: Any) -> None:
    events = mk.text_chunks(0, 2)
    await _write_and_read(SqlitePersistence(db_path, pack_chunks=True), mk, events)
    assert [(r[0], r[1], r[2]) for r in _rows(db_path)] == [
        (0, 0, "assistant/chunk"),
        (1, 1, "assistant/chunk"),
    ]


async def test_a_long_run_is_partitioned_into_bounded_packed_rows(db_path: Path, mk: Any) -> None:
    events = mk.text_chunks(0, 2500)
    got = await _write_and_read(SqlitePersistence(db_path, pack_chunks=True), mk, events)
    assert [encode_event(e) for e in got] == [encode_event(e) for e in events]
    rows = _rows(db_path)
    assert all(r[1] - r[0] + 1 <= MAX_PACK_MEMBERS for r in rows)
    assert sum(r[1] - r[0] + 1 for r in rows) == 2500
    assert len(rows) <= 4


async def test_a_run_of_large_chunks_is_partitioned_by_size(db_path: Path, mk: Any) -> None:
    events = mk.text_chunks(0, 40, text="y" * 100_000)
    got = await _write_and_read(
        SqlitePersistence(db_path, pack_chunks=True, compression=False), mk, events
    )
    assert [encode_event(e) for e in got] == [encode_event(e) for e in events]
    raw = sqlite3.connect(db_path, isolation_level=None)
    sizes = [n for (n,) in raw.execute("SELECT length(CAST(line AS BLOB)) FROM events")]
    raw.close()
    assert max(sizes) <= MAX_PACK_BYTES
    assert len(sizes) > 1


@pytest.mark.parametrize("offset", [0, 3, 4, 7, 12, 13, 14, 19, 20])
async def test_a_read_from_inside_a_packed_row_returns_the_suffix(
    db_path: Path, mk: Any, offset: int
) -> None:
    events = [*mk.one_turn(0)[:3], *mk.text_chunks(3, 10), *mk.one_turn(13)]
    store = SqlitePersistence(db_path, pack_chunks=True)
    async with await store.create(mk.header("s")) as handle:
        await handle.append(events)
        got = await handle.read(offset)
        assert [encode_event(e) for e in got] == [encode_event(e) for e in events[offset:]]
        window = await handle.read(offset, 4)
        assert [e.seq for e in window] == [e.seq for e in events[offset : offset + 4]]
    await store.aclose()
