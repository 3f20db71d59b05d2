"""Child process of test_crash_sqlite.py: writes a SQLite session until it is SIGKILLed.

argv: database compression(0|1) pack_chunks(0|1) session_id seed. Reports on stdout, one line
each, flushed at once: ``READY <next_seq>`` after the write open, ``FLUSHED <n>`` once a flush
returned with the log holding ``n`` events. The events are ``crash_child_jsonl.event_for(seq)``
(the JSONL crash test's deterministic events), so the parent can check every stored byte.
"""

from __future__ import annotations

import asyncio
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from crash_child_jsonl import event_for, header
from dsh_persistence import SessionPersistenceNotFoundError
from dsh_persistence_sqlite import SqlitePersistence

__all__ = ["event_for", "header"]


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def main(path: str, compression: bool, pack_chunks: bool, session_id: str, seed: int) -> None:
    rng = random.Random(seed)
    store = SqlitePersistence(path, compression=compression, pack_chunks=pack_chunks)
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
    asyncio.run(
        main(
            sys.argv[1],
            sys.argv[2] == "1",
            sys.argv[3] == "1",
            sys.argv[4],
            int(sys.argv[5]),
        )
    )
