"""Differential: the same seeded random operations on this backend and on the JSONL backend
(the reference) give the same reads, errors, stats, listings and export bytes."""

from __future__ import annotations

import collections
import io
import os
import random
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from dsh_persistence import SessionHandle, SessionPersistence, export_session
from dsh_persistence_jsonl import JsonlPersistence
from dsh_persistence_postgres import PostgresPersistence
from dsh_session import SessionEvent, SessionHeader, make_event

DSN = os.environ.get("DSH_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")


@pytest.fixture
def make_store() -> Iterator[Callable[..., PostgresPersistence]]:
    """Fresh PostgreSQL instances over one schema of this test (dropped after; the server
    must be reachable: a test fails, never skips, without it)."""
    schema = f"dsh_test_{uuid.uuid4().hex}"
    yield lambda **kwargs: PostgresPersistence(DSN, schema=schema, **kwargs)
    with psycopg.connect(DSN, autocommit=True, connect_timeout=5) as connection:
        connection.execute(
            sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
        )


IDS = ["alpha", "beta-é", "gamma-🎉", "delta-\ud800"]
TEXTS = ["hi", "é 中 🎉", "tab\tnew\nline", "\udfff lone", "\x00 nul", "z" * 6000]


def _event(seq: int, rng: random.Random) -> SessionEvent:
    kind = rng.random()
    text = rng.choice(TEXTS) + f" #{seq}" + ("x" * rng.choice([0, 0, 0, 5000]))
    if kind < 0.1:
        return make_event("mystery/plugin", seq, 7000 + seq, {"v": text}, ignorable=True)
    if kind < 0.2:
        return make_event("turn/start", seq, 7000 + seq, {"turn": seq})
    return make_event(
        "user/message",
        seq,
        7000 + seq,
        {"content": [{"type": "text", "text": text}], "source": {"kind": "user"}},
        surface_op="append",
    )


HANDLE_OPS = frozenset({"append", "flush", "close", "read"})


def _outcome(value: Any) -> Any:
    if isinstance(value, BaseException):
        return ("error", type(value).__name__)
    return ("ok", value)


class Side:
    """One backend and the handles the operations opened on it (by slot)."""

    def __init__(self, persistence: SessionPersistence) -> None:
        self.persistence = persistence
        self.handles: dict[str, SessionHandle] = {}


async def _apply(side: Side, op: tuple[Any, ...]) -> Any:
    p = side.persistence
    name = op[0]
    try:
        if name == "create":
            _, slot, session_id = op
            old = side.handles.pop(slot, None)
            if old is not None:
                await old.close()
            side.handles[slot] = await p.create(SessionHeader(id=session_id, created_at=1))
            return None
        if name == "open":
            _, slot, session_id, access = op
            old = side.handles.pop(slot, None)
            if old is not None:
                await old.close()
            side.handles[slot] = await p.open(session_id, access)
            return None
        handle = side.handles.get(op[1]) if name in HANDLE_OPS else None
        if handle is None and name in HANDLE_OPS:  # an empty slot: open the op's session first
            slot, session_id = op[1], op[2]
            handle = await p.open(session_id, "read" if slot == "r1" else "write")
            side.handles[slot] = handle
        assert handle is not None or name not in HANDLE_OPS
        if name == "append":
            _, _slot, _id, events = op
            await handle.append(events)
            return None
        if name == "flush":
            await handle.flush()
            return None
        if name == "close":
            del side.handles[op[1]]  # the next op on this slot opens the session again
            await handle.close()
            return None
        if name == "read":
            _, _slot, _id, offset, length = op
            return [e.to_wire() for e in await handle.read(offset, length)]
        if name == "stat":
            snapshot = await p.stat(op[1])
            if snapshot is None:
                return None
            return (snapshot.header, snapshot.event_count, snapshot.size_bytes)
        if name == "list":
            return sorted((s.id, s.event_count) for s in await p.list())
        if name == "export":
            out = io.BytesIO()
            count = await export_session(p, op[1], out)
            return (count, out.getvalue())
    except Exception as error:
        return error
    raise AssertionError(f"unknown op {op!r}")


