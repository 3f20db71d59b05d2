"""Clauses about a session's lifetime: lazy materialization, flush, close, other instances."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from dsh_persistence import (
    PersistenceClosedError,
    SessionAlreadyExistsError,
    SessionAlreadyOwnedError,
    SessionHandle,
    SessionHandleClosedError,
    SessionPersistence,
    SessionPersistenceNotFoundError,
)
from dsh_persistence.testing._expect import expect, expect_equal, expect_events, expect_raises
from dsh_persistence.testing._fixture import REOPEN
from dsh_persistence.testing._runner import ClauseContext, clause
from dsh_persistence.testing._samples import header, one_turn, second_turn, user_message
from dsh_session import SessionEvent, encode_header_line


async def _ids(persistence: SessionPersistence) -> list[str]:
    snapshots = await persistence.list()
    return sorted(s.header.id for s in snapshots)


@clause()
async def clause_created_session_is_visible_in_its_instance_before_materialization(
    ctx: ClauseContext,
) -> None:
    """A created, unappended session is visible in its own instance: the creator and a read
    handle read [], stat gives its header, list includes it."""
    persistence = await ctx.instance()
    creator = await persistence.create(header("pending-visible"))
    expect_events(await creator.read(), [], "the creator's read()")
    snapshot = await persistence.stat("pending-visible")
    expect(snapshot is not None, "stat of a pending session returned None")
    assert snapshot is not None
    expect_equal(
        encode_header_line(snapshot.header),
        encode_header_line(header("pending-visible")),
        "stat(...).header",
    )
    expect(snapshot.event_count in (0, None), f"event_count {snapshot.event_count}, expected 0")
    expect("pending-visible" in await _ids(persistence), "list() omits a pending session")
    async with await persistence.open("pending-visible", "read") as reader:
        expect_events(await reader.read(), [], "a reader's read()")
    await creator.close()


@clause()
async def clause_close_without_append_erases_a_created_session(ctx: ClauseContext) -> None:
    """A created session closed with nothing appended or flushed never existed: stat is None,
    list omits it, open raises SessionPersistenceNotFoundError."""
    persistence = await ctx.instance()
    await (await persistence.create(header("erased"))).close()
    expect_equal(await persistence.stat("erased"), None, "stat after close without append")
    expect("erased" not in await _ids(persistence), "list() still shows the erased session")
    for access in ("read", "write"):
        await expect_raises(
            SessionPersistenceNotFoundError,
            persistence.open("erased", access),
            f"open(erased, {access!r})",
        )


@clause()
async def clause_reads_see_appends_once_append_returns(ctx: ClauseContext) -> None:
    """Once append returns, every later read sees the events: a read handle opened before, one
    opened after, and stat's event count; a handle's reads never shrink."""
    persistence = await ctx.instance()
    async with await persistence.create(header("fresh")) as writer:
        await writer.append(one_turn())
        async with await persistence.open("fresh", "read") as early:
            expect_events(await early.read(), one_turn(), "the early reader, first read")
            await writer.append(second_turn())
            expect_events(await early.read(), one_turn() + second_turn(), "the early reader")
            async with await persistence.open("fresh", "read") as late:
                expect_events(await late.read(), one_turn() + second_turn(), "the late reader")
        snapshot = await persistence.stat("fresh")
        expect(snapshot is not None, "stat of a written session returned None")
        assert snapshot is not None
        expect(snapshot.event_count in (8, None), f"stat event_count {snapshot.event_count} != 8")


@clause()
async def clause_close_is_idempotent_and_shielded_from_cancellation(ctx: ClauseContext) -> None:
    """Cancelling a close does not stop it: a later close returns once it finished, ownership
    is released and every appended event is kept. Concurrent closes are fine."""
    persistence = await ctx.instance()
    handle = await persistence.create(header("shielded"))
    await handle.append(one_turn())
    task = asyncio.create_task(handle.close())
    await asyncio.sleep(0)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await asyncio.gather(handle.close(), handle.close())
    async with await persistence.open("shielded", "write") as writer:
        expect_events(await writer.read(), one_turn(), "the log after a cancelled close")


@clause()
async def clause_close_drains_appends_started_before_it(ctx: ClauseContext) -> None:
    """An append started before close completes (close drains it) and the events are kept."""
    persistence = await ctx.instance()
    handle = await persistence.create(header("drain"))
    append = asyncio.create_task(handle.append(one_turn()))
    close = asyncio.create_task(handle.close())
    await asyncio.gather(append, close)
    async with await persistence.open("drain", "read") as reader:
        expect_events(await reader.read(), one_turn(), "the log")


@clause(REOPEN)
async def clause_unmaterialized_session_never_exists_for_a_fresh_instance(
    ctx: ClauseContext,
) -> None:
    """A fresh instance does not see a created session with nothing appended or flushed
    (pending, or already closed): stat None, list omits it, open raises NotFound."""
    first = await ctx.instance()
    pending = await first.create(header("never-pending"))
    await (await first.create(header("never-closed"))).close()
    second = await ctx.instance()
    for session_id in ("never-pending", "never-closed"):
        expect_equal(await second.stat(session_id), None, f"fresh stat({session_id!r})")
        expect(session_id not in await _ids(second), f"fresh list() shows {session_id!r}")
        await expect_raises(
            SessionPersistenceNotFoundError,
            second.open(session_id, "read"),
            f"fresh open({session_id!r}, 'read')",
        )
    await pending.close()


@clause(REOPEN)
async def clause_flush_materializes_an_empty_session_durably(ctx: ClauseContext) -> None:
    """flush of a created, empty session publishes it: a fresh instance lists it, stat gives
    its header, a read returns []."""
    first = await ctx.instance()
    handle = await first.create(header("empty-flushed"))
    await handle.flush()
    await handle.close()
    expect(await first.stat("empty-flushed") is not None, "close after flush erased the session")
    second = await ctx.instance()
    snapshot = await second.stat("empty-flushed")
    expect(snapshot is not None, "a fresh stat of a flushed empty session returned None")
    assert snapshot is not None
    expect_equal(
        encode_header_line(snapshot.header),
        encode_header_line(header("empty-flushed")),
        "stat(...).header",
    )
    expect(snapshot.event_count in (0, None), f"event_count {snapshot.event_count}, expected 0")
    expect("empty-flushed" in await _ids(second), "a fresh list() omits the session")
    async with await second.open("empty-flushed", "read") as reader:
        expect_events(await reader.read(), [], "a fresh read")


@clause(REOPEN)
async def clause_service_flush_is_a_barrier_over_every_write_handle(ctx: ClauseContext) -> None:
    """persistence.flush() makes every active write handle durable (an empty created session
    included); a handle closing meanwhile counts as flushed; an erased session stays absent."""
    first = await ctx.instance()
    empty = await first.create(header("barrier-empty"))
    busy = await first.create(header("barrier-busy"))
    await busy.append(one_turn())
    await (await first.create(header("barrier-erased"))).close()
    closing = await first.create(header("barrier-closing"))
    await closing.append(one_turn())
    close = asyncio.create_task(closing.close())
    await first.flush()
    await close
    second = await ctx.instance()
    for session_id, log in (("barrier-empty", []), ("barrier-busy", one_turn())):
        async with await second.open(session_id, "read") as reader:
            expect_events(await reader.read(), log, f"a fresh read of {session_id!r}")
    async with await second.open("barrier-closing", "read") as reader:
        expect_events(await reader.read(), one_turn(), "a fresh read of 'barrier-closing'")
    expect_equal(await second.stat("barrier-erased"), None, "fresh stat('barrier-erased')")
    await empty.close()
    await busy.close()


@clause(REOPEN)
async def clause_service_flush_flushes_every_pending_write_handle(ctx: ClauseContext) -> None:
    """persistence.flush() makes the pending appends of every write handle durable, the oldest
    and the newest, created and reopened ones: a fresh instance reads them all while the
    handles are still open."""
    first = await ctx.instance()
    async with await first.create(header("pending-reopened")) as writer:
        await writer.append(one_turn())
    handles = [await first.open("pending-reopened", "write")]
    await handles[0].append(second_turn())
    expected = {"pending-reopened": one_turn() + second_turn()}
    for number in range(4):
        session_id = f"pending-{number}"
        handles.append(await first.create(header(session_id)))
        log = [user_message(seq, f"{session_id} {seq}") for seq in range(number + 1)]
        await handles[-1].append(log)
        expected[session_id] = log
    for handle in reversed(handles):  # the oldest handle gets the last append
        late = user_message(len(expected[handle.id]), "late")
        await handle.append([late])
        expected[handle.id].append(late)
    await first.flush()
    second = await ctx.instance()
    for session_id, log in expected.items():
        async with await second.open(session_id, "read") as reader:
            expect_events(await reader.read(), log, f"a fresh read of {session_id!r}")
    for handle in handles:
        await handle.close()


@clause(REOPEN)
async def clause_service_flush_materializes_every_one_of_several_pending_sessions(
    ctx: ClauseContext,
) -> None:
    """persistence.flush() with several write handles pending (three created sessions with
    nothing appended, two with appends, a reopened one with appends) makes each durable, the
    oldest first one included: a fresh instance lists and reads every one while the handles
    are still open."""
    first = await ctx.instance()
    async with await first.create(header("several-reopened")) as writer:
        await writer.append(one_turn())
    expected: dict[str, list[SessionEvent]] = {}
    handles: list[SessionHandle] = []
    for number in range(3):
        handles.append(await first.create(header(f"several-empty-{number}")))
        expected[f"several-empty-{number}"] = []
    for number in range(2):
        handles.append(await first.create(header(f"several-busy-{number}")))
        await handles[-1].append(one_turn())
        expected[f"several-busy-{number}"] = one_turn()
    handles.append(await first.open("several-reopened", "write"))
    await handles[-1].append(second_turn())
    expected["several-reopened"] = one_turn() + second_turn()
    await first.flush()
    second = await ctx.instance()
    listed = await _ids(second)
    for session_id, log in expected.items():
        expect(session_id in listed, f"a fresh list() after flush() omits {session_id!r}")
        async with await second.open(session_id, "read") as reader:
            expect_events(await reader.read(), log, f"a fresh read of {session_id!r}")
    for handle in handles:
        await handle.close()


@clause(REOPEN)
async def clause_flushed_events_are_visible_to_a_fresh_instance(ctx: ClauseContext) -> None:
    """Events are durable once a handle's flush returns: a fresh instance reads them while the
    writer still holds the session."""
    first = await ctx.instance()
    async with await first.create(header("durable")) as writer:
        await writer.append(one_turn())
        await writer.flush()
        second = await ctx.instance()
        async with await second.open("durable", "read") as reader:
            expect_events(await reader.read(), one_turn(), "a fresh instance's read")


@clause(REOPEN)
async def clause_write_owner_excludes_writers_of_a_fresh_instance(ctx: ClauseContext) -> None:
    """Single writer across instances: while one instance holds a write handle, a fresh
    instance's open(write) raises SessionAlreadyOwnedError; after close it succeeds."""
    first = await ctx.instance()
    writer = await first.create(header("exclusive"))
    await writer.append(one_turn())
    await writer.flush()
    second = await ctx.instance()
    await expect_raises(
        SessionAlreadyOwnedError,
        second.open("exclusive", "write"),
        "a fresh instance's open(write) while another instance writes",
    )
    await writer.close()
    async with await second.open("exclusive", "write") as taken:
        await taken.append(second_turn())


