"""JSONL backend benchmarks: each measurement is a ratio to a raw baseline timed in the same run.

Workloads (issue 3 §5): turns of 10 realistic records (~12 KB of JSON per turn), built as typed
events beforehand; the raw side gets the same records as prebuilt dicts and encodes them with
``json.dumps`` inside its timed loop, as ours must encode inside ``append``.

1. durable append: ``append(10 events)`` + ``flush()`` per turn, 200 turns, vs raw ``os.write`` +
   ``os.fsync`` per turn. Bar: throughput ratio >= 0.85. (For information, also against a raw
   side encoding with ``pydantic_core.to_json``, the encoder ours uses.)
2. cold read of a 50,000-event session into typed events through a fresh instance vs raw
   ``pydantic_core.from_json`` per line. Bar: >= 0.7 (GC on both sides).
   (For information, also against a raw side that reads in 256 KiB blocks as ours does.)
3. ``list()`` of 2,000 sessions through a fresh instance vs raw ``os.scandir`` + ``stat`` +
   header-line read. Bar: time ratio <= 1.5. (A warm instance's ``list()`` is printed too, for
   information: it re-reads every header and stat but memoizes the header decode.)
4. zstd, one frame per turn, vs plain, on harness-shaped turns (issue 12 §1: each turn as the
   TypeScript harness writes it, ~245 records: request header, user message, the answer streamed
   as one ``assistant/chunk`` per word, the ``assistant/message`` repeating it, tool call and
   result, step/turn markers; the same synthetic text as the dense turns; one ``append`` +
   ``flush`` per turn): file size <= 0.25, append throughput >= 0.8. The same with
   ``pack_chunks=True`` on both sides, and the dense 10-record turns, are information rows.

Cold read runs with the cyclic GC on in both sides, as users run (issue 12 §4); the GC-off
figures are information rows.

Appends interleave the two sides turn by turn (alternating which goes first) so both see the
same disk conditions; the other measurements alternate whole runs. Each runs ROUNDS times and
the medians are compared. Prints a table; exits 1 when a
bar is missed. Usage: ``python bench/bench_jsonl.py`` (or ``python -m nox -s bench -- jsonl``).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pydantic_core

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import ROUNDS, interleaved, median_pair, our_cold_read, report
from _workload import COLD_EVENTS, build_harness_turns, build_turns, header, turn_events
from dsh_persistence_jsonl import JsonlPersistence
from dsh_session import (
    SessionEvent,
    SessionHeader,
    decode_header_line,
    decode_row,
    encode_event,
    encode_header_line,
)

TURNS = 200
LIST_SESSIONS = 2_000

# -- measurements ---------------------------------------------------------------------------


class RawAppender:
    """The baseline: ``json.dumps`` of prebuilt dicts, ``os.write`` and ``os.fsync`` per turn.
    With ``rust=True`` it encodes with ``pydantic_core.to_json`` (as ours does), for an
    information row."""

    def __init__(self, directory: Path, *, rust: bool = False) -> None:
        path = directory / f"raw-{time.perf_counter_ns()}.jsonl"
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        os.write(self.fd, b'{"type":"session"}\n')
        os.fsync(self.fd)
        self.dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
        self.rust = rust

    async def turn(self, records: list[dict[str, Any]]) -> None:
        if self.rust:
            to_json = pydantic_core.to_json
            os.write(self.fd, b"".join([to_json(r) + b"\n" for r in records]))
        else:
            dumps = self.dumps
            os.write(self.fd, "".join(dumps(r) + "\n" for r in records).encode())
        os.fsync(self.fd)

    async def close(self) -> int:
        size = os.fstat(self.fd).st_size
        os.close(self.fd)
        return size


class OurAppender:
    """Ours: ``append(10 events)`` + ``flush()`` per turn on a materialized session."""

    def __init__(self, directory: Path, compression: str, *, pack_chunks: bool = False) -> None:
        root = directory / f"ours-{compression}-{pack_chunks}-{time.perf_counter_ns()}"
        self.store = JsonlPersistence(
            root,
            compression=compression,  # type: ignore[arg-type]
            pack_chunks=pack_chunks,
        )
        self.handle: Any = None

    async def open(self) -> None:
        self.handle = await self.store.create(header("bench-append"))
        await self.handle.flush()

    async def turn(self, events: list[SessionEvent]) -> None:
        await self.handle.append(events)
        await self.handle.flush()

    async def close(self) -> int:
        await self.handle.close()
        size = self.store.log_path(header("bench-append")).stat().st_size
        await self.store.aclose()
        return size


def raw_cold_read(path: Path) -> float:
    start = time.perf_counter()
    with path.open("rb") as f:
        data = f.read()
    lines = data.split(b"\n")[1:-1]
    values = [pydantic_core.from_json(line) for line in lines]
    elapsed = time.perf_counter() - start
    assert len(values) == COLD_EVENTS
    return elapsed


def raw_cold_read_blocks(path: Path) -> float:
    """The raw side reading as our backend does, 256 KiB at a time (information only)."""
    start = time.perf_counter()
    values = []
    carry = b""
    with path.open("rb", buffering=0) as f:
        while block := f.read(256 * 1024):
            lines = block.split(b"\n")
            if carry:  # the line the previous block ended inside
                lines[0] = carry + lines[0]
            carry = lines.pop()
            values.extend(pydantic_core.from_json(line) for line in lines)
    elapsed = time.perf_counter() - start
    assert len(values) == COLD_EVENTS + 1  # the header line too
    return elapsed


def raw_list(root: Path) -> float:
    start = time.perf_counter()
    found = []
    with os.scandir(root) as projects:
        for project in projects:
            with os.scandir(project.path) as sessions:
                for session in sessions:
                    path = os.path.join(session.path, "session.jsonl")
                    st = os.stat(path)
                    with open(path, "rb") as f:
                        found.append((f.readline(), st.st_size))
    elapsed = time.perf_counter() - start
    assert len(found) == LIST_SESSIONS
    return elapsed


async def our_list(root: Path, store: JsonlPersistence | None = None) -> float:
    start = time.perf_counter()
    snapshots = await (store or JsonlPersistence(root)).list()
    elapsed = time.perf_counter() - start
    assert len(snapshots) == LIST_SESSIONS
    return elapsed


# -- setup --------------------------------------------------------------------------------


async def make_cold_session(root: Path) -> Path:
    store = JsonlPersistence(root)
    turns = build_turns(COLD_EVENTS // 10, seed=11)
    async with await store.create(header("bench-cold")) as handle:
        for events in turns:
            await handle.append(events)
    await store.aclose()
    return store.log_path(header("bench-cold"))


def make_list_root(root: Path) -> None:
    rng = random.Random(3)
    for i in range(LIST_SESSIONS):
        h = SessionHeader(
            id=f"session-{i:05d}", created_at=1_784_974_100_000 + i, cwd=f"/home/u/p{i % 40}"
        )
        store_path = JsonlPersistence(root).log_path(h)
        store_path.parent.mkdir(parents=True, exist_ok=True)
        lines = [encode_header_line(h)] + [
            encode_event(e) for e in turn_events(1, 0, rng)[: rng.randrange(1, 10)]
        ]
        store_path.write_bytes(b"".join(line + b"\n" for line in lines))


FIXTURES = (
    Path(__file__).resolve().parent.parent
    / "packages/dsh-persistence-jsonl/tests/fixtures/upstream-v0"
)


async def fixture_sizes(base: Path) -> tuple[int, int, int]:
    """Plain and zstd sizes of the TypeScript harness's v0 logs, written one append per turn."""
    sizes = {"none": 0, "zstd": 0}
    turns_total = 0
    for path in sorted(FIXTURES.glob("*.jsonl")):
        lines = path.read_bytes().split(b"\n")[:-1]
        head, cut = decode_header_line(lines[0])
        events = [e for line in lines[1:] for e in decode_row(line)]
        turns: list[list[SessionEvent]] = [[]]
        for event in events:
            turns[-1].append(event)
            if event.type == "turn/end":
                turns.append([])
        turns = [t for t in turns if t]
        turns_total += len(turns)
        for compression in sizes:
            store = JsonlPersistence(base / f"fx-{compression}", compression=compression)  # type: ignore[arg-type]
            async with await store.create(head, inherited_event_count=cut) as handle:
                for turn in turns:
                    await handle.append(turn)
                await handle.flush()
            sizes[compression] += store.log_path(head).stat().st_size
            await store.aclose()
    return sizes["none"], sizes["zstd"], turns_total


