"""What a read returns belongs to the caller: changing it (nested data, a packed chunk's text)
changes nothing a later read of the same handle serves, whole or by overlapping ranges, on write
and read handles, plain and zstd, packed or not. A handle hands a cached event out once and
decodes any event asked for again from its stored row (``_rows.StoredRows``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import zstandard

from dsh_persistence_jsonl import JsonlPersistence
from dsh_persistence_jsonl._rows import StoredRows
from dsh_session import SessionEvent, encode_event, encode_rows, make_event

Factory = Callable[[], JsonlPersistence]


def wire(events: Sequence[SessionEvent]) -> list[bytes]:
    return [encode_event(e) for e in events]


def nested(seq: int) -> SessionEvent:
    return make_event(
        "turn/start", seq, 4000 + seq, {"turn": 9, "extra": {"list": [1, {"deep": "x"}]}}
    )


def scribble(events: Sequence[SessionEvent]) -> None:
    """Change every event's nested data in place (a chunk's text too)."""

    def change(value: object) -> None:
        if isinstance(value, dict):
            for item in list(value.values()):
                change(item)
            if "text" in value:
                value["text"] = "changed"
            value["scribbled"] = True
        elif isinstance(value, list):
            for item in value:
                change(item)
            value.append("scribbled")

    for event in events:
        change(event.data)


def the_log(mk: Any, start: int = 0) -> list[SessionEvent]:
    """A turn, a packable chunk run, an event with deep nesting, another chunk run."""
    return [
        *mk.one_turn(start),
        *mk.text_chunks(start + 6, 5),
        nested(start + 11),
        *mk.text_chunks(start + 12, 4),
    ]


async def check_rereads(handle: Any, log: list[SessionEvent]) -> None:
    """Read everything, scribble over it, then read again whole and by overlapping ranges."""
    first = await handle.read()
    assert wire(first) == wire(log)
    scribble(first)
    again = await handle.read()
    assert wire(again) == wire(log)
    assert all(a is not b for a, b in zip(first, again, strict=True))
    scribble(again)
    for offset, length in ((0, 3), (2, 7), (5, None), (9, 4), (len(log) - 1, 5)):
        part = await handle.read(offset, length)
        stop = None if length is None else offset + length
        assert wire(part) == wire(log[offset:stop]), (offset, length)
        scribble(part)
    assert wire(await handle.read()) == wire(log)


async def test_a_write_handle_rereads_the_originals(make_store: Factory, mk: Any) -> None:
    store = make_store()
    log = the_log(mk)
    async with await store.create(mk.header()) as writer:
        await writer.append(log[:11])
        await writer.append(log[11:])
        await check_rereads(writer, log)
        more = the_log(mk, len(log))
        await writer.append(more)
        await check_rereads(writer, log + more)
    await store.aclose()


async def test_a_first_partial_read_then_a_whole_one(make_store: Factory, mk: Any) -> None:
    store = make_store()
    log = the_log(mk)
    async with await store.create(mk.header()) as writer:
        await writer.append(log)
        part = await writer.read(4, 6)
        assert wire(part) == wire(log[4:10])
        scribble(part)
        whole = await writer.read()
        assert wire(whole) == wire(log)
        assert not any(a is b for a in part for b in whole)
    await store.aclose()


async def test_a_write_handle_over_a_stored_log_rereads_the_originals(
    make_store: Factory, mk: Any
) -> None:
    log = the_log(mk)
    store = make_store()
    async with await store.create(mk.header()) as writer:
        await writer.append(log)
    await store.aclose()
    store = make_store()
    async with await store.open("s-1", "write") as writer:
        await check_rereads(writer, log)
        more = the_log(mk, len(log))
        await writer.append(more)
        await check_rereads(writer, log + more)
    await store.aclose()


async def test_a_read_handle_rereads_the_originals_and_new_events(
    make_store: Factory, mk: Any
) -> None:
    log = the_log(mk)
    store = make_store()
    async with await store.create(mk.header()) as writer:
        await writer.append(log)
        async with await make_store().open("s-1", "read") as reader:
            await check_rereads(reader, log)
            more = the_log(mk, len(log))
            await writer.append(more)
            await writer.flush()
            await check_rereads(reader, log + more)
    await store.aclose()


async def test_concurrent_reads_of_a_read_handle_apply_new_bytes_once(
    make_store: Factory, mk: Any
) -> None:
    # both reads found the same new bytes; each used to append them (events served twice)
    log = the_log(mk)
    store = make_store()
    async with await store.create(mk.header()) as writer:
        await writer.append(log[:6])
        await writer.flush()
        async with await make_store().open("s-1", "read") as reader:
            await writer.append(log[6:])
            await writer.flush()
            first, second = await asyncio.gather(reader.read(), reader.read())
            assert wire(first) == wire(second) == wire(log)
            assert wire(await reader.read()) == wire(log)
    await store.aclose()


async def test_a_read_handle_opened_while_pending_rereads_the_originals(
    make_store: Factory, mk: Any
) -> None:
    log = the_log(mk)
    store = make_store()
    async with (
        await store.create(mk.header()) as writer,
        await store.open("s-1", "read") as reader,
    ):
        assert await reader.read() == []
        await writer.append(log)
        await check_rereads(reader, log)
    await store.aclose()


async def test_a_torn_tail_is_cut_with_no_row_kept(make_store: Factory, mk: Any) -> None:
    log = the_log(mk)
    store = make_store()
    async with await store.create(mk.header()) as writer:
        await writer.append(log)
    await store.aclose()
    path = store.log_path(mk.header())
    torn = encode_event(nested(len(log)))
    with path.open("ab") as f:
        if store.compression == "none":
            f.write(torn[:-3])
        else:
            whole = zstandard.ZstdCompressor(write_checksum=True).compress(torn + b"\n")
            f.write(whole[: len(whole) // 2])
    store = make_store()
    async with await store.open("s-1", "read") as reader:
        await check_rereads(reader, log)
    async with await store.open("s-1", "write") as writer:
        await check_rereads(writer, log)
        more = the_log(mk, len(log))
        await writer.append(more)
        await check_rereads(writer, log + more)
    await store.aclose()


async def test_a_cold_read_hands_out_every_event_exactly(root: Path, mk: Any) -> None:
    log = [event for turn in range(40) for event in the_log(mk, 16 * turn)]
    for compression in ("none", "zstd"):
        for pack in (False, True):
            where = root / f"{compression}{pack}"
            async with await JsonlPersistence(
                where, compression=compression, pack_chunks=pack
            ).create(mk.header()) as writer:
                for turn in range(40):
                    await writer.append(log[16 * turn : 16 * (turn + 1)])
            store = JsonlPersistence(where, compression=compression)
            async with await store.open("s-1", "read") as reader:
                assert wire(await reader.read()) == wire(log)
            async with await store.open("s-1", "write") as writer:
                assert wire(await writer.read()) == wire(log)
            await store.aclose()


def test_stored_rows_decode_every_range_of_mixed_blocks(mk: Any) -> None:
    log = the_log(mk) + the_log(mk, 16)
    rows = StoredRows()
    packed = encode_rows(log[:17], pack_chunks=True)
    assert len(packed) < 17
    rows.add(packed, 17)
    rows.add(encode_rows(log[17:20], pack_chunks=False), 3)
    rows.add(encode_rows(log[20:25], pack_chunks=False), 5)
    rows.add(encode_rows(log[25:], pack_chunks=True), len(log) - 25)
    assert rows.count == len(log)
    copy = StoredRows()
    copy.extend(rows)
    for store in (rows, copy):
        for start in range(len(log)):
            for stop in range(start + 1, len(log) + 1):
                assert wire(store.decode(start, stop)) == wire(log[start:stop]), (start, stop)
