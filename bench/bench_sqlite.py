"""SQLite backend benchmarks: each measurement is a ratio to a raw ``sqlite3`` baseline timed in
the same run, on the same disk.

The workloads are the JSONL benchmark's (from ``bench/_workload.py``, so they stay the same):
turns of 10 realistic records (~12 KB of JSON per turn), built as typed events beforehand; the
raw side gets the same records as prebuilt dicts and encodes them with ``json.dumps`` inside its
timed loop, as ours must encode inside ``append``.

1. durable append: ``append(10 events)`` + ``flush()`` per turn, 200 turns, vs raw ``sqlite3``
   in WAL with ``synchronous=FULL``, one transaction (``executemany`` of the 10 lines) per turn,
   for the default (compressed) and plain settings. Raw runs twice in the same rounds: with its
   SQL on one dedicated thread (started and set up before timing: the ceiling of any design
   that keeps ``sqlite3`` off the event loop), bar >= 0.95; and on the calling thread (the
   floor), bar >= 0.75 (issue 12 §2). Information: the thread against the calling thread, and
   the raw side encoding with ``pydantic_core.to_json`` (the encoder ours uses).
2. cold read of a 50,000-event session into typed events through a fresh instance vs a raw
   ``SELECT`` of the same rows + ``pydantic_core.from_json`` per line, from the same database,
   with the cyclic GC on in both sides (as users run): bar >= 0.8; GC off both sides:
   information (issue 12 §4).
3. ``list()`` of 2,000 sessions through a fresh instance (which also opens and verifies the
   database) vs the same raw ``SELECT`` of each session row and its last event row, its header
   columns handed over as one JSON object (``json_object``) that the raw side parses with
   ``pydantic_core.from_json``: bar <= 2 (time). A warm instance against the raw ``SELECT``
   alone: bar <= 3. Information: the fresh instance against the raw ``SELECT`` alone, and
   against a raw store designed around the list (a two-column sessions table of JSON headers).

Appends interleave the sides turn by turn (rotating which goes first) so all see the same
disk conditions; the other measurements alternate whole runs. Each runs ROUNDS times and the
medians are compared. Prints a table; exits 1 when a bar is missed.
Usage: ``python bench/bench_sqlite.py`` (or ``python -m nox -s bench -- sqlite``).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import queue
import random
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pydantic_core

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import interleaved, median_pair, our_cold_read, report
from _workload import build_turns, header, turn_events
from dsh_persistence_sqlite import SqlitePersistence
from dsh_session import SessionEvent, SessionHeader, encode_event, encode_header_line

ROUNDS = int(os.environ.get("DSH_BENCH_ROUNDS", "5"))
TURNS = 200
COLD_EVENTS = 50_000
LIST_SESSIONS = 2_000

RAW_SCHEMA = (
    "CREATE TABLE events (session_id TEXT NOT NULL, seq INTEGER NOT NULL, line TEXT NOT NULL, "
    "PRIMARY KEY (session_id, seq)) STRICT"
)
RAW_LIST = """SELECT s.id, s.version, s.created_at, s.cwd, s.parent_session, s.origin,
  s.delegation_depth, s.agent_preset, s.is_seeded, s.seed_length, s.incarnation, s.rewrites,
  s.updated_at, e.last_seq, e.written_at
FROM sessions AS s LEFT JOIN events AS e ON e.session_id = s.id
  AND e.seq = (SELECT max(l.seq) FROM events AS l WHERE l.session_id = s.id)"""
"""The same statement ``list()`` runs (each session row and its last event row)."""

RAW_LIST_JSON = """SELECT json_object('type', 'session', 'version', s.version, 'id', s.id,
    'createdAt', s.created_at, 'cwd', s.cwd, 'parentSession', s.parent_session,
    'origin', s.origin, 'delegationDepth', s.delegation_depth, 'agentPreset', s.agent_preset,
    'seedLength', s.seed_length),
  s.incarnation, s.rewrites, s.updated_at, e.last_seq, e.written_at
