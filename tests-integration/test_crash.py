"""SIGKILL a writing child at random points: nothing flushed is lost, nothing torn is served.

Run against every backend configuration (JSONL plain, zstd, zstd with packed chunks; SQLite
compressed, compressed with packed chunks). Seeded and repeatable: ``DSH_CRASH_TRIALS`` trials
per configuration (default 50; the ``crash`` nox session runs 200), ``DSH_CRASH_SEED`` picks the
seed (default 20260801). Each trial runs ``crash_child.py`` on one of five sessions (so every
session lives through many crashes), kills it after a random delay, then checks the log through
a fresh instance — contiguous from seq 0, each event byte for byte what the child wrote, at least
every event whose flush returned — and continues it through a write handle (the dead child's
lock is gone), which a further fresh instance reads back at the right seqs.
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

from dsh_session import encode_event

CHILD = Path(__file__).parent / "crash_child.py"
TRIALS = int(os.environ.get("DSH_CRASH_TRIALS", "50"))
SEED = int(os.environ.get("DSH_CRASH_SEED", "20260801"))
SESSIONS = 5


def _child_module() -> Any:
    spec = importlib.util.spec_from_file_location("crash_child", CHILD)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


child = _child_module()


async def _trial(
    backend: str, location: Path, session_id: str, seed: int, delay: float
) -> tuple[int, int]:
    """Run one child, kill it ``delay`` seconds after it is ready; (ready seq, max flushed)."""
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, str(CHILD), backend, str(location), session_id, str(seed)),
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


async def _check_and_continue(backend: str, location: Path, session_id: str, where: str) -> int:
    """Check what survived against the flushed count; append one event; return the count."""
    store = child.open_store(backend, location)
    try:
        async with await store.open(session_id, "read") as reader:
            events = list(await reader.read())
        count = len(events)
        assert [e.seq for e in events] == list(range(count)), where
        for event in events:
            assert encode_event(event) == encode_event(child.event_for(event.seq)), where
        snapshot = await store.stat(session_id)
        assert snapshot is not None, where
        assert snapshot.event_count in (None, count), where  # None where it is not cheap (zstd)
        async with await store.open(session_id, "write") as writer:
            await writer.append([child.event_for(count)])
            await writer.flush()
    finally:
        await store.aclose()
    fresh = child.open_store(backend, location)
    try:
        async with await fresh.open(session_id, "read") as reader:
            again = await reader.read()
    finally:
        await fresh.aclose()
    assert [e.seq for e in again] == list(range(count + 1)), where
    return count


@pytest.mark.crash
@pytest.mark.slow
@pytest.mark.parametrize("backend", child.BACKENDS)
async def test_sigkilled_writer_loses_nothing_flushed_and_serves_nothing_torn(
    tmp_path: Path, backend: str
) -> None:
    rng = random.Random(f"{SEED}:{backend}")
    for trial in range(TRIALS):
        session_id = f"crash-{trial % SESSIONS}"
        delay = rng.choice([0.0, rng.uniform(0.0, 0.005), rng.uniform(0.0, 0.05)])
        ready, flushed = await _trial(backend, tmp_path, session_id, rng.randrange(2**31), delay)
        where = f"{backend} trial {trial} ({session_id}, delay {delay:.4f}s)"
        probe = child.open_store(backend, tmp_path)
        try:
            exists = await probe.stat(session_id) is not None
        finally:
            await probe.aclose()
        if not exists:
            assert flushed == 0, f"{where}: flushed {flushed} events, but the session is gone"
            continue
        count = await _check_and_continue(backend, tmp_path, session_id, where)
        assert count >= flushed, f"{where}: {flushed} events were flushed, {count} survived"
        assert count >= ready, f"{where}: the log shrank below the {ready} events it had"
