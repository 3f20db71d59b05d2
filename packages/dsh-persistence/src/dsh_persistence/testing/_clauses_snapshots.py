"""Clauses about what stat and list report: the stored header whole, size and time that move."""

from __future__ import annotations

import asyncio
import itertools
import time

from dsh_persistence import SessionPersistence
from dsh_persistence.testing._expect import (
    ContractViolation,
    expect,
    expect_events,
    expect_header,
    expect_listed,
    expect_stat,
)
from dsh_persistence.testing._fixture import REOPEN
from dsh_persistence.testing._runner import ClauseContext, clause
from dsh_persistence.testing._samples import event, header, one_turn, second_turn
from dsh_session import HeaderDecodeError, SessionEvent, SessionHeader

_HOUR_MS = 3_600_000
_GAPS = (0.01, 0.05, 0.2, 1.1, 2.1)  # seconds between appends until updated_at moves


async def _expect_header_everywhere(
    persistence: SessionPersistence,
    session_id: str,
    expected: SessionHeader,
    where: str,
    *,
    write: bool,
) -> None:
    """stat, list and a read handle (and a write handle when ``write``) give ``expected``."""
    stat = await expect_stat(persistence, session_id, where)
    expect_header(stat.header, expected, f"{where}: stat({session_id!r}).header")
    listed = await expect_listed(persistence, session_id, where)
    expect_header(listed.header, expected, f"{where}: the header list() gives")
    accesses = ("read", "write") if write else ("read",)
    for access in accesses:
        async with await persistence.open(session_id, access) as handle:  # type: ignore[arg-type]
            expect_header(handle.header, expected, f"{where}: open(..., {access!r}).header")


@clause()
async def clause_stored_header_keeps_every_field(ctx: ClauseContext) -> None:
    """A subagent's header (cwd, parentSession, origin, delegationDepth, agentPreset) comes
    back field by field from the creator, stat, list and read and write handles, before and
    after the first append, and from a fresh instance."""
    persistence = await ctx.instance()
    created = header("child", cwd="/work/child", parent_session="parent", agent_preset="coder")
    writer = await persistence.create(created)
    expect_header(writer.header, created, "create(...).header")
    expect_header(
        (await expect_stat(persistence, "child", "pending")).header, created, "pending stat"
    )
    await writer.append(one_turn())
    await writer.flush()
    await _expect_header_everywhere(persistence, "child", created, "while writing", write=False)
    await writer.close()
    await _expect_header_everywhere(persistence, "child", created, "after close", write=True)
    if ctx.has(REOPEN):
        fresh = await ctx.instance()
        await _expect_header_everywhere(fresh, "child", created, "a fresh instance", write=True)


def _strange_header() -> SessionHeader:
    """Lone surrogates and non-BMP text in every string of a header the model accepts."""
    for session_id in ("strange-\ud800-🎉", "strange-𝄞-🎉"):
        try:  # an id with a lone surrogate first, if the header model takes one
            return header(
                session_id,
                cwd="/work/\udfff/𝄞-🎉",
                parent_session="parent-\ud83d",
                agent_preset="é-\udc00",
            )
        except HeaderDecodeError:
            continue
    raise RuntimeError("the header model refuses a non-BMP id")


@clause()
async def clause_lone_surrogates_and_non_bmp_text_in_a_header_round_trip(
    ctx: ClauseContext,
) -> None:
    """A header whose cwd, parentSession and agentPreset (and id, where the header model takes
    it) hold lone surrogates and non-BMP text, with an ignorable event whose type and data hold
    lone surrogates, round-trips through handles, stat and list, and a fresh instance."""
    persistence = await ctx.instance()
    created = _strange_header()
    sid = created.id
    odd = event("mystery/\ud800-𝄞", 6, {"note": "\udfff lone 𝄞", "n": 1}, ignorable=True)
    log: list[SessionEvent] = [*one_turn(), odd]
    async with await persistence.create(created) as writer:
        expect_header(writer.header, created, "create(...).header")
        await writer.append(log)
        await writer.flush()
        expect_events(await writer.read(), log, "the writer's read")
    await _expect_header_everywhere(persistence, sid, created, "after close", write=True)
    async with await persistence.open(sid, "read") as reader:
        expect_events(await reader.read(), log, "a reader's read")
    if ctx.has(REOPEN):
        fresh = await ctx.instance()
        await _expect_header_everywhere(fresh, sid, created, "a fresh instance", write=True)
        async with await fresh.open(sid, "write") as writer:
            expect_events(await writer.read(), log, "a fresh writer's read")
            await writer.append(second_turn(7))
        async with await fresh.open(sid, "read") as reader:
            expect_events(await reader.read(), log + second_turn(7), "a fresh reader's read")


@clause()
async def clause_size_bytes_grows_with_appends(ctx: ClauseContext) -> None:
    """When stat gives size_bytes, it grows strictly after every non-empty append and flush."""
    persistence = await ctx.instance()
    async with await persistence.create(header("growing")) as writer:
        sizes: list[int | None] = []
        for batch in (one_turn(), second_turn(6), second_turn(8)):
            await writer.append(batch)
            await writer.flush()
            sizes.append((await expect_stat(persistence, "growing", "after an append")).size_bytes)
    if sizes[0] is None:
        expect(sizes == [None] * 3, f"size_bytes is sometimes None: {sizes}")
        return
    for before, after in itertools.pairwise(sizes):
        expect(
            isinstance(after, int) and isinstance(before, int) and after > before,
            f"size_bytes did not grow with appends: {sizes}",
        )


@clause()
async def clause_updated_at_is_epoch_ms_and_moves_forward(ctx: ClauseContext) -> None:
    """When stat gives updated_at, it is epoch milliseconds (within an hour of the clock, not
    seconds) and grows after a later append (given a real gap), never going back."""
    persistence = await ctx.instance()
    async with await persistence.create(header("clock")) as writer:
        await writer.append(one_turn())
        await writer.flush()
        first = (await expect_stat(persistence, "clock", "after the first append")).updated_at
        if first is None:
            return
        now = time.time() * 1000
        expect(
            isinstance(first, int) and abs(first - now) < _HOUR_MS,
            f"updated_at {first!r} is not epoch milliseconds (the clock says {int(now)})",
        )
        seq = 6
        for gap in _GAPS:
            await asyncio.sleep(gap)
            await writer.append(second_turn(seq))
            await writer.flush()
            seq += 2
            later = (await expect_stat(persistence, "clock", "after a later append")).updated_at
            expect(isinstance(later, int), f"updated_at became {later!r}")
            assert isinstance(later, int)
            expect(later >= first, f"updated_at went back from {first} to {later}")
            if later > first:
                return
        raise ContractViolation(
            f"updated_at stayed {first} through appends over {sum(_GAPS):.1f} s"
        )