# -- driver -------------------------------------------------------------------------------


async def main() -> int:
    rows: list[tuple[str, str, str, str, bool]] = []
    with tempfile.TemporaryDirectory(
        prefix="dsh-bench-jsonl-", dir=os.environ.get("TMPDIR")
    ) as tmp:
        base = Path(tmp)
        turns = build_turns(TURNS)
        dicts = [[json.loads(encode_event(e)) for e in events] for events in turns]
        per_turn = sum(len(encode_event(e)) + 1 for e in turns[0])

        # 1. durable append, and 4. zstd vs plain: per-turn interleaving, median over rounds
        raw_t: list[float] = []
        ours_t: list[float] = []
        rust_t: list[float] = []
        ours2_t: list[float] = []
        plain_t: list[float] = []
        zstd_t: list[float] = []
        plain_sizes: list[int] = []
        zstd_sizes: list[int] = []
        for _ in range(ROUNDS):
            for rust, raw_times, our_times in ((False, raw_t, ours_t), (True, rust_t, ours2_t)):
                raw = RawAppender(base, rust=rust)
                ours = OurAppender(base, "none")
                await ours.open()
                a, b = await interleaved(raw.turn, dicts, ours.turn, turns)
                raw_times.append(a)
                our_times.append(b)
                await raw.close()
                await ours.close()
            plain = OurAppender(base, "none")
            packed = OurAppender(base, "zstd")
            await plain.open()
            await packed.open()
            a, b = await interleaved(plain.turn, turns, packed.turn, turns)
            plain_t.append(a)
            zstd_t.append(b)
            plain_sizes.append(await plain.close())
            zstd_sizes.append(await packed.close())
        raw_m, ours_m = statistics.median(raw_t), statistics.median(ours_t)
        ratio = raw_m / ours_m
        rows.append(
            (
                f"durable append, {TURNS} turns x 10 events (~{per_turn // 1024} KB/turn)",
                f"raw {raw_m * 1e3 / TURNS:.3f} ms/turn",
                f"ours {ours_m * 1e3 / TURNS:.3f} ms/turn",
                f"{ratio:.2f}x (bar >= 0.85)",
                ratio >= 0.85,
            )
        )
        raw_m, ours_m = statistics.median(rust_t), statistics.median(ours2_t)
        rows.append(
            (
                "durable append, raw encoding with pydantic_core.to_json as ours does (info)",
                f"raw {raw_m * 1e3 / TURNS:.3f} ms/turn",
                f"ours {ours_m * 1e3 / TURNS:.3f} ms/turn",
                f"{raw_m / ours_m:.2f}x (no bar)",
                True,
            )
        )
        # 4. zstd vs plain on harness-shaped turns (the bars), then the dense turns (info)
        harness = build_harness_turns(TURNS)
        per_harness = sum(len(encode_event(e)) + 1 for e in harness[0])
        for pack in (False, True):
            h_plain_t: list[float] = []
            h_zstd_t: list[float] = []
            h_plain_sizes: list[int] = []
            h_zstd_sizes: list[int] = []
            for _ in range(ROUNDS):
                plain = OurAppender(base, "none", pack_chunks=pack)
                packed = OurAppender(base, "zstd", pack_chunks=pack)
                await plain.open()
                await packed.open()
                a, b = await interleaved(plain.turn, harness, packed.turn, harness)
                h_plain_t.append(a)
                h_zstd_t.append(b)
                h_plain_sizes.append(await plain.close())
                h_zstd_sizes.append(await packed.close())
            plain_m, zstd_m = statistics.median(h_plain_t), statistics.median(h_zstd_t)
            z_ratio = plain_m / zstd_m
            size_ratio = statistics.median(h_zstd_sizes) / statistics.median(h_plain_sizes)
            label = f"pack_chunks={pack}"
            rows.append(
                (
                    f"zstd append vs plain, harness turns (~{len(harness[0])} records, "
                    f"~{per_harness // 1024} KB/turn), {label}" + (" (info)" if pack else ""),
                    f"plain {plain_m * 1e3 / TURNS:.3f} ms/turn",
                    f"zstd {zstd_m * 1e3 / TURNS:.3f} ms/turn",
                    f"{z_ratio:.2f}x" + (" (bar >= 0.8)" if not pack else " (no bar)"),
                    pack or z_ratio >= 0.8,
                )
            )
            if not pack:
                unpacked_plain = statistics.median(h_plain_sizes)
            rows.append(
                (
                    f"zstd file size vs plain, harness turns, {label}"
                    + (" (info)" if pack else ""),
                    f"plain {statistics.median(h_plain_sizes) / 1e6:.2f} MB",
                    f"zstd {statistics.median(h_zstd_sizes) / 1e6:.2f} MB",
                    f"{size_ratio:.3f} (bar <= 0.25)"
                    if not pack
                    else f"{size_ratio:.3f}, "
                    f"{statistics.median(h_zstd_sizes) / unpacked_plain:.3f} of unpacked plain"
                    " (no bar)",
                    pack or size_ratio <= 0.25,
                )
            )

        plain_m, zstd_m = statistics.median(plain_t), statistics.median(zstd_t)
        size_ratio = statistics.median(zstd_sizes) / statistics.median(plain_sizes)
        rows.append(
            (
                "zstd append vs plain, dense 10-record turns (info)",
                f"plain {plain_m * 1e3 / TURNS:.3f} ms/turn",
                f"zstd {zstd_m * 1e3 / TURNS:.3f} ms/turn",
                f"{plain_m / zstd_m:.2f}x (no bar)",
                True,
            )
        )
        rows.append(
            (
                "zstd file size vs plain, dense 10-record turns (info)",
                f"plain {statistics.median(plain_sizes) / 1e6:.2f} MB",
                f"zstd {statistics.median(zstd_sizes) / 1e6:.2f} MB",
                f"{size_ratio:.3f} (no bar)",
                True,
            )
        )

        real_turns = build_turns(TURNS, real_text=True)
        real_sizes = []
        for compression in ("none", "zstd"):
            writer = OurAppender(base, compression)
            await writer.open()
            for events in real_turns:
                await writer.turn(events)
            real_sizes.append(await writer.close())
        rows.append(
            (
                "zstd size vs plain, same turns with stdlib prose and code (info)",
                f"plain {real_sizes[0] / 1e6:.2f} MB",
                f"zstd {real_sizes[1] / 1e6:.2f} MB",
                f"{real_sizes[1] / real_sizes[0]:.3f} (no bar)",
                True,
            )
        )

        plain_fx, zstd_fx, fx_turns = await fixture_sizes(base)
        rows.append(
            (
                f"zstd size vs plain, upstream v0 logs ({fx_turns} turns; info)",
                f"plain {plain_fx / 1e3:.1f} KB",
                f"zstd {zstd_fx / 1e3:.1f} KB",
                f"{zstd_fx / plain_fx:.3f} (no bar)",
                True,
            )
        )

        # 2. cold read, the collector on both sides (as users run: the bar), then off (info)
        cold_path = await make_cold_session(base / "cold")
        gc.collect()
        raw_t, ours_t = await median_pair(
            lambda: raw_cold_read(cold_path),
            lambda: our_cold_read(lambda: JsonlPersistence(base / "cold")),
        )
        ratio = raw_t / ours_t
        rows.append(
            (
                f"cold read, {COLD_EVENTS} events (GC on both sides)",
                f"raw from_json {raw_t * 1e3:.1f} ms",
                f"ours typed {ours_t * 1e3:.1f} ms",
                f"{ratio:.2f}x (bar >= 0.7)",
                ratio >= 0.7,
            )
        )
        gc.collect()
        gc.disable()
        try:
            raw_t, ours_t = await median_pair(
                lambda: raw_cold_read(cold_path),
                lambda: our_cold_read(lambda: JsonlPersistence(base / "cold")),
            )
            blocks_t, ours_t2 = await median_pair(
                lambda: raw_cold_read_blocks(cold_path),
                lambda: our_cold_read(lambda: JsonlPersistence(base / "cold")),
            )
        finally:
            gc.enable()
        rows.append(
            (
                f"cold read, {COLD_EVENTS} events, GC off both sides (info)",
                f"raw from_json {raw_t * 1e3:.1f} ms",
                f"ours typed {ours_t * 1e3:.1f} ms",
                f"{raw_t / ours_t:.2f}x (no bar)",
                True,
            )
        )
        rows.append(
            (
                "cold read, raw also reading 256 KiB blocks, GC off (info)",
                f"raw from_json {blocks_t * 1e3:.1f} ms",
                f"ours typed {ours_t2 * 1e3:.1f} ms",
                f"{blocks_t / ours_t2:.2f}x (no bar)",
                True,
            )
        )

        # 3. list: a fresh instance (the bar), and a warm one (header decode memoized; info)
        make_list_root(base / "list")
        raw_t2, ours_t2 = await median_pair(
            lambda: raw_list(base / "list"), lambda: our_list(base / "list")
        )
        ratio = ours_t2 / raw_t2
        rows.append(
            (
                f"list() of {LIST_SESSIONS} sessions, fresh instance",
                f"raw {raw_t2 * 1e3:.1f} ms",
                f"ours {ours_t2 * 1e3:.1f} ms",
                f"{ratio:.2f}x time (bar <= 1.5)",
                ratio <= 1.5,
            )
        )
        warm = JsonlPersistence(base / "list")
        await warm.list()
        raw_t2, ours_t2 = await median_pair(
            lambda: raw_list(base / "list"), lambda: our_list(base / "list", warm)
        )
        rows.append(
            (
                f"list() of {LIST_SESSIONS} sessions, warm instance (info)",
                f"raw {raw_t2 * 1e3:.1f} ms",
                f"ours {ours_t2 * 1e3:.1f} ms",
                f"{ours_t2 / raw_t2:.2f}x time (no bar)",
                True,
            )
        )

    return report("bench_jsonl", rows)


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
