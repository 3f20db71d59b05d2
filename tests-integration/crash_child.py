"""Child process of test_crash.py: writes one session through a backend until it is SIGKILLed.

argv: backend location session_id seed. Reports on stdout, one line each, flushed at once:
``READY <next_seq>`` after the write open, ``FLUSHED <n>`` once a flush returned with the log
holding ``n`` events. Events are a pure function of their seq (``event_for``), so the parent can
check every stored byte. The parent imports this module for ``open_store`` and ``event_for``.
"""

from __future__ import annotations

import asyncio
import random
import sys
from pathlib import Path

from dsh_persistence import SessionPersistence, SessionPersistenceNotFoundError
from dsh_persistence_jsonl import JsonlPersistence
from dsh_persistence_sqlite import SqlitePersistence
from dsh_session import SessionEvent, SessionHeader, make_event

BACKENDS = ("jsonl-none", "jsonl-zstd", "jsonl-zstd-pack", "sqlite-compressed", "sqlite-packed")

# Four text deltas in a row make a run that chunk packing stores as one packed row.
_PATTERN = (
    "turn/start",
    "user/message",
    "step/start",
    "assistant/chunk",
    "assistant/chunk",
    "assistant/chunk",
    "assistant/chunk",
    "step/end",
    "turn/end",
)


def open_store(backend: str, location: Path) -> SessionPersistence:
    """A fresh instance of ``backend`` over the storage kept under ``location``."""
    if backend == "jsonl-none":
        return JsonlPersistence(location / "sessions", compression="none")
    if backend == "jsonl-zstd":
        return JsonlPersistence(location / "sessions", compression="zstd")
    if backend == "jsonl-zstd-pack":
        return JsonlPersistence(location / "sessions", compression="zstd", pack_chunks=True)
    if backend == "sqlite-compressed":
        return SqlitePersistence(location / "sessions.db", compression=True)
    if backend == "sqlite-packed":
        return SqlitePersistence(location / "sessions.db", compression=True, pack_chunks=True)
    raise ValueError(f"unknown backend {backend!r}; one of {BACKENDS}")


def event_for(seq: int) -> SessionEvent:
    """The deterministic event at ``seq``: turns of nine events, with payloads up to ~6 KB."""
    kind = _PATTERN[seq % len(_PATTERN)]
    turn = seq // len(_PATTERN) + 1
    time = 1_700_000_000_000 + seq
    if kind == "turn/start":
        return make_event(kind, seq, time, {"turn": turn})
    if kind == "turn/end":
        return make_event(kind, seq, time, {"turn": turn, "reason": {"kind": "completed"}})
    if kind in ("step/start", "step/end"):
        return make_event(kind, seq, time, {"turn": turn, "step": 1})
    if kind == "assistant/chunk":
        chunk = {"type": "text-delta", "index": 0, "text": f"chunk {seq} é😀"}
        return make_event(kind, seq, time, {"turn": turn, "step": 1, "chunk": chunk})
    text = f"message {seq} " + "x" * ((seq * 7919) % 6000)
    return make_event(
        kind,
        seq,
        time,
        {"content": [{"type": "text", "text": text}], "source": {"kind": "user"}},
        surface_op="append",
    )


def header(session_id: str) -> SessionHeader:
    """The header every trial of ``session_id`` uses."""
    return SessionHeader(id=session_id, created_at=1_700_000_000_000, cwd="/crash/test")


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def main(backend: str, location: Path, session_id: str, seed: int) -> None:
    rng = random.Random(seed)
    store = open_store(backend, location)
    try:
        handle = await store.open(session_id, "write")
        seq = len(await handle.read())
    except SessionPersistenceNotFoundError:
        handle = await store.create(header(session_id))
        seq = 0
    _say(f"READY {seq}")
    while True:
        size = rng.randint(1, 12)
        await handle.append([event_for(s) for s in range(seq, seq + size)])
        seq += size
        if rng.random() < 0.5:
            await handle.flush()
            _say(f"FLUSHED {seq}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])))
