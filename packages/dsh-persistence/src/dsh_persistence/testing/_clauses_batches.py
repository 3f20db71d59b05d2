"""Clauses about what one append or read may do: refused batches, empty batches, huge ranges."""

from __future__ import annotations

import asyncio

from dsh_persistence import SessionPersistence, SessionPersistenceNotFoundError
from dsh_persistence._snapshot import SessionSnapshot
from dsh_persistence.testing._expect import (
    expect,
    expect_equal,
    expect_events,
    expect_raises,
    expect_stat,
)
from dsh_persistence.testing._fixture import REOPEN
from dsh_persistence.testing._runner import ClauseContext, clause
from dsh_persistence.testing._samples import event, header, one_turn, second_turn
from dsh_session import ROW_TYPES

_GAP = 0.01  # seconds: lets a wrongly bumped updated_at (epoch ms) show


def _facts(snapshot: SessionSnapshot) -> dict[str, object]:
    return {
        "revision": snapshot.revision,
        "event_count": snapshot.event_count,
        "size_bytes": snapshot.size_bytes,
        "updated_at": snapshot.updated_at,
    }


async def _expect_unchanged(
    persistence: SessionPersistence, session_id: str, before: SessionSnapshot, what: str
) -> None:
    after = await expect_stat(persistence, session_id, what)
    for name, value in _facts(before).items():
        expect_equal(_facts(after)[name], value, f"{what}: stat().{name}")


async def _expect_absent_for_a_fresh_instance(
    ctx: ClauseContext, session_id: str, what: str
) -> None:
    if not ctx.has(REOPEN):
        return
    fresh = await ctx.instance()
    expect_equal(await fresh.stat(session_id), None, f"{what}: a fresh instance's stat")
    listed = [s.header.id for s in await fresh.list()]
    expect(session_id not in listed, f"{what}: a fresh instance's list() shows {session_id!r}")


@clause()
async def clause_reserved_packed_row_types_are_refused_at_append(ctx: ClauseContext) -> None:
    """An event typed text-chunks, reasoning-chunks or tool-call-chunks (even ignorable) is
    refused at append with ValueError saying "reserved for packed chunk rows"; nothing of its
    batch is stored (read and stat unchanged) and the handle keeps working."""
    persistence = await ctx.instance()
    async with await persistence.create(header("reserved")) as writer:
        await writer.append(one_turn())
        await writer.flush()
        before = await expect_stat(persistence, "reserved", "before the refused appends")
        for row_type in sorted(ROW_TYPES):
            for ignorable in (None, True):
                reserved = event(row_type, 7, {"chunks": ["a"]}, ignorable=ignorable)
                await expect_raises(
                    ValueError,
                    writer.append([second_turn()[0], reserved]),
                    f"append of an event typed {row_type!r} (ignorable={ignorable})",
                    match="reserved for packed chunk rows",
                )
        expect_events(await writer.read(), one_turn(), "the log after the refused appends")
        await _expect_unchanged(persistence, "reserved", before, "after the refused appends")
        await writer.append(second_turn())
        expect_events(await writer.read(), one_turn() + second_turn(), "the log")
    pending = await persistence.create(header("reserved-pending"))
    await expect_raises(
        ValueError,
        pending.append([event("text-chunks", 0, {"chunks": []}, ignorable=True)]),
        "a created session's first append, typed 'text-chunks'",
        match="reserved for packed chunk rows",
    )
    await _expect_absent_for_a_fresh_instance(ctx, "reserved-pending", "after the refusal")
    await pending.close()
    expect_equal(await persistence.stat("reserved-pending"), None, "stat after close")


@clause()
async def clause_read_with_a_huge_offset_or_length_is_empty_or_to_the_end(
    ctx: ClauseContext,
) -> None:
    """read(2**63) and read(2**100) return no events, read(0, 2**63) and read(3, 2**100) the
    log from that offset to its end, on write and read handles: never OverflowError."""
    persistence = await ctx.instance()
    log = one_turn()
    async with await persistence.create(header("huge-range")) as writer:
        await writer.append(log)
        await writer.flush()
        async with await persistence.open("huge-range", "read") as reader:
            for handle in (writer, reader):
                what = f"{handle.access} handle"
                for offset in (2**63, 2**100):
                    expect_events(await handle.read(offset), [], f"{what}: read({offset})")
                    expect_events(await handle.read(offset, 1), [], f"{what}: read({offset}, 1)")
                expect_events(await handle.read(0, 2**63), log, f"{what}: read(0, 2**63)")
                expect_events(await handle.read(3, 2**100), log[3:], f"{what}: read(3, 2**100)")


@clause()
async def clause_empty_append_changes_nothing(ctx: ClauseContext) -> None:
    """append([]) changes nothing: on a stored session its revision, event_count, size_bytes
    and updated_at stay; on a created session it does not materialize it (a fresh instance does
    not see it, and close still erases it)."""
    persistence = await ctx.instance()
    async with await persistence.create(header("empty-append")) as writer:
        await writer.append(one_turn())
        await writer.flush()
        before = await expect_stat(persistence, "empty-append", "before append([])")
        await asyncio.sleep(_GAP)
        await writer.append([])
        await writer.append(())
        await _expect_unchanged(persistence, "empty-append", before, "after append([])")
        expect_events(await writer.read(), one_turn(), "the log after append([])")
    pending = await persistence.create(header("empty-append-pending"))
    await pending.append([])
    await _expect_absent_for_a_fresh_instance(ctx, "empty-append-pending", "after append([])")
    await pending.close()
    expect_equal(
        await persistence.stat("empty-append-pending"), None, "stat after append([]) and close"
    )
    await expect_raises(
        SessionPersistenceNotFoundError,
        persistence.open("empty-append-pending", "read"),
        "open after append([]) and close",
    )


@clause()
async def clause_rejected_batch_stores_nothing_not_even_its_valid_prefix(
    ctx: ClauseContext,
) -> None:
    """A batch of valid events followed by an item that is not an event raises TypeError and
    stores none of it: the handle and a fresh instance read the log as it was, stat is
    unchanged, and the batch's first seq is still the next one."""
    persistence = await ctx.instance()
    async with await persistence.create(header("prefix")) as writer:
        await writer.append(one_turn())
        await writer.flush()
        before = await expect_stat(persistence, "prefix", "before the rejected batch")
        bad: list[object] = [*second_turn(), "not an event"]
        await expect_raises(TypeError, writer.append(bad), "append(valid events + a string)")  # type: ignore[arg-type]
        await writer.flush()
        expect_events(await writer.read(), one_turn(), "the log after the rejected batch")
        await _expect_unchanged(persistence, "prefix", before, "after the rejected batch")
        if ctx.has(REOPEN):
            fresh = await ctx.instance()
            async with await fresh.open("prefix", "read") as reader:
                expect_events(await reader.read(), one_turn(), "a fresh instance's read")
        await writer.append(second_turn())
    pending = await persistence.create(header("prefix-pending"))
    bad = [*one_turn(), object()]
    await expect_raises(TypeError, pending.append(bad), "a created session's first append")  # type: ignore[arg-type]
    expect_events(await pending.read(), [], "a created session's log after the rejected batch")
    await _expect_absent_for_a_fresh_instance(ctx, "prefix-pending", "after the rejected batch")
    await pending.append(one_turn())
    await pending.close()
