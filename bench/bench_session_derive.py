"""dsh-session benchmark: append + derive_messages must not grow with history length.

Each operation appends one event of a realistic turn (turn/start, user/message, step/start,
assistant/message with a tool call, tool/call, tool/result, step/end, turn/end) to a session and
then calls ``derive_messages()``, as an agent loop does before each request. The per-operation
time with 10,000 events of history is compared with the same at 100 events, both measured in
this run (the history is restored, untimed, before each round; medians over rounds).

Bar: per-operation time at 10,000 events <= 3x the time at 100 events. Also printed: reading the
same 10,000-event log into typed events (``decode_event``) against raw
``pydantic_core.from_json`` per line, for information.

Usage: ``python bench/bench_session_derive.py`` (or ``python -m nox -s bench -- derive``).
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import time
from collections.abc import Iterator
from typing import Any

import pydantic_core

from dsh_session import Session, SessionEvent, SessionHeader, decode_event, encode_event

ROUNDS = int(os.environ.get("DSH_BENCH_ROUNDS", "7"))
OPS = 400
SMALL, LARGE = 100, 10_000
BAR = 3.0
HEADER = SessionHeader(id="bench", created_at=1_785_000_000_000, cwd="/home/user/project")


def _turn_events(turn: int) -> Iterator[tuple[str, Any, dict[str, Any]]]:
    """The (type, data, options) of one tool-using turn, 8 events."""
    call = f"call_{turn:06d}"
    yield "turn/start", {"turn": turn, "trigger": {"kind": "message"}}, {}
    text = f"Please look at file number {turn} and tell me what it says about the session log."
    yield (
        "user/message",
        {"content": [{"type": "text", "text": text}], "source": {"kind": "user"}},
        {},
    )
    yield "step/start", {"turn": turn, "step": 1}, {}
    yield (
        "assistant/message",
        {
            "turn": turn,
            "step": 1,
            "content": [
                {"type": "reasoning", "text": "The user wants the file read; I will use bash."},
                {"type": "text", "text": "Reading it now."},
                {
                    "type": "tool-call",
                    "id": call,
                    "name": "bash",
                    "arguments": f'{{"command": "cat file{turn}.txt"}}',
                },
            ],
            "provenance": {"provider": "deepseek-official", "model": "deepseek-v4-flash"},
            "usage": {"inputTokens": 120, "outputTokens": 40},
        },
        {},
    )
    yield (
        "tool/call",
        {
            "turn": turn,
            "step": 1,
            "callId": call,
            "name": "bash",
            "arguments": f'{{"command": "cat file{turn}.txt"}}',
        },
        {},
    )
    yield (
        "tool/result",
        {
            "turn": turn,
            "step": 1,
            "callId": call,
            "content": [{"type": "text", "text": "alpha beta gamma\n" * 8}],
            "isError": False,
        },
        {"source": -1},
    )
    yield "step/end", {"turn": turn, "step": 1}, {}
    yield "turn/end", {"turn": turn, "reason": {"kind": "completed"}}, {}


def _script() -> Iterator[tuple[str, Any, dict[str, Any]]]:
    turn = 1
    while True:
        yield from _turn_events(turn)
        turn += 1


def _append(session: Session, item: tuple[str, Any, dict[str, Any]], clock: int) -> SessionEvent:
    kind, data, options = item
    sources = [session.next_seq - 1] if options.get("source") else None
    return session.append(kind, data, source_event_seqs=sources, time=clock)


def _history(size: int) -> list[SessionEvent]:
    session = Session(HEADER)
    script = _script()
    for index in range(size):
        _append(session, next(script), 1_785_000_000_000 + index)
    return list(session.events)


def _per_op(history: list[SessionEvent]) -> float:
    """Seconds per append+derive, continuing the history's script (median over rounds)."""
    samples = []
    for _ in range(ROUNDS):
        session = Session(HEADER, history)  # restore (untimed)
        session.derive_messages()  # the loop derived before, too: warm the per-node cache
        script = _script()
        for _ in range(len(history)):  # continue the same script where the history stopped
            next(script)
        items = [next(script) for _ in range(OPS)]
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            for offset, item in enumerate(items):
                _append(session, item, 1_785_100_000_000 + offset)
                session.derive_messages()
            samples.append((time.perf_counter() - start) / OPS)
        finally:
            gc.enable()
    return statistics.median(samples)


def _read_ratio(history: list[SessionEvent]) -> tuple[float, float]:
    lines = [encode_event(event) for event in history]
    ours, raw = [], []
    for _ in range(ROUNDS):
        gc.disable()
        try:
            start = time.perf_counter()
            for line in lines:
                pydantic_core.from_json(line)
            raw.append(time.perf_counter() - start)
            start = time.perf_counter()
            for line in lines:
                decode_event(line)
            ours.append(time.perf_counter() - start)
        finally:
            gc.enable()
    return statistics.median(raw), statistics.median(ours)


def main() -> int:
    small, large = _history(SMALL), _history(LARGE)
    per_small = _per_op(small)
    per_large = _per_op(large)
    ratio = per_large / per_small
    raw, ours = _read_ratio(large)
    print(f"append + derive_messages, per operation ({OPS} ops, median of {ROUNDS} rounds)")
    print(f"  at {SMALL:>6} events: {per_small * 1e6:9.1f} us")
    print(f"  at {LARGE:>6} events: {per_large * 1e6:9.1f} us")
    print(f"  ratio {ratio:.2f} (bar <= {BAR:.1f})  {'ok' if ratio <= BAR else 'MISSED'}")
    print(
        f"read {LARGE} event lines (information): from_json {raw * 1e3:.1f} ms, "
        f"decode_event {ours * 1e3:.1f} ms, speed ratio {raw / ours:.2f}"
    )
    return 0 if ratio <= BAR else 1


if __name__ == "__main__":
    sys.exit(main())