@clause(REOPEN)
async def clause_fresh_instance_continues_at_the_committed_next_seq(ctx: ClauseContext) -> None:
    """A fresh instance opens a closed session for writing and continues at seq 6; a third
    instance reads seqs 0-7."""
    first = await ctx.instance()
    async with await first.create(header("continue")) as writer:
        await writer.append(one_turn())
    second = await ctx.instance()
    async with await second.open("continue", "write") as writer:
        await writer.append(second_turn())
    third = await ctx.instance()
    async with await third.open("continue", "read") as reader:
        expect_events(await reader.read(), one_turn() + second_turn(), "a third instance's read")


@clause(REOPEN)
async def clause_create_over_stored_session_in_a_fresh_instance_is_refused(
    ctx: ClauseContext,
) -> None:
    """A fresh instance's create of an id stored by another raises SessionAlreadyExistsError."""
    first = await ctx.instance()
    async with await first.create(header("stored-elsewhere")) as writer:
        await writer.append(one_turn())
    second = await ctx.instance()
    await expect_raises(
        SessionAlreadyExistsError,
        second.create(header("stored-elsewhere")),
        "a fresh instance's create over a stored log",
    )


@clause(REOPEN)
async def clause_aclose_closes_every_handle_and_releases_ownership(ctx: ClauseContext) -> None:
    """persistence.aclose() drains and closes every handle (later calls raise
    SessionHandleClosedError) and releases ownership for other instances."""
    first = await ctx.instance()
    writer = await first.create(header("aclose"))
    await writer.append(one_turn())
    reader = await first.open("aclose", "read")
    await first.aclose()
    await expect_raises(SessionHandleClosedError, writer.append(second_turn()), "append")
    await expect_raises(SessionHandleClosedError, reader.read(), "read")
    second = await ctx.instance()
    async with await second.open("aclose", "write") as taken:
        expect_events(await taken.read(), one_turn(), "the log after aclose")


