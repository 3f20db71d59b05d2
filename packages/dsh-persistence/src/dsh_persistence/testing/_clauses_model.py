"""A model-based clause: a seeded random run of operations checked against a plain model."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from dsh_persistence import (
    Access,
    SessionAlreadyExistsError,
    SessionAlreadyOwnedError,
    SessionHandle,
    SessionPersistence,
    SessionPersistenceNotFoundError,
)
from dsh_persistence.testing._expect import expect, expect_equal, expect_events, expect_raises
from dsh_persistence.testing._fixture import REOPEN
from dsh_persistence.testing._runner import ClauseContext, clause
from dsh_persistence.testing._samples import event, header, user_message
from dsh_session import SessionEvent

SEED = 20260801
STEPS = 300
IDS = ("model-a", "model-b", "model-c")


def _make(seq: int, rng: random.Random) -> SessionEvent:
    if rng.random() < 0.5:
        return user_message(seq, f"m{seq} " + "é" * rng.randrange(4))
    return event("step/start", seq, {"turn": 1, "step": seq})


@dataclass
class _Model:
    """What the backend must show: per session its events, who writes, who reads."""

    logs: dict[str, list[SessionEvent]] = field(default_factory=dict)
    materialized: set[str] = field(default_factory=set)
    writers: dict[str, SessionHandle] = field(default_factory=dict)
    readers: list[SessionHandle] = field(default_factory=list)


class _Run:
    def __init__(self, persistence: SessionPersistence) -> None:
        self.p = persistence
        self.m = _Model()
        self.rng = random.Random(SEED)

    async def create(self, sid: str, step: str) -> None:
        if sid in self.m.logs:
            await expect_raises(SessionAlreadyExistsError, self.p.create(header(sid)), step)
            return
        self.m.writers[sid] = await self.p.create(header(sid))
        self.m.logs[sid] = []

    async def open(self, sid: str, step: str) -> None:
        write = self.rng.random() < 0.5
        if sid not in self.m.logs:
            access: Access = "write" if write else "read"
            await expect_raises(
                SessionPersistenceNotFoundError, self.p.open(sid, access), f"{step} ({access})"
            )
        elif not write:
            self.m.readers.append(await self.p.open(sid, "read"))
        elif sid in self.m.writers:
            await expect_raises(SessionAlreadyOwnedError, self.p.open(sid, "write"), step)
        else:
            self.m.writers[sid] = await self.p.open(sid, "write")

    async def append(self, sid: str, step: str) -> None:
        writer = self.m.writers.get(sid)
        if writer is None:
            return
        log = self.m.logs[sid]
        batch = [_make(len(log) + i, self.rng) for i in range(self.rng.randrange(5))]
        await writer.append(batch)
        log.extend(batch)
        if batch:
            self.m.materialized.add(sid)

    async def append_out_of_order(self, sid: str, step: str) -> None:
        writer = self.m.writers.get(sid)
        if writer is None:
            return
        log = self.m.logs[sid]
        start = len(log) + self.rng.choice((-2, -1, 1, 2) if len(log) >= 2 else (1, 2))
        batch = [_make(start + i, self.rng) for i in range(1 + self.rng.randrange(3))]
        match = f"expected seq {len(log)}\\b"
        await expect_raises(ValueError, writer.append(batch), step, match=match)

    async def read(self, sid: str, step: str) -> None:
        handles = [h for h in self.m.readers if h.id == sid]
        handles += [self.m.writers[sid]] if sid in self.m.writers else []
        if not handles:
            return
        handle = self.rng.choice(handles)
        log = self.m.logs[sid]
        offset = self.rng.randrange(len(log) + 3)
        length = self.rng.choice((None, 0, 1, 5))
        end = None if length is None else offset + length
        expect_events(await handle.read(offset, length), log[offset:end], f"{step} {offset=}")

    async def close_writer(self, sid: str, step: str) -> None:
        writer = self.m.writers.pop(sid, None)
        if writer is None:
            return
        if sid not in self.m.materialized:  # the session will vanish: its readers go first
            for reader in [h for h in self.m.readers if h.id == sid]:
                self.m.readers.remove(reader)
                await reader.close()
            del self.m.logs[sid]
        await writer.close()

    async def flush(self, sid: str, step: str) -> None:
        if self.rng.random() < 0.3:
            await self.p.flush()
            self.m.materialized.update(self.m.writers)
        elif sid in self.m.writers:
            await self.m.writers[sid].flush()
            self.m.materialized.add(sid)

    async def look(self, sid: str, step: str) -> None:
        snapshot = await self.p.stat(sid)
        expect_equal(snapshot is not None, sid in self.m.logs, f"{step}: stat is not None")
        if snapshot is not None:
            count = len(self.m.logs[sid])
            expect(snapshot.event_count in (count, None), f"{step}: event_count != {count}")
        ids = sorted(s.header.id for s in await self.p.list())
        expect_equal(ids, sorted(self.m.logs), f"{step}: list() ids")

    async def close_reader(self, sid: str, step: str) -> None:
        if self.m.readers:
            await self.m.readers.pop(self.rng.randrange(len(self.m.readers))).close()


@clause()
async def clause_seeded_random_operations_agree_with_a_model(ctx: ClauseContext) -> None:
    """A seeded random run of 300 operations over three ids (create, open read/write, appends
    with right and wrong seqs, reads of random slices, flushes, closes, stat, list) gives
    exactly the outcomes a plain model predicts; a fresh instance then reads the same logs."""
    run = _Run(await ctx.instance())
    actions = (
        run.create, run.open, run.append, run.append, run.append_out_of_order, run.read,
        run.read,
        run.close_writer, run.flush, run.look, run.close_reader,
    )  # fmt: skip
    for number in range(STEPS):
        action = run.rng.choice(actions)
        sid = run.rng.choice(IDS)
        await action(sid, f"step {number}: {action.__name__}({sid!r})")
    for reader in run.m.readers:
        await reader.close()
    for sid in list(run.m.writers):
        await run.close_writer(sid, "final close")
    await run.look(IDS[0], "after the run")
    if ctx.has(REOPEN):
        fresh = await ctx.instance()
        expect_equal(
            sorted(s.header.id for s in await fresh.list()), sorted(run.m.logs), "fresh list()"
        )
        for sid, log in run.m.logs.items():
            async with await fresh.open(sid, "read") as reader:
                expect_events(await reader.read(), log, f"a fresh read of {sid!r}")