FROM sessions AS s LEFT JOIN events AS e ON e.session_id = s.id
  AND e.seq = (SELECT max(l.seq) FROM events AS l WHERE l.session_id = s.id)"""
"""``RAW_LIST`` with the header columns handed over as one JSON header (built by SQLite's
``json_object``), for a raw side that parses each header with ``pydantic_core.from_json``."""

RAW_HEADERS_SCHEMA = (
    "CREATE TABLE sessions (id TEXT PRIMARY KEY NOT NULL, header TEXT NOT NULL) STRICT",
    RAW_SCHEMA,
)
"""A raw store of the list workload: each session's header as its JSON line, and the same event
rows (``session_id, seq, line``)."""

RAW_HEADERS_LIST = """SELECT s.id, s.header, e.seq FROM sessions AS s LEFT JOIN events AS e
  ON e.session_id = s.id
  AND e.seq = (SELECT max(l.seq) FROM events AS l WHERE l.session_id = s.id)"""


def rust_dumps(record: dict[str, Any]) -> str:
    """``pydantic_core.to_json`` as TEXT: the encoder ours uses for these records."""
    return pydantic_core.to_json(record).decode()


class RawAppender:
    """The baseline: ``json.dumps`` of prebuilt dicts, one WAL+FULL transaction per turn
    (``dumps`` given: another encoder, for an information row)."""

    def __init__(
        self, directory: Path, dumps: Callable[[dict[str, Any]], str] | None = None
    ) -> None:
        path = directory / f"raw-{time.perf_counter_ns()}.db"
        self.connection = sqlite3.connect(path, isolation_level=None)
        self.connection.execute("PRAGMA journal_mode = WAL")
        self.connection.execute("PRAGMA synchronous = FULL")
        self.connection.execute(RAW_SCHEMA)
        self.seq = 0
        self.dumps = dumps or json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

    async def turn(self, records: list[dict[str, Any]]) -> None:
        dumps = self.dumps
        seq = self.seq
        connection = self.connection
        connection.execute("BEGIN IMMEDIATE")
        connection.executemany(
            "INSERT INTO events (session_id, seq, line) VALUES (?, ?, ?)",
            [("bench-append", seq + i, dumps(r)) for i, r in enumerate(records)],
        )
        connection.execute("COMMIT")
        self.seq = seq + len(records)

    async def close(self) -> None:
        self.connection.close()


class ThreadedRawAppender:
    """The baseline's own work with its SQL moved off the event loop, as the issue requires of
    ours: ``json.dumps`` on the loop, then ``BEGIN``/``executemany``/``COMMIT`` on a dedicated
    thread, one round trip per turn (a queue put there, ``call_soon_threadsafe`` back): the
    ceiling of any off-loop design, the durable append bar's baseline (issue 12 §2)."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / f"threaded-{time.perf_counter_ns()}.db"
        self.seq = 0
        self.dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
        self.jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        connection = sqlite3.connect(self.path, isolation_level=None)
        while (job := self.jobs.get()) is not None:
            loop, future, statements = job
            try:
                for sql, rows in statements:
                    if rows is None:
                        connection.execute(sql)
                    else:
                        connection.executemany(sql, rows)
            except BaseException as exc:  # handed to the awaiting turn, never a hung bench
                loop.call_soon_threadsafe(future.set_exception, exc)
            else:
                loop.call_soon_threadsafe(future.set_result, None)
        connection.close()

    async def _submit(self, statements: list[tuple[str, Any]]) -> None:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self.jobs.put((loop, future, statements))
        await future

    async def open(self) -> None:
        """Set the database up before the timed turns (as the other sides do)."""
        await self._submit(
            [
                ("PRAGMA journal_mode = WAL", None),
                ("PRAGMA synchronous = FULL", None),
                (RAW_SCHEMA, None),
            ]
        )

    async def turn(self, records: list[dict[str, Any]]) -> None:
        dumps = self.dumps
        seq = self.seq
        rows = [("bench-append", seq + i, dumps(r)) for i, r in enumerate(records)]
        await self._submit(
            [
                ("BEGIN IMMEDIATE", None),
                ("INSERT INTO events (session_id, seq, line) VALUES (?, ?, ?)", rows),
                ("COMMIT", None),
            ]
        )
        self.seq = seq + len(records)

    async def close(self) -> None:
        self.jobs.put(None)
        await asyncio.to_thread(self.thread.join)


