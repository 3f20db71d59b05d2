"""How the benchmarks time and report: ``ROUNDS`` runs per measurement and their medians,
appends interleaved turn by turn so both sides see the same disk, the cold read of a store, and
the table each script prints (its exit status 1 when a bar is missed).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from _workload import COLD_EVENTS

__all__ = ["ROUNDS", "interleaved", "median_pair", "our_cold_read", "report"]

ROUNDS = int(os.environ.get("DSH_BENCH_ROUNDS", "5"))
"""How many times each measurement runs (``$DSH_BENCH_ROUNDS``, default 5)."""


async def interleaved(
    a: Callable[[Any], Awaitable[None]],
    a_input: list[Any],
    b: Callable[[Any], Awaitable[None]],
    b_input: list[Any],
) -> tuple[float, float]:
    """Run turn i of side a and of side b back to back (order alternating), so both sides see
    the same disk conditions; return each side's total time."""
    total_a = total_b = 0.0
    clock = time.perf_counter
    for i in range(len(a_input)):
        if i % 2:
            start = clock()
            await b(b_input[i])
            mid = clock()
            await a(a_input[i])
            total_b += mid - start
            total_a += clock() - mid
        else:
            start = clock()
            await a(a_input[i])
            mid = clock()
            await b(b_input[i])
            total_a += mid - start
            total_b += clock() - mid
    return total_a, total_b


async def our_cold_read(make_store: Callable[[], Any]) -> float:
    """Open the cold session for read through a fresh ``make_store()`` and read every event."""
    start = time.perf_counter()
    store = make_store()
    async with await store.open("bench-cold", "read") as reader:
        events = await reader.read()
    elapsed = time.perf_counter() - start
    assert len(events) == COLD_EVENTS
    await store.aclose()
    return elapsed


async def median_pair(
    raw: Callable[[], float], ours: Callable[[], Awaitable[float]]
) -> tuple[float, float]:
    raw_times: list[float] = []
    our_times: list[float] = []
    for _ in range(ROUNDS):
        raw_times.append(raw())
        our_times.append(await ours())
    return statistics.median(raw_times), statistics.median(our_times)


def report(name: str, rows: list[tuple[str, str, str, str, bool]]) -> int:
    """Print the table of ``(measurement, baseline, ours, ratio, bar met)`` rows; 1 when a bar
    is missed, else 0 (the script's exit status)."""
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    print(f"{name} (python {sys.version.split()[0]}, median of {ROUNDS} rounds)")
    for row in rows:
        cells = [row[i].ljust(widths[i]) for i in range(4)]
        print("  ".join(cells), "ok" if row[4] else "MISSED")
    missed = [r[0] for r in rows if not r[4]]
    if missed:
        print("missed bars: " + "; ".join(missed))
        return 1
    return 0
