"""SIGKILL a child writing to a SQLite database at random points: nothing flushed is lost,
nothing partial is served, the session reopens for write and continues at the right seq.

Seeded and repeatable: ``DSH_CRASH_TRIALS`` trials per configuration (default 50; the ``crash``
nox session runs 200), ``DSH_CRASH_SEED`` picks the seed (default 20260801). Each trial runs
``crash_child_sqlite.py`` on one of five sessions in one database (so every session lives through
many crashes), kills it after a random delay, then checks the log through a fresh instance —
the whole log, contiguous from seq 0, each event byte for byte what the child wrote — and
continues it through a write handle (the dead child's lock is gone).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import random
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh_persistence_sqlite import SqlitePersistence
from dsh_session import encode_event

CHILD = Path(__file__).parent / "crash_child_sqlite.py"
TRIALS = int(os.environ.get("DSH_CRASH_TRIALS", "50"))
SEED = int(os.environ.get("DSH_CRASH_SEED", "20260801"))
SESSIONS = 5


def _child_module() -> Any:
    spec = importlib.util.spec_from_file_location("crash_child_sqlite", CHILD)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def _trial(
    path: Path, config: tuple[bool, bool], session_id: str, seed: int, delay: float
) -> tuple[int, int]:
    """Run one child, kill it ``delay`` seconds after it is ready; (ready seq, max flushed)."""
    compression, pack = config
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(CHILD),
        str(path),
        "1" if compression else "0",
        "1" if pack else "0",
        session_id,
        str(seed),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    ready_line = await process.stdout.readline()
    if not ready_line.startswith(b"READY "):
        process.kill()
        _, err = await process.communicate()
        raise AssertionError(f"child did not start: {ready_line!r} {err.decode()[-2000:]}")
    ready = int(ready_line.split()[1])
    await asyncio.sleep(delay)
    process.send_signal(signal.SIGKILL)
    out, err = await process.communicate()
    assert process.returncode == -signal.SIGKILL, err.decode()[-2000:]
    flushed = [int(line.split()[1]) for line in out.splitlines() if line.startswith(b"FLUSHED ")]
    return ready, max(flushed, default=ready)


@pytest.mark.crash
@pytest.mark.slow
@pytest.mark.parametrize(
    "config",
    [(True, False), (False, True)],
    ids=["compressed", "plain+packed"],
)
async def test_sigkilled_sqlite_writer_loses_nothing_flushed_and_serves_nothing_partial(
    tmp_path: Path, config: tuple[bool, bool]
) -> None:
    child = _child_module()
    rng = random.Random(f"{SEED}:sqlite:{config}")
    path = tmp_path / "sessions.db"
    compression, pack = config
    for trial in range(TRIALS):
        session_id = f"crash-{trial % SESSIONS}"
        delay = rng.choice([0.0, rng.uniform(0.0, 0.005), rng.uniform(0.0, 0.05)])
        ready, flushed = await _trial(path, config, session_id, rng.randrange(2**31), delay)
        where = f"trial {trial} ({session_id}, delay {delay:.4f}s)"

        store = SqlitePersistence(path, compression=compression, pack_chunks=pack)
        try:
            if await store.stat(session_id) is None:
                assert flushed == 0, f"{where}: flushed {flushed} events, but the session is gone"
                continue
            async with await store.open(session_id, "read") as reader:
                events = list(await reader.read())
            count = len(events)
            assert [e.seq for e in events] == list(range(count)), where
            assert count >= flushed, f"{where}: {flushed} events were flushed, {count} survived"
            assert count >= ready, f"{where}: the log shrank below the {ready} events it had"
            for event in events[ready:]:  # the earlier ones were checked by earlier trials
                assert encode_event(event) == encode_event(child.event_for(event.seq)), where
            snapshot = await store.stat(session_id)
            assert snapshot is not None
            assert snapshot.event_count == count, where

            async with await store.open(session_id, "write") as writer:  # the lock was released
                await writer.append([child.event_for(count)])
                await writer.flush()
        finally:
            await store.aclose()
        fresh = SqlitePersistence(path, compression=compression, pack_chunks=pack)
        try:
            async with await fresh.open(session_id, "read") as reader:
                again = await reader.read()
        finally:
            await fresh.aclose()
        assert [e.seq for e in again] == list(range(count + 1)), where