class OurAppender:
    """Ours: ``append(10 events)`` + ``flush()`` per turn on a materialized session."""

    def __init__(self, directory: Path, compression: bool) -> None:
        path = directory / f"ours-{compression}-{time.perf_counter_ns()}.db"
        self.store = SqlitePersistence(path, compression=compression)
        self.handle: Any = None

    async def open(self) -> None:
        self.handle = await self.store.create(header("bench-append"))
        await self.handle.flush()

    async def turn(self, events: list[SessionEvent]) -> None:
        await self.handle.append(events)
        await self.handle.flush()

    async def close(self) -> None:
        await self.handle.close()
        await self.store.aclose()


async def append_ratio(
    base: Path,
    dicts: list[list[dict[str, Any]]],
    make_other: Callable[[], Any],
    other_input: list[Any],
    raw_dumps: Callable[[dict[str, Any]], str] | None = None,
) -> tuple[float, float]:
    """Median total times of the raw appender (encoding with ``raw_dumps``, default
    ``json.dumps``) and of ``make_other()``'s (opened before the timed turns), interleaved turn
    by turn, over ROUNDS rounds."""
    raw_t: list[float] = []
    other_t: list[float] = []
    for _ in range(ROUNDS):
        raw = RawAppender(base, raw_dumps)
        other = make_other()
        await other.open()
        a, b = await interleaved(raw.turn, dicts, other.turn, other_input)
        raw_t.append(a)
        other_t.append(b)
        await raw.close()
        await other.close()
    return statistics.median(raw_t), statistics.median(other_t)


async def append_ratios(
    base: Path,
    dicts: list[list[dict[str, Any]]],
    turns: list[list[SessionEvent]],
    compression: bool,
) -> tuple[float, float, float]:
    """Median total times of raw ``sqlite3`` on the calling thread, raw on its dedicated thread
    (started and set up before the timed turns) and ours (created and materialized before),
    over ROUNDS rounds; each turn runs on all three back to back, the order rotating turn by
    turn so each side goes first, second and third equally often."""
    times: list[list[float]] = [[], [], []]
    clock = time.perf_counter
    for _ in range(ROUNDS):
        raw = RawAppender(base)
        threaded = ThreadedRawAppender(base)
        ours = OurAppender(base, compression)
        await threaded.open()
        await ours.open()
        sides = ((raw.turn, dicts), (threaded.turn, dicts), (ours.turn, turns))
        totals = [0.0, 0.0, 0.0]
        for i in range(len(turns)):
            for k in range(3):
                side = (i + k) % 3
                run, inputs = sides[side]
                start = clock()
                await run(inputs[i])
                totals[side] += clock() - start
        for side in range(3):
            times[side].append(totals[side])
        await raw.close()
        await threaded.close()
        await ours.close()
    raw_m, threaded_m, ours_m = (statistics.median(t) for t in times)
    return raw_m, threaded_m, ours_m


def raw_cold_read(path: Path) -> float:
    start = time.perf_counter()
    connection = sqlite3.connect(path)
    rows = connection.execute(
        "SELECT line FROM events WHERE session_id = ? ORDER BY seq", ("bench-cold",)
    ).fetchall()
    values = [pydantic_core.from_json(line) for (line,) in rows]
    connection.close()
    elapsed = time.perf_counter() - start
    assert len(values) == COLD_EVENTS
    return elapsed


def raw_list(path: Path) -> float:
    start = time.perf_counter()
    connection = sqlite3.connect(path)
    rows = connection.execute(RAW_LIST).fetchall()
    connection.close()
    elapsed = time.perf_counter() - start
    assert len(rows) == LIST_SESSIONS
    return elapsed


def raw_list_json(path: Path) -> float:
    """The ``list()`` bar's baseline: ``RAW_LIST`` over our database (the same rows), each
    header read as JSON (``RAW_LIST_JSON``) and parsed with ``pydantic_core.from_json``."""
    start = time.perf_counter()
    connection = sqlite3.connect(path)
    rows = connection.execute(RAW_LIST_JSON).fetchall()
    from_json = pydantic_core.from_json
    found = [(from_json(row[0]), *row[1:]) for row in rows]
    connection.close()
    elapsed = time.perf_counter() - start
    assert len(found) == LIST_SESSIONS
    return elapsed


