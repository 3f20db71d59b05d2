"""Clauses about other processes: single writer across processes, released when one dies."""

from __future__ import annotations

from dsh_persistence import SessionAlreadyOwnedError
from dsh_persistence.testing._child import FLUSH_SEVERAL
from dsh_persistence.testing._expect import (
    ContractViolation,
    expect,
    expect_events,
    expect_raises,
)
from dsh_persistence.testing._fixture import CROSS_PROCESS
from dsh_persistence.testing._processes import ChildSession
from dsh_persistence.testing._runner import ClauseContext, clause
from dsh_persistence.testing._samples import header, one_turn, second_turn


async def _stored(ctx: ClauseContext, session_id: str) -> None:
    persistence = await ctx.instance()
    async with await persistence.create(header(session_id)) as writer:
        await writer.append(one_turn())


@clause(CROSS_PROCESS)
async def clause_write_owner_in_a_child_process_excludes_this_process(
    ctx: ClauseContext,
) -> None:
    """While a child process holds a write handle, open(write) here raises
    SessionAlreadyOwnedError and open(read) works; after the child closes and exits, open(write)
    succeeds and continues the log."""
    await _stored(ctx, "cross")
    persistence = await ctx.instance()
    child = await ChildSession.start(ctx.fixture, "hold-write", "cross")
    try:
        await child.expect_report("ready", "the child's open(write)")
        await expect_raises(
            SessionAlreadyOwnedError,
            persistence.open("cross", "write"),
            "open(write) while a child process writes",
        )
        async with await persistence.open("cross", "read") as reader:
            expect_events(await reader.read(), one_turn(), "a read beside the child's writer")
        await child.release()
    finally:
        await child.kill()
    async with await persistence.open("cross", "write") as writer:
        await writer.append(second_turn())


@clause(CROSS_PROCESS)
async def clause_ownership_is_released_when_the_owning_child_is_killed(
    ctx: ClauseContext,
) -> None:
    """A child process holding a write handle is killed with SIGKILL (no cleanup runs); then
    open(write) here succeeds and the committed log is intact."""
    await _stored(ctx, "killed")
    persistence = await ctx.instance()
    child = await ChildSession.start(ctx.fixture, "hold-write", "killed")
    try:
        await child.expect_report("ready", "the child's open(write)")
        await expect_raises(
            SessionAlreadyOwnedError,
            persistence.open("killed", "write"),
            "open(write) while a child process writes",
        )
    finally:
        await child.kill()
    async with await persistence.open("killed", "write") as writer:
        expect_events(await writer.read(), one_turn(), "the log after the owner was killed")
        await writer.append(second_turn())


@clause(CROSS_PROCESS)
async def clause_child_process_is_refused_while_this_process_writes(ctx: ClauseContext) -> None:
    """While this process holds a write handle, a child's open(write) raises
    SessionAlreadyOwnedError; once the handle is closed, a child's open(write) succeeds."""
    persistence = await ctx.instance()
    writer = await persistence.create(header("parent-owned"))
    await writer.append(one_turn())
    await writer.flush()
    probe = await ChildSession.start(ctx.fixture, "try-write", "parent-owned")
    try:
        report = await probe.report()
    finally:
        await probe.kill()
    await writer.close()
    if report.get("error") != "SessionAlreadyOwnedError":
        raise ContractViolation(f"the child's open(write) beside this writer reported {report}")
    probe = await ChildSession.start(ctx.fixture, "try-write", "parent-owned")
    try:
        await probe.expect_report("opened", "the child's open(write) after close")
    finally:
        await probe.kill()


@clause(CROSS_PROCESS)
async def clause_service_flush_in_a_child_makes_every_handle_durable_before_it_is_killed(
    ctx: ClauseContext,
) -> None:
    """A child process creates five sessions (three with nothing appended, two with one turn),
    calls persistence.flush() once, reports, and is killed with SIGKILL holding every handle;
    then a fresh instance here lists and reads every one of them, the oldest included."""
    child = await ChildSession.start(ctx.fixture, "flush-several", "killed-after-flush")
    try:
        await child.expect_report("flushed", "the child's create, append and flush()")
    finally:
        await child.kill()
    persistence = await ctx.instance()
    listed = {snapshot.header.id for snapshot in await persistence.list()}
    for suffix, busy in FLUSH_SEVERAL.items():
        session_id = f"killed-after-flush-{suffix}"
        expect(session_id in listed, f"list() after the child was killed omits {session_id!r}")
        async with await persistence.open(session_id, "read") as reader:
            expect_events(
                await reader.read(),
                one_turn() if busy else [],
                f"a read of {session_id!r} after the child that flushed it was killed",
            )