def _ops(rng: random.Random, count: int) -> list[tuple[Any, ...]]:
    """A random program; appends use the next seq of the model log most of the time, a wrong
    seq sometimes (both must refuse it and store nothing)."""
    ops: list[tuple[Any, ...]] = []
    lengths = dict.fromkeys(IDS, 0)
    for _ in range(count):
        slot = rng.choice(["w1", "w2", "r1"])
        session_id = rng.choice(IDS)
        roll = rng.random()
        if roll < 0.12:
            ops.append(("create", slot, session_id))
        elif roll < 0.25:
            ops.append(("open", slot, session_id, "read" if slot == "r1" else "write"))
        elif roll < 0.55:
            # the seq the handle in the slot will need is not known here: guess from the longest
            # stored log of any id, or a wrong one; both backends see the same batch
            start = rng.choice([lengths[session_id], lengths[session_id], 0, 3])
            events = [_event(start + i, rng) for i in range(rng.randint(0, 4))]
            ops.append(("append", slot, session_id, events))
            lengths[session_id] = max(lengths[session_id], start + len(events))
        elif roll < 0.62:
            ops.append(("flush", slot, session_id))
        elif roll < 0.7:
            ops.append(("close", slot, session_id))
        elif roll < 0.82:
            offset, length = rng.choice([0, 0, 1, 2, 5]), rng.choice([None, 0, 1, 3, 100])
            ops.append(("read", slot, session_id, offset, length))
        elif roll < 0.9:
            ops.append(("stat", session_id))
        elif roll < 0.95:
            ops.append(("list",))
        else:
            ops.append(("export", session_id))
    for session_id in IDS:
        ops.append(("export", session_id))
        ops.append(("stat", session_id))
    ops.append(("list",))
    return ops


async def _run(
    seed: int, ours: SessionPersistence, reference: SessionPersistence
) -> collections.Counter[str]:
    """Run the program on both; return how often each kind of op succeeded with data."""
    sides = (Side(ours), Side(reference))
    rng = random.Random(seed * 7919)
    tally: collections.Counter[str] = collections.Counter()
    for steps, program_op in enumerate(_ops(random.Random(seed), 240)):
        op = program_op
        if op[0] == "append":
            # renumber the batch from the reference handle's next seq (most of the time), so most
            # appends succeed; the same batch goes to both sides
            handle = sides[1].handles.get(op[1])
            events = op[3]
            if handle is not None and events and rng.random() < 0.85:
                try:
                    start = len(await handle.read())
                except Exception:
                    start = 0
                events = [_renumber(e, start + i) for i, e in enumerate(events)]
            op = ("append", op[1], op[2], events)
        got = [_outcome(await _apply(side, op)) for side in sides]
        assert got[0] == got[1], f"seed {seed} step {steps} {op[0]}: {got[0]!r} != {got[1]!r}"
        kind, value = got[0]
        tally[f"{op[0]}:{kind}" if kind == "error" or not value else f"{op[0]}:data"] += 1
        if op[0] == "append" and kind == "ok" and op[3]:
            tally["append:stored"] += 1
    for side in sides:
        for handle in side.handles.values():
            await handle.close()
    return tally


def _renumber(event: SessionEvent, seq: int) -> SessionEvent:
    wire = event.to_wire()
    return make_event(
        wire["type"],
        seq,
        wire["time"],
        wire["data"],
        ignorable=wire.get("ignorable"),
        surface_op=wire.get("surfaceOp"),
    )


@pytest.mark.parametrize("seed", range(6))
async def test_random_operations_agree_with_the_jsonl_backend(
    seed: int, make_store: Any, tmp_path: Path
) -> None:
    ours = make_store(compression=seed % 2 == 0)
    reference = JsonlPersistence(tmp_path / "jsonl")
    try:
        tally = await _run(seed, ours, reference)
        # the program did real work: batches stored, data read back, and refusals too
        assert tally["append:stored"] >= 5, tally
        for kind, least in (("read:data", 2), ("export:data", 1), ("append:error", 1)):
            assert tally[kind] >= least, tally
        assert tally["list:data"] >= 1, tally
        # and a fresh instance of each reads the same stored state
        again_ours, again_ref = make_store(), JsonlPersistence(tmp_path / "jsonl")
        for session_id in IDS:
            for op in (("stat", session_id), ("export", session_id)):
                a = _outcome(await _apply(Side(again_ours), op))
                b = _outcome(await _apply(Side(again_ref), op))
                assert a == b, f"fresh instances disagree on {op}: {a!r} != {b!r}"
        await again_ours.aclose()
        await again_ref.aclose()
    finally:
        await ours.aclose()
        await reference.aclose()
