"""PostgreSQL backend benchmarks: each measurement is a ratio to raw ``psycopg`` (async) doing the
same inserts and selects in the same run, against the same server.

The workloads are the JSONL benchmark's (from ``bench/_workload.py``, so they stay the same):
turns of 10 realistic records (~12 KB of JSON per turn), built as typed events beforehand; the
raw side gets the same records as prebuilt dicts and encodes them with ``json.dumps`` inside its
timed loop, as ours must encode inside ``append``.

1. durable append: ``append(10 events)`` + ``flush()`` per turn, 200 turns, vs raw ``psycopg``:
   one transaction per turn (``executemany`` of the 10 ``INSERT``s of ``(session_id, seq, line)``
   into a table with the same primary key), ``synchronous_commit = on``, on one connection
   opened before timing; for the default (compressed) and plain settings. Bar: throughput
   ratio >= 0.8. Information: against a raw side using our statement shape (one autocommit
   ``INSERT ... SELECT FROM unnest(...)`` of binary arrays per turn, without our sessions row).
2. cold read of a 50,000-event session into typed events through a fresh instance (which also
   connects and checks the schema) vs a fresh raw connection, ``SELECT line ... ORDER BY seq``
   of the same rows and ``pydantic_core.from_json`` per line, with the cyclic GC on in both
   sides (as users run): bar >= 0.8. GC off both sides: information.

Appends interleave the sides turn by turn (alternating which goes first) so both see the same
server conditions; cold reads alternate whole runs. Each runs ROUNDS times and the medians are
compared. Prints a table; exits 1 when a bar is missed. The server is
``DSH_BENCH_POSTGRES_DSN`` (default ``postgresql://postgres@127.0.0.1:5432/test``); everything
runs in a schema of its own, dropped at the end.
Usage: ``python bench/bench_postgres.py``.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pydantic_core
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import interleaved, report
from _workload import build_turns, header
from dsh_persistence_postgres import PostgresPersistence
from dsh_session import SessionEvent, encode_event

ROUNDS = int(os.environ.get("DSH_BENCH_ROUNDS", "5"))
TURNS = 200
COLD_EVENTS = 50_000
DSN = os.environ.get("DSH_BENCH_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")


class RawAppender:
    """The baseline: ``json.dumps`` of prebuilt dicts, one transaction per turn of 10 inserts."""

    def __init__(self, schema: str, *, unnest: bool = False) -> None:
        self.schema = schema
        self.unnest = unnest
        self.insert_unnest = ""
        self.table = f"raw_{uuid.uuid4().hex[:12]}"
        self.seq = 0
        self.dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
        self.connection: psycopg.AsyncConnection[Any] | None = None
        self.insert = ""

    async def open(self) -> None:
        self.connection = await psycopg.AsyncConnection.connect(DSN, autocommit=True)
        await self.connection.execute("SET synchronous_commit = on")
        name = sql.Identifier(self.schema, self.table)
        await self.connection.execute(
            sql.SQL(
                "CREATE TABLE {} (session_id text NOT NULL, seq bigint NOT NULL, "
                "line text NOT NULL, PRIMARY KEY (session_id, seq))"
            ).format(name)
        )
        self.insert = (
            sql.SQL("INSERT INTO {} (session_id, seq, line) VALUES (%s, %s, %s)")
            .format(name)
            .as_string(None)
        )
        self.insert_unnest = (
            sql.SQL(
                "INSERT INTO {} (session_id, seq, line) SELECT %(id)s, t.seq, t.line "
                "FROM unnest(%(seqs)b::bigint[], %(lines)b::text[]) AS t (seq, line)"
            )
            .format(name)
            .as_string(None)
        )

    async def turn(self, records: list[dict[str, Any]]) -> None:
        connection = self.connection
        assert connection is not None
        dumps = self.dumps
        seq = self.seq
        async with connection.transaction(), connection.cursor() as cursor:
            await cursor.executemany(
                self.insert,
                [("bench-append", seq + i, dumps(r)) for i, r in enumerate(records)],
            )
        self.seq = seq + len(records)

    async def close(self) -> None:
        if self.connection is not None:
            await self.connection.close()


class OurAppender:
    """Ours: ``append(10 events)`` + ``flush()`` per turn on a materialized session."""

    def __init__(self, schema: str, compression: bool) -> None:
        self.store = PostgresPersistence(DSN, schema=schema, compression=compression)
        self.session_id = f"bench-append-{uuid.uuid4().hex[:8]}"
        self.handle: Any = None

    async def open(self) -> None:
        self.handle = await self.store.create(header(self.session_id))
        await self.handle.flush()

    async def turn(self, events: list[SessionEvent]) -> None:
        await self.handle.append(events)
        await self.handle.flush()

    async def close(self) -> None:
        await self.handle.close()
        await self.store.aclose()


async def append_ratio(
    schema: str,
    dicts: list[list[dict[str, Any]]],
    turns: list[list[SessionEvent]],
    compression: bool,
    *,
    unnest: bool = False,
) -> tuple[float, float]:
    """Median total times of raw and ours, interleaved turn by turn, over ROUNDS rounds."""
    raw_t: list[float] = []
    our_t: list[float] = []
    for _ in range(ROUNDS):
        raw = RawAppender(schema, unnest=unnest)
        ours = OurAppender(schema, compression)
        await raw.open()
        await ours.open()
        a, b = await interleaved(raw.turn, dicts, ours.turn, turns)
        raw_t.append(a)
        our_t.append(b)
        await raw.close()
        await ours.close()
    return statistics.median(raw_t), statistics.median(our_t)


async def raw_cold_read(schema: str) -> float:
    select = (
        sql.SQL("SELECT line FROM {} WHERE session_id = %s ORDER BY seq")
        .format(sql.Identifier(schema, "events"))
        .as_string(None)
    )
    start = time.perf_counter()
    connection = await psycopg.AsyncConnection.connect(DSN, autocommit=True)
    cursor = await connection.execute(select, ("bench-cold",))
    rows = await cursor.fetchall()
    values = [pydantic_core.from_json(line) for (line,) in rows]
    await connection.close()
    elapsed = time.perf_counter() - start
    assert len(values) == COLD_EVENTS
    return elapsed


async def our_cold_read(schema: str) -> float:
    start = time.perf_counter()
    store = PostgresPersistence(DSN, schema=schema)
    async with await store.open("bench-cold", "read") as reader:
        events = await reader.read()
    await store.aclose()
    elapsed = time.perf_counter() - start
    assert len(events) == COLD_EVENTS
    return elapsed


async def cold_pair(schema: str) -> tuple[float, float]:
    raw_times: list[float] = []
    our_times: list[float] = []
    for _ in range(ROUNDS):
        raw_times.append(await raw_cold_read(schema))
        our_times.append(await our_cold_read(schema))
    return statistics.median(raw_times), statistics.median(our_times)


async def make_cold_session(schema: str) -> None:
    store = PostgresPersistence(DSN, schema=schema, compression=False)  # raw reads the text
    async with await store.create(header("bench-cold")) as handle:
        for events in build_turns(COLD_EVENTS // 10, seed=11):
            await handle.append(events)
    await store.aclose()


async def main() -> int:
    rows: list[tuple[str, str, str, str, bool]] = []
    schema = f"dsh_bench_{uuid.uuid4().hex[:12]}"
    setup = PostgresPersistence(DSN, schema=schema)
    await setup.list()  # creates the schema (and proves the server is there)
    await setup.aclose()
    try:
        turns = build_turns(TURNS)
        dicts = [[json.loads(encode_event(e)) for e in events] for events in turns]
        per_turn = sum(len(encode_event(e)) + 1 for e in turns[0])
        for compression in (True, False):
            raw_m, ours_m = await append_ratio(schema, dicts, turns, compression)
            ratio = raw_m / ours_m
            label = "compressed" if compression else "plain"
            rows.append(
                (
                    f"durable append ({label}), {TURNS} turns x 10 events "
                    f"(~{per_turn // 1024} KB/turn), vs raw psycopg",
                    f"raw {raw_m * 1e3 / TURNS:.3f} ms/turn",
                    f"ours {ours_m * 1e3 / TURNS:.3f} ms/turn",
                    f"{ratio:.2f}x (bar >= 0.8)",
                    ratio >= 0.8,
                )
            )
        raw_m, ours_m = await append_ratio(schema, dicts, turns, False, unnest=True)
        rows.append(
            (
                "durable append (plain), vs raw psycopg using our statement shape: one "
                "autocommit INSERT ... unnest of binary arrays per turn (info)",
                f"raw {raw_m * 1e3 / TURNS:.3f} ms/turn",
                f"ours {ours_m * 1e3 / TURNS:.3f} ms/turn",
                f"{raw_m / ours_m:.2f}x (no bar)",
                True,
            )
        )
        await make_cold_session(schema)
        gc.collect()
        raw_t, ours_t = await cold_pair(schema)
        ratio = raw_t / ours_t
        rows.append(
            (
                f"cold read, {COLD_EVENTS} events (GC on both sides)",
                f"raw SELECT+from_json {raw_t * 1e3:.1f} ms",
                f"ours typed {ours_t * 1e3:.1f} ms",
                f"{ratio:.2f}x (bar >= 0.8)",
                ratio >= 0.8,
            )
        )
        gc.collect()
        gc.disable()
        try:
            raw_t, ours_t = await cold_pair(schema)
        finally:
            gc.enable()
        rows.append(
            (
                f"cold read, {COLD_EVENTS} events, GC off both sides (info)",
                f"raw SELECT+from_json {raw_t * 1e3:.1f} ms",
                f"ours typed {ours_t * 1e3:.1f} ms",
                f"{raw_t / ours_t:.2f}x (no bar)",
                True,
            )
        )
    finally:
        async with await psycopg.AsyncConnection.connect(DSN, autocommit=True) as connection:
            await connection.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
            )
    return report("bench_postgres", rows)


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
