"""Plain logs are read and scanned in 256 KiB blocks: lines that cross block boundaries, lines
longer than a block, and problems found in a later block behave exactly as in a small log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dsh_persistence import SessionPersistenceCorruptionError
from dsh_persistence_jsonl import JsonlPersistence
from dsh_persistence_jsonl._store import _BLOCK
from dsh_session import (
    SessionEvent,
    decode_event,
    decode_header_line,
    encode_event,
    encode_header_line,
)

BLOCK = _BLOCK  # the tests below size their logs to span several blocks


def big_turn(mk: Any, start: int, turn: int, text_size: int) -> list[SessionEvent]:
    """``mk.one_turn`` with a user message of ``text_size`` characters (a varied line length)."""
    events: list[SessionEvent] = mk.one_turn(start, turn)
    wire = json.loads(encode_event(events[1]))
    wire["data"]["content"][0]["text"] = "x" * text_size
    events[1] = decode_event(json.dumps(wire, separators=(",", ":")).encode())
    return events


def many_turns(mk: Any, count: int, start: int = 0) -> list[SessionEvent]:
    """``count`` turns from seq ``start`` whose user lines vary from 1 KB to ~90 KB, the middle
    one ~700 KB (a line over several blocks)."""
    events: list[SessionEvent] = []
    for turn in range(count):
        size = 700_000 if turn == count // 2 else 1_000 + (turn * 7_919) % 90_000
        events += big_turn(mk, start + len(events), turn + 1, size)
    return events


def write_log(root: Path, mk: Any, events: list[SessionEvent], extra: bytes = b"") -> Path:
    store = JsonlPersistence(root)
    path = store.log_path(mk.header())
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [encode_header_line(mk.header()), *(encode_event(e) for e in events)]
    path.write_bytes(b"".join(line + b"\n" for line in lines) + extra)
    return path


def encoded(events: Any) -> list[bytes]:
    return [encode_event(e) for e in events]


async def test_a_log_of_many_blocks_reads_back_every_event(root: Path, mk: Any) -> None:
    events = many_turns(mk, 60)
    path = write_log(root, mk, events)
    assert path.stat().st_size > 10 * BLOCK
    store = JsonlPersistence(root)
    async with await store.open("s-1", "read") as reader:
        assert encoded(await reader.read()) == encoded(events)
    async with await store.open("s-1", "write") as writer:
        await writer.append(mk.one_turn(len(events), turn=61))
    async with await JsonlPersistence(root).open("s-1", "read") as reader:
        got = await reader.read()
    assert [e.seq for e in got] == list(range(len(events) + 6))
    await store.aclose()


async def test_a_header_longer_than_a_block_is_read_whole(root: Path, mk: Any) -> None:
    wire = json.loads(encode_header_line(mk.header()))
    wire["agentPreset"] = "p" * (BLOCK + 1000)
    line = json.dumps(wire, separators=(",", ":")).encode()
    header, _cut = decode_header_line(line)
    store = JsonlPersistence(root)
    path = store.log_path(header)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(line + b"\n" + b"".join(e + b"\n" for e in encoded(mk.one_turn())))
    async with await store.open("s-1", "read") as reader:
        assert len(await reader.read()) == 6
    assert (await store.list())[0].header.agent_preset == "p" * (BLOCK + 1000)
    await store.aclose()


async def test_damage_in_a_later_block_names_its_line(root: Path, mk: Any) -> None:
    events = many_turns(mk, 60)
    lines = [encode_header_line(mk.header()), *encoded(events)]
    bad = next(
        i for i in range(len(lines)) if sum(len(x) + 1 for x in lines[:i]) > 3 * BLOCK
    )  # the first line that starts past the third block
    lines[bad] = b"{broken" + b"!" * 5000
    store = JsonlPersistence(root)
    path = store.log_path(mk.header())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    with pytest.raises(SessionPersistenceCorruptionError) as info:
        await store.open("s-1", "read")
    assert info.value.line == bad + 1  # physical, 1-based: the header is line 1
    assert info.value.artifact == str(path)
    assert "followed by the intact line" in str(info.value)
    await store.aclose()


async def test_a_tail_of_several_blocks_is_discarded_then_truncated(root: Path, mk: Any) -> None:
    events = many_turns(mk, 20)
    garbage = b'{"type":"turn/start","seq":' + b"9" * (3 * BLOCK) + b"\n" + b"torn" * 1000
    path = write_log(root, mk, events, extra=garbage)
    clean = path.read_bytes()[: -len(garbage)]
    store = JsonlPersistence(root)
    async with await store.open("s-1", "read") as reader:
        assert encoded(await reader.read()) == encoded(events)
    nxt = mk.one_turn(len(events), turn=21)
    async with await store.open("s-1", "write") as writer:
        await writer.append(nxt)
    assert path.read_bytes() == clean + b"".join(line + b"\n" for line in encoded(nxt))
    await store.aclose()


async def test_a_read_handle_picks_up_a_suffix_of_many_blocks(root: Path, mk: Any) -> None:
    first = mk.one_turn()
    write_log(root, mk, first)
    store = JsonlPersistence(root)
    reader = await store.open("s-1", "read")
    assert len(await reader.read()) == 6
    batch = many_turns(mk, 40, start=6)
    writer_store = JsonlPersistence(root)
    async with await writer_store.open("s-1", "write") as writer:
        await writer.append(batch)
    assert encoded(await reader.read(6)) == encoded(batch)
    await reader.close()
    await store.aclose()
    await writer_store.aclose()
