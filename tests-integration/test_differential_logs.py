"""SQLite and PostgreSQL each store the same logical log as JSONL: random logs, random append
partitions.

Hypothesis generates logs (core events, packable chunk runs of every kind, plugin and unknown
types, non-ASCII text and lone surrogates, rows past the 4 KiB compression threshold) and writes
each through ``JsonlPersistence`` (the reference) and the backend under test — ``SqlitePersistence``
or ``PostgresPersistence`` (a fresh schema per example, dropped after) — each configuration drawn
at random (compression, chunk packing), with independent random append partitions. Both must
read back the same events from every offset (and in windows), list the same sessions and export
the same bytes, through the instances that wrote and through fresh ones; PostgreSQL's
``size_bytes`` is the export's size.
"""

from __future__ import annotations

import asyncio
import io
import itertools
import os
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from psycopg import sql

from dsh_persistence import SessionPersistence, export_session
from dsh_persistence_jsonl import JsonlPersistence
from dsh_persistence_postgres import PostgresPersistence
from dsh_persistence_sqlite import SqlitePersistence
from dsh_session import SessionEvent, SessionHeader, encode_event, make_event

DSN = os.environ.get("DSH_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")

_TEXT = st.text(alphabet=st.characters(exclude_categories=()), max_size=40)  # surrogates too
_JSON_SCALARS = st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | _TEXT
_JSON = st.recursive(
    _JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=12,
)