@clause()
async def clause_a_closed_backend_refuses_every_call_naming_it(ctx: ClauseContext) -> None:
    """After persistence.aclose(), create, open, stat, list and flush raise the seam's
    PersistenceClosedError (naming the call and the session), whatever the backend."""
    persistence = await ctx.instance()
    async with await persistence.create(header("closed-backend")) as writer:
        await writer.append(one_turn())
    await persistence.aclose()
    calls: list[tuple[str, str, Callable[[], Awaitable[Any]]]] = [
        ("create", "closed-new", lambda: persistence.create(header("closed-new"))),
        ("open", "closed-backend", lambda: persistence.open("closed-backend", "read")),
        ("stat", "closed-backend", lambda: persistence.stat("closed-backend")),
        ("list", "", persistence.list),
        ("flush", "", persistence.flush),
    ]
    for operation, session_id, call in calls:
        error = await expect_raises(PersistenceClosedError, call(), f"{operation} after aclose")
        assert isinstance(error, PersistenceClosedError)
        expect(
            (error.operation, error.session_id) == (operation, session_id),
            f"{operation} after aclose raised for {(error.operation, error.session_id)}",
        )


@clause()
async def clause_reads_during_appends_see_growing_contiguous_prefixes(ctx: ClauseContext) -> None:
    """Reads racing a writer (a second handle and the writer itself) always return a
    contiguous prefix of the final log, never shorter than the previous read."""
    persistence = await ctx.instance()
    log = [user_message(seq, f"racing {seq}") for seq in range(120)]
    writer = await persistence.create(header("racing"))
    await writer.append(log[:1])
    reader = await persistence.open("racing", "read")
    done = asyncio.Event()

    async def write() -> None:
        for start in range(1, len(log), 7):
            await writer.append(log[start : start + 7])
            await asyncio.sleep(0)
        done.set()

    async def watch(handle: SessionHandle, label: str) -> None:
        seen = 0
        while True:
            finished = done.is_set()
            events = await handle.read()
            seqs = [e.seq for e in events]
            expect(seqs == list(range(len(seqs))), f"{label}: a read returned seqs {seqs[:20]}")
            expect(len(events) >= seen, f"{label}: a read shrank from {seen} to {len(events)}")
            seen = len(events)
            if finished:
                return
            await asyncio.sleep(0)

    await asyncio.gather(write(), watch(reader, "the reader"), watch(writer, "the writer"))
    expect_events(await reader.read(), log, "the final log")
    await reader.close()
    await writer.close()
