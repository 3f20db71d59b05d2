"""Real processes, no mocks: a writer killed with SIGKILL, and two processes racing for one
session. Assertions wait for lines the children print (generous safety timeouts), never for
time to pass."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh_persistence_postgres import PostgresPersistence

CHILD = Path(__file__).parent / "proc_child.py"
SAFETY_S = 120


class Child:
    """A ``proc_child.py`` process whose stdout is read line by line."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[str] = []

    @classmethod
    async def start(cls, mode: str, args: dict[str, Any]) -> Child:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(CHILD),
            mode,
            json.dumps(args),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        return cls(process)

    async def line(self) -> str:
        """The next stdout line ('' at EOF)."""
        assert self.process.stdout is not None
        async with asyncio.timeout(SAFETY_S):
            raw = await self.process.stdout.readline()
        text = raw.decode().rstrip("\n")
        if text:
            self.lines.append(text)
        return text

    async def stderr(self) -> str:
        assert self.process.stderr is not None
        return (await self.process.stderr.read()).decode()[-3000:]

    async def kill(self) -> None:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGKILL)
        await self.process.wait()


@pytest.mark.crash
async def test_a_writer_killed_with_sigkill_loses_nothing_it_flushed(mk: Any, schema: str):
    args = mk.child_args(schema, session_id="crash", payload=3000)
    child = await Child.start("append", args)
    flushed = 0
    try:
        while flushed < 120:  # at least 20 flushed turns, then kill it mid-stream
            line = await child.line()
            assert line.startswith("FLUSHED "), (line, await child.stderr())
            flushed = int(line.split()[1])
    finally:
        await child.kill()
    assert child.process.returncode == -signal.SIGKILL
    store = PostgresPersistence(mk.dsn, schema=schema)
    async with await store.open("crash", "read") as reader:
        events = await reader.read()
    assert len(events) >= flushed  # every flushed event survived
    assert [e.seq for e in events] == list(range(len(events)))
    assert len(events) % 6 == 0  # whole transactions only: no torn batch
    # a new writer gets the lock (the server released it with the dead connection)
    async with await store.open("crash", "write") as writer:
        await writer.append(mk.one_turn(len(events)))
        assert len(await writer.read()) == len(events) + 6
    await store.aclose()


@pytest.mark.crash
async def test_a_child_killed_while_holding_lets_a_second_child_write(mk: Any, schema: str):
    first = await Child.start("append", mk.child_args(schema, session_id="relay"))
    try:
        assert (await first.line()).startswith("FLUSHED ")
    finally:
        await first.kill()
    second = await Child.start("append", mk.child_args(schema, session_id="relay", turns=3))
    lines = [await second.line() for _ in range(3)]
    assert all(line.startswith("FLUSHED ") for line in lines), (lines, await second.stderr())
    assert await second.process.wait() == 0


@pytest.mark.slow
async def test_two_processes_racing_for_one_session_take_turns(mk: Any, schema: str) -> None:
    store = PostgresPersistence(mk.dsn, schema=schema)
    async with await store.create(mk.header("race")) as writer:
        await writer.flush()
    rounds, batches = 15, 4
    children = [
        await Child.start(
            "race",
            mk.child_args(
                schema, session_id="race", name=name, rounds=rounds, batches=batches, grace=grace
            ),
        )
        # one waits out the other's hold (server-side, up to its grace), one is refused at once
        for name, grace in (("left", 0.2), ("right", 0.0))
    ]

    async def drain(child: Child) -> None:
        while (line := await child.line()) not in ("DONE", ""):
            assert not line.startswith("ERROR"), line
        assert line == "DONE", (child.lines[-5:], await child.stderr())

    try:
        await asyncio.gather(*(drain(c) for c in children))
        async with asyncio.timeout(SAFETY_S):
            for child in children:
                await child.process.wait()
    finally:
        for child in children:
            await child.kill()
    for child in children:
        assert child.process.returncode == 0
        assert child.lines.count("HELD") == rounds == child.lines.count("RELEASED")
    async with await store.open("race", "read") as reader:
        events = await reader.read()
    await store.aclose()
    # nothing lost or duplicated, and the log is contiguous
    assert [e.seq for e in events] == list(range(2 * rounds * batches * 2))
    tags = [e.to_wire()["data"]["content"][0]["text"] for e in events]
    assert sorted(set(tags)) == sorted(
        f"{n} round {r} batch {b}"
        for n in ("left", "right")
        for r in range(rounds)
        for b in range(batches)
    )
    assert all(tags.count(t) == 2 for t in set(tags))
    # exactly one writer at any time: each holding period is one unbroken run of its batches
    holders = [re.match(r"(\w+) round (\d+)", t).groups() for t in tags]  # type: ignore[union-attr]
    runs = [holders[0]]
    for holder in holders[1:]:
        if holder != runs[-1]:
            runs.append(holder)
    assert len(runs) == 2 * rounds, "a holding period was interleaved with the other writer's"
    assert len(set(runs)) == 2 * rounds