@st.composite
def _piece(draw: st.DrawFn, turn: int) -> list[tuple[str, Any, dict[str, Any]]]:
    """A few events of one kind (as (type, data, options)), to be given seqs later."""
    kind = draw(
        st.sampled_from(
            ["turn", "user", "assistant", "chunks", "tool-chunks", "plugin", "unknown", "big"]
        )
    )
    if kind == "turn":
        return [
            ("turn/start", {"turn": turn}, {}),
            ("step/start", {"turn": turn, "step": 1}, {}),
            ("step/end", {"turn": turn, "step": 1}, {}),
            ("turn/end", {"turn": turn, "reason": {"kind": "completed"}}, {}),
        ]
    if kind == "user":
        text = draw(_TEXT)
        data = {"content": [{"type": "text", "text": text}], "source": {"kind": "user"}}
        return [("user/message", data, {"surface_op": "append"})]
    if kind == "assistant":
        data = {
            "turn": turn,
            "step": 1,
            "content": [{"type": "text", "text": draw(_TEXT)}],
            "provenance": {"provider": "mock", "model": "mock"},
        }
        return [("assistant/message", data, {"surface_op": "append"})]
    if kind == "chunks":
        chunk_type = draw(st.sampled_from(["text-delta", "reasoning-delta"]))
        texts = draw(st.lists(_TEXT, min_size=1, max_size=8))
        index = draw(st.integers(0, 2))
        return [
            (
                "assistant/chunk",
                {
                    "turn": turn,
                    "step": 1,
                    "chunk": {"type": chunk_type, "index": index, "text": text},
                },
                {},
            )
            for text in texts
        ]
    if kind == "tool-chunks":
        named = draw(st.booleans())
        parts = draw(st.lists(_TEXT, min_size=1, max_size=8))
        out = []
        for part in parts:
            chunk: dict[str, Any] = {"type": "tool-call-delta", "index": 0, "id": "call-1"}
            if named:
                chunk["name"] = "bash"
            chunk["argumentsDelta"] = part
            out.append(("assistant/chunk", {"turn": turn, "step": 1, "chunk": chunk}, {}))
        return out
    if kind == "plugin":
        return [("todo/write", draw(_JSON), {})]
    if kind == "unknown":
        return [("mystery/future", draw(_JSON), {"ignorable": draw(st.sampled_from([None, True]))})]
    size = draw(st.integers(4096, 20_000))
    body = draw(st.sampled_from(["repetitive ", "é中🎉", "a\udc80b"])) * (size // 8)
    data = {"content": [{"type": "text", "text": body}], "source": {"kind": "user"}}
    return [("user/message", data, {"surface_op": "append"})]


@st.composite
def logs(draw: st.DrawFn) -> list[SessionEvent]:
    """A contiguous log from seq 0 built from random pieces, with random time steps."""
    events: list[SessionEvent] = []
    time = draw(st.integers(1_700_000_000_000, 1_800_000_000_000))
    for turn in range(1, draw(st.integers(0, 8)) + 1):
        for kind, data, options in draw(_piece(turn)):
            time += draw(st.sampled_from([0, 1, 7, 1000]))
            events.append(make_event(kind, len(events), time, data, **options))
    return events


def partition(draw: st.DrawFn, count: int) -> list[int]:
    """Random batch boundaries over ``count`` events (sorted cut points)."""
    cuts = draw(st.sets(st.integers(1, max(1, count - 1)), max_size=6)) if count > 1 else set()
    return [0, *sorted(c for c in cuts if 0 < c < count), count]


def _bytes(events: Any) -> list[bytes]:
    return [encode_event(e) for e in events]


async def _compare(
    jsonl: SessionPersistence, ours: SessionPersistence, count: int, *, sized: bool
) -> None:
    async with (
        await jsonl.open("diff", "read") as left,
        await ours.open("diff", "read") as right,
    ):
        assert left.header == right.header
        assert left.inherited_event_count == right.inherited_event_count
        for offset in range(count + 2):
            assert _bytes(await left.read(offset)) == _bytes(await right.read(offset)), offset
            for length in (0, 1, 3):
                window_left = _bytes(await left.read(offset, length))
                assert window_left == _bytes(await right.read(offset, length)), (offset, length)
    listed_left = sorted((s.header.id, s.header, s.event_count) for s in await jsonl.list())
    listed_right = sorted((s.header.id, s.header, s.event_count) for s in await ours.list())
    assert [x[:2] for x in listed_left] == [x[:2] for x in listed_right]
    for (_, _, a), (_, _, b) in zip(listed_left, listed_right, strict=True):
        assert a is None or b is None or a == b
    assert listed_right[0][2] == count
    out_left, out_right = io.BytesIO(), io.BytesIO()
    assert await export_session(jsonl, "diff", out_left) == count
    assert await export_session(ours, "diff", out_right) == count
    assert out_left.getvalue() == out_right.getvalue()
    if sized:
        snapshot = await ours.stat("diff")
        assert snapshot is not None
        assert snapshot.size_bytes == len(out_right.getvalue())


def _drop(schema: str) -> None:
    with psycopg.connect(DSN, autocommit=True, connect_timeout=5) as connection:
        connection.execute(
            sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
        )


def _backend(
    name: str, data: st.DataObject
) -> tuple[Callable[[Path], SessionPersistence], Callable[[], None]]:
    """(a factory of the backend under test over a scratch directory, its cleanup)."""
    if name == "sqlite":
        config = {
            "compression": data.draw(st.booleans(), label="sqlite compression"),
            "pack_chunks": data.draw(st.booleans(), label="sqlite pack_chunks"),
        }
        return (lambda directory: SqlitePersistence(directory / "sessions.db", **config)), (
            lambda: None
        )
    compression = data.draw(st.booleans(), label="postgres compression")
    schema = f"dsh_test_{uuid.uuid4().hex}"
    return (
        lambda _: PostgresPersistence(DSN, schema=schema, compression=compression),
        lambda: _drop(schema),
    )


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_random_logs_read_list_and_export_identically(backend: str, data: st.DataObject) -> None:
    events = data.draw(logs(), label="log")
    seeded = data.draw(st.booleans(), label="seeded") and len(events) > 0
    header = SessionHeader(
        id="diff",
        created_at=1_700_000_000_000,
        cwd=data.draw(st.sampled_from([None, "/home/u/project", "/tmp/é 中"]), label="cwd"),
        is_seeded=seeded,
    )
    inherited = min(len(events), 3) if seeded else 0
    jsonl_config: dict[str, Any] = {
        "compression": data.draw(st.sampled_from(["none", "zstd"]), label="jsonl compression"),
        "pack_chunks": data.draw(st.booleans(), label="jsonl pack_chunks"),
    }
    cuts_left = partition(data.draw, len(events))
    cuts_right = partition(data.draw, len(events))
    make, cleanup = _backend(backend, data)
    sized = backend == "postgres"

    async def run(directory: Path) -> None:
        jsonl = JsonlPersistence(directory / "jsonl", **jsonl_config)
        ours = make(directory)
        try:
            await _write_seeded(jsonl, header, inherited, events, cuts_left)
            await _write_seeded(ours, header, inherited, events, cuts_right)
            await _compare(jsonl, ours, len(events), sized=sized)
            # and again through fresh instances (what another process would see)
            fresh_jsonl = JsonlPersistence(directory / "jsonl", **jsonl_config)
            fresh_ours = make(directory)
            try:
                await _compare(fresh_jsonl, fresh_ours, len(events), sized=sized)
            finally:
                await fresh_jsonl.aclose()
                await fresh_ours.aclose()
        finally:
            await jsonl.aclose()
            await ours.aclose()

    try:
        with tempfile.TemporaryDirectory() as tmp:
            asyncio.run(run(Path(tmp)))
    finally:
        cleanup()


async def _write_seeded(
    persistence: SessionPersistence,
    header: SessionHeader,
    inherited: int,
    events: list[SessionEvent],
    cuts: list[int],
) -> None:
    async with await persistence.create(header, inherited_event_count=inherited) as handle:
        for start, end in itertools.pairwise(cuts):
            await handle.append(events[start:end])
        await handle.flush()