def raw_list_headers(path: Path) -> float:
    """Information: a raw store designed around the list, keeping each header as its JSON line
    (``RAW_HEADERS_SCHEMA``), one ``SELECT`` of every session with its last event row, and
    ``pydantic_core.from_json`` of each header."""
    start = time.perf_counter()
    connection = sqlite3.connect(path)
    rows = connection.execute(RAW_HEADERS_LIST).fetchall()
    from_json = pydantic_core.from_json
    found = [(from_json(head), last_seq) for _id, head, last_seq in rows]
    connection.close()
    elapsed = time.perf_counter() - start
    assert len(found) == LIST_SESSIONS
    return elapsed


async def our_list(path: Path, store: SqlitePersistence | None = None) -> float:
    start = time.perf_counter()
    instance = store or SqlitePersistence(path)
    snapshots = await instance.list()
    elapsed = time.perf_counter() - start
    assert len(snapshots) == LIST_SESSIONS
    if store is None:
        await instance.aclose()
    return elapsed


async def make_cold_session(path: Path) -> None:
    store = SqlitePersistence(path, compression=False)  # raw reads the TEXT lines as they are
    async with await store.create(header("bench-cold")) as handle:
        for events in build_turns(COLD_EVENTS // 10, seed=11):
            await handle.append(events)
    await store.aclose()


async def make_list_database(path: Path, raw_path: Path) -> None:
    """Ours at ``path`` and the raw headers store (``RAW_HEADERS_SCHEMA``) at ``raw_path``,
    holding the same sessions and event lines."""
    rng = random.Random(3)
    store = SqlitePersistence(path)
    raw = sqlite3.connect(raw_path, isolation_level=None)
    for statement in RAW_HEADERS_SCHEMA:
        raw.execute(statement)
    raw.execute("BEGIN")
    for i in range(LIST_SESSIONS):
        h = SessionHeader(
            id=f"session-{i:05d}", created_at=1_784_974_100_000 + i, cwd=f"/home/u/p{i % 40}"
        )
        events = turn_events(1, 0, rng)[: rng.randrange(1, 10)]
        async with await store.create(h) as handle:
            await handle.append(events)
        raw.execute(
            "INSERT INTO sessions (id, header) VALUES (?, ?)",
            (h.id, encode_header_line(h).decode()),
        )
        raw.executemany(
            "INSERT INTO events (session_id, seq, line) VALUES (?, ?, ?)",
            [(h.id, e.seq, encode_event(e).decode()) for e in events],
        )
    raw.execute("COMMIT")
    raw.close()
    await store.aclose()


async def main() -> int:
    rows: list[tuple[str, str, str, str, bool]] = []
    with tempfile.TemporaryDirectory(
        prefix="dsh-bench-sqlite-", dir=os.environ.get("TMPDIR")
    ) as tmp:
        base = Path(tmp)
        turns = build_turns(TURNS)
        dicts = [[json.loads(encode_event(e)) for e in events] for events in turns]
        per_turn = sum(len(encode_event(e)) + 1 for e in turns[0])

        # 1. durable append: ours, raw on a dedicated thread and raw on the calling thread,
        # interleaved turn by turn; the thread is the ceiling of an off-loop design (bar), the
        # calling thread the floor
        for compression in (True, False):
            raw_m, threaded_m, ours_m = await append_ratios(base, dicts, turns, compression)
            label = "compressed" if compression else "plain"
            ratio = threaded_m / ours_m
            rows.append(
                (
                    f"durable append ({label}), {TURNS} turns x 10 events "
                    f"(~{per_turn // 1024} KB/turn), vs raw on a dedicated thread",
                    f"raw thread {threaded_m * 1e3 / TURNS:.3f} ms/turn",
                    f"ours {ours_m * 1e3 / TURNS:.3f} ms/turn",
                    f"{ratio:.2f}x (bar >= 0.95)",
                    ratio >= 0.95,
                )
            )
            ratio = raw_m / ours_m
            rows.append(
                (
                    f"durable append ({label}), vs raw on the calling thread",
                    f"raw WAL+FULL {raw_m * 1e3 / TURNS:.3f} ms/turn",
                    f"ours {ours_m * 1e3 / TURNS:.3f} ms/turn",
                    f"{ratio:.2f}x (bar >= 0.75)",
                    ratio >= 0.75,
                )
            )
            if compression:
                rows.append(
                    (
                        "durable append, raw on a thread vs raw on the calling thread (info)",
                        f"raw WAL+FULL {raw_m * 1e3 / TURNS:.3f} ms/turn",
                        f"raw thread {threaded_m * 1e3 / TURNS:.3f} ms/turn",
                        f"{raw_m / threaded_m:.2f}x (no bar)",
                        True,
                    )
                )

        raw_m, ours_m = await append_ratio(
            base, dicts, lambda: OurAppender(base, True), turns, raw_dumps=rust_dumps
        )
        rows.append(
            (
                "durable append, raw encoding with pydantic_core.to_json as ours does (info)",
                f"raw WAL+FULL {raw_m * 1e3 / TURNS:.3f} ms/turn",
                f"ours {ours_m * 1e3 / TURNS:.3f} ms/turn",
                f"{raw_m / ours_m:.2f}x (no bar)",
                True,
            )
        )

        # 2. cold read, the collector on both sides (as users run: the bar), then off (info)
        cold = base / "cold.db"
        await make_cold_session(cold)
        gc.collect()
        raw_t, ours_t = await median_pair(
            lambda: raw_cold_read(cold), lambda: our_cold_read(lambda: SqlitePersistence(cold))
        )
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
            raw_t, ours_t = await median_pair(
                lambda: raw_cold_read(cold), lambda: our_cold_read(lambda: SqlitePersistence(cold))
            )
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

        # 3. list: a fresh instance against the same SELECT also parsing each header as JSON
        # (the bar); against a raw store keeping JSON headers, and a raw SELECT of our rows
        # (information); a warm instance against the raw SELECT (bar <= 3)
        listing = base / "list.db"
        raw_listing = base / "raw-list.db"
        await make_list_database(listing, raw_listing)
        raw_t, ours_t = await median_pair(lambda: raw_list_json(listing), lambda: our_list(listing))
        ratio = ours_t / raw_t
        rows.append(
            (
                f"list() of {LIST_SESSIONS} sessions, fresh instance, vs raw SELECT + from_json",
                f"raw {raw_t * 1e3:.1f} ms",
                f"ours {ours_t * 1e3:.1f} ms",
                f"{ratio:.2f}x time (bar <= 2)",
                ratio <= 2,
            )
        )
        raw_t, ours_t = await median_pair(
            lambda: raw_list_headers(raw_listing), lambda: our_list(listing)
        )
        rows.append(
            (
                "list(), fresh, vs a raw store of JSON headers + from_json (info)",
                f"raw {raw_t * 1e3:.1f} ms",
                f"ours {ours_t * 1e3:.1f} ms",
                f"{ours_t / raw_t:.2f}x time (no bar)",
                True,
            )
        )
        raw_t, ours_t = await median_pair(lambda: raw_list(listing), lambda: our_list(listing))
        rows.append(
            (
                f"list() of {LIST_SESSIONS} sessions, fresh, vs raw SELECT of our rows (info)",
                f"raw SELECT {raw_t * 1e3:.1f} ms",
                f"ours {ours_t * 1e3:.1f} ms",
                f"{ours_t / raw_t:.2f}x time (no bar)",
                True,
            )
        )
        warm = SqlitePersistence(listing)
        await warm.list()
        raw_t, ours_t = await median_pair(
            lambda: raw_list(listing), lambda: our_list(listing, warm)
        )
        await warm.aclose()
        ratio = ours_t / raw_t
        rows.append(
            (
                f"list() of {LIST_SESSIONS} sessions, warm instance, vs raw SELECT of our rows",
                f"raw SELECT {raw_t * 1e3:.1f} ms",
                f"ours {ours_t * 1e3:.1f} ms",
                f"{ratio:.2f}x time (bar <= 3)",
                ratio <= 3,
            )
        )

    return report("bench_sqlite", rows)


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
