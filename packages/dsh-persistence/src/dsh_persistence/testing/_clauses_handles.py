"""Clauses about one instance's handles: round trip, arguments, ownership, closing, appends."""

from __future__ import annotations

import asyncio
import io
import tempfile
from pathlib import Path

from dsh_persistence import (
    SessionAlreadyExistsError,
    SessionAlreadyOwnedError,
    SessionHandleClosedError,
    SessionPersistenceNotFoundError,
    SessionReadOnlyError,
    export_session,
)
from dsh_persistence.testing._expect import (
    expect,
    expect_equal,
    expect_events,
    expect_raises,
)
from dsh_persistence.testing._runner import ClauseContext, clause
from dsh_persistence.testing._samples import (
    event,
    header,
    one_turn,
    second_turn,
    user_message,
)
from dsh_session import encode_event, encode_header_line

_RANGE = (TypeError, ValueError)


@clause()
async def clause_round_trip_through_one_write_handle(ctx: ClauseContext) -> None:
    """create returns a write handle with the right id and header; appended events read back
    whole and in slices; an empty append is a no-op; reads past the end are empty."""
    persistence = await ctx.instance()
    handle = await persistence.create(header("round-trip"))
    expect_equal(handle.access, "write", "create(...).access")
    expect_equal(handle.id, "round-trip", "create(...).id")
    expect_equal(handle.inherited_event_count, 0, "create(...).inherited_event_count")
    expect_equal(
        encode_header_line(handle.header), encode_header_line(header("round-trip")), "the header"
    )
    log = one_turn()
    await handle.append(log)
    await handle.append([])
    expect_events(await handle.read(), log, "read()")
    expect_events(await handle.read(3), log[3:], "read(3)")
    expect_events(await handle.read(0, 2), log[:2], "read(0, 2)")
    expect_events(await handle.read(1, 3), log[1:4], "read(1, 3)")
    expect_events(await handle.read(0, 0), [], "read(0, 0)")
    expect_events(await handle.read(6), [], "read(6) at the end")
    expect_events(await handle.read(106), [], "read(106) past the end")
    await handle.flush()
    await handle.close()


@clause()
async def clause_read_rejects_negative_or_non_integer_ranges(ctx: ClauseContext) -> None:
    """read(-1), read(1.5), read(0, -1) and read(0, 2.5) raise TypeError or ValueError saying
    "non-negative integer", on write and read handles."""
    persistence = await ctx.instance()
    writer = await persistence.create(header("read-args"))
    await writer.append(one_turn())
    reader = await persistence.open("read-args", "read")
    for handle in (writer, reader):
        for args in ((-1,), (1.5,), (0, -1), (0, 2.5)):
            await expect_raises(
                _RANGE,
                handle.read(*args),
                f"{handle.access} handle read{args}",
                match="non-negative integer",
            )
    await reader.close()
    await writer.close()


@clause()
async def clause_duplicate_create_while_pending_is_refused(ctx: ClauseContext) -> None:
    """A second create of a pending (created, unmaterialized) id raises
    SessionAlreadyExistsError; once the creator closes without appending, the id is free."""
    persistence = await ctx.instance()
    first = await persistence.create(header("pending"))
    error = await expect_raises(
        SessionAlreadyExistsError, persistence.create(header("pending")), "second create"
    )
    expect_equal(getattr(error, "session_id", None), "pending", "the error's session_id")
    await first.close()
    again = await persistence.create(header("pending"))
    await again.close()


@clause()
async def clause_concurrent_duplicate_creates_one_wins(ctx: ClauseContext) -> None:
    """Of two concurrent creates of one id exactly one succeeds; the other raises
    SessionAlreadyExistsError."""
    persistence = await ctx.instance()
    results = await asyncio.gather(
        persistence.create(header("race")),
        persistence.create(header("race")),
        return_exceptions=True,
    )
    winners = [r for r in results if not isinstance(r, BaseException)]
    losers = [r for r in results if isinstance(r, SessionAlreadyExistsError)]
    others = [r for r in results if isinstance(r, BaseException) and r not in losers]
    for winner in winners:
        await winner.close()
    expect(not others, f"concurrent creates raised something else: {others!r}")
    expect_equal((len(winners), len(losers)), (1, 1), "(successful, refused) creates")


@clause()
async def clause_create_over_stored_session_is_refused(ctx: ClauseContext) -> None:
    """create of an id whose log is stored raises SessionAlreadyExistsError and leaves the
    stored log as it was."""
    persistence = await ctx.instance()
    async with await persistence.create(header("stored")) as handle:
        await handle.append(one_turn())
    await expect_raises(
        SessionAlreadyExistsError, persistence.create(header("stored")), "create over a log"
    )
    async with await persistence.open("stored", "read") as reader:
        expect_events(await reader.read(), one_turn(), "the stored log afterwards")


@clause()
async def clause_open_of_absent_id_is_not_found(ctx: ClauseContext) -> None:
    """open of an absent id raises SessionPersistenceNotFoundError for read and write (naming
    the id); stat of it is None."""
    persistence = await ctx.instance()
    for access in ("read", "write"):
        error = await expect_raises(
            SessionPersistenceNotFoundError,
            persistence.open("absent", access),
            f"open('absent', {access!r})",
        )
        expect_equal(getattr(error, "session_id", None), "absent", "the error's session_id")
    expect_equal(await persistence.stat("absent"), None, "stat('absent')")


@clause()
async def clause_single_write_owner_per_instance(ctx: ClauseContext) -> None:
    """The creator owns the session before materialization and after appends: open(write)
    raises SessionAlreadyOwnedError while open(read) works; after close a new writer continues."""
    persistence = await ctx.instance()
    creator = await persistence.create(header("owned"))
    await expect_raises(
        SessionAlreadyOwnedError, persistence.open("owned", "write"), "open(write) while pending"
    )
    await creator.append(one_turn())
    await expect_raises(
        SessionAlreadyOwnedError, persistence.open("owned", "write"), "open(write) after append"
    )
    async with await persistence.open("owned", "read") as reader:
        expect_events(await reader.read(), one_turn(), "a reader beside the writer")
    await creator.close()
    async with await persistence.open("owned", "write") as writer:
        await writer.append(second_turn())
        expect_events(await writer.read(), one_turn() + second_turn(), "the second writer's log")


@clause()
async def clause_read_handle_refuses_append_and_flush(ctx: ClauseContext) -> None:
    """append and flush on a read handle raise SessionReadOnlyError; the log is unchanged."""
    persistence = await ctx.instance()
    async with await persistence.create(header("read-only")) as handle:
        await handle.append(one_turn())
    async with await persistence.open("read-only", "read") as reader:
        expect_equal(reader.access, "read", "open(..., 'read').access")
        await expect_raises(SessionReadOnlyError, reader.append(second_turn()), "append")
        await expect_raises(SessionReadOnlyError, reader.flush(), "flush")
        expect_events(await reader.read(), one_turn(), "the log after refused writes")


@clause()
async def clause_closed_handle_refuses_every_operation(ctx: ClauseContext) -> None:
    """close is idempotent; afterwards read, append and flush raise SessionHandleClosedError
    (before any argument validation), on write and read handles."""
    persistence = await ctx.instance()
    writer = await persistence.create(header("closed"))
    await writer.append(one_turn())
    await writer.close()
    await writer.close()
    reader = await persistence.open("closed", "read")
    await reader.close()
    await reader.close()
    for handle in (writer, reader):
        what = f"closed {handle.access} handle"
        await expect_raises(SessionHandleClosedError, handle.read(), f"{what}: read()")
        await expect_raises(SessionHandleClosedError, handle.read(-1), f"{what}: read(-1)")
        await expect_raises(
            SessionHandleClosedError, handle.append(second_turn()), f"{what}: append"
        )
        await expect_raises(SessionHandleClosedError, handle.flush(), f"{what}: flush")


@clause()
async def clause_leaving_async_with_releases_ownership(ctx: ClauseContext) -> None:
    """Leaving an `async with` block closes the handle and releases ownership, also when the
    block raises."""
    persistence = await ctx.instance()
    async with await persistence.create(header("scoped")) as handle:
        await handle.append(one_turn())
    try:
        async with await persistence.open("scoped", "write") as handle:
            await handle.append(second_turn())
            raise LookupError("leave the block by an error")
    except LookupError:
        pass
    async with await persistence.open("scoped", "write") as handle:
        expect_events(await handle.read(), one_turn() + second_turn(), "the log")


@clause()
async def clause_append_requires_contiguous_seqs(ctx: ClauseContext) -> None:
    """An append whose seqs do not continue the log raises ValueError naming the expected seq
    ("expected seq 6"), and stores nothing of the batch; the right batch then succeeds."""
    persistence = await ctx.instance()
    async with await persistence.create(header("contiguous")) as handle:
        await handle.append(one_turn())
        await expect_raises(
            ValueError, handle.append(one_turn()), "re-append", match=r"expected seq 6\b"
        )
        await expect_raises(
            ValueError, handle.append(second_turn(7)), "append from 7", match=r"expected seq 6\b"
        )
        gap = [second_turn()[0], second_turn(8)[1]]
        await expect_raises(
            ValueError, handle.append(gap), "append 6 then 8", match=r"expected seq 7\b"
        )
        expect_events(await handle.read(), one_turn(), "the log after refused batches")
        await handle.append(second_turn())
        expect_events(await handle.read(), one_turn() + second_turn(), "the log")


@clause()
async def clause_non_event_or_non_json_data_is_refused_and_stores_nothing(
    ctx: ClauseContext,
) -> None:
    """append of something that is not an event, or of an event whose data is not losslessly
    JSON-serializable, raises TypeError and stores nothing; seq 0 stays free."""
    persistence = await ctx.instance()
    async with await persistence.create(header("non-json")) as handle:
        not_events: list[object] = [
            {"type": "turn/start", "seq": 0, "time": 1, "data": {}},
            "turn/start",
        ]
        for item in not_events:
            await expect_raises(TypeError, handle.append([item]), f"append([{item!r}])")  # type: ignore[list-item]
        tainted = event("mystery/event", 0, {"value": 1}, ignorable=True)
        data = getattr(tainted, "data", None)
        if isinstance(data, dict):  # mutable data: the backend must snapshot and check it
            data["value"] = float("nan")
            await expect_raises(
                TypeError,
                handle.append([tainted]),
                "append of an event whose data holds NaN",
                match="not losslessly JSON-serializable",
            )
        expect_events(await handle.read(), [], "the log after refused appends")
        await handle.append(one_turn())
        expect_events(await handle.read(), one_turn(), "the log")


@clause()
async def clause_appended_events_are_detached_from_the_caller(ctx: ClauseContext) -> None:
    """Mutating an event's data after append does not change what is stored."""
    persistence = await ctx.instance()
    async with await persistence.create(header("detached")) as handle:
        original = event("mystery/event", 0, {"value": 1}, ignorable=True)
        expected = encode_event(original)
        await handle.append([original])
        data = getattr(original, "data", None)
        if isinstance(data, dict):
            data["value"] = 2
        got = await handle.read()
        expect_equal([encode_event(e) for e in got], [expected], "the stored event")


@clause()
async def clause_concurrent_appends_on_one_handle_are_serialized(ctx: ClauseContext) -> None:
    """200 single-event appends started together from separate tasks, in seq order, all
    succeed and the log holds every event once, in order."""
    persistence = await ctx.instance()
    events = [user_message(seq, f"message {seq}") for seq in range(200)]
    async with await persistence.create(header("concurrent")) as handle:
        tasks = [asyncio.create_task(handle.append([e])) for e in events]
        results = await asyncio.gather(*tasks, return_exceptions=True)
        failures = [(i, r) for i, r in enumerate(results) if isinstance(r, BaseException)]
        expect(not failures, f"concurrent appends failed: {failures[:3]!r}")
        await handle.flush()
        expect_events(await handle.read(), events, "the log")
    async with await persistence.open("concurrent", "read") as reader:
        expect_events(await reader.read(), events, "a fresh reader's log")


@clause()
async def clause_failed_write_open_releases_its_claim(ctx: ClauseContext) -> None:
    """A write open that fails (an absent id) fails the same way on retry, never with
    SessionAlreadyOwnedError, and create of that id then succeeds."""
    persistence = await ctx.instance()
    for attempt in ("first", "second"):
        await expect_raises(
            SessionPersistenceNotFoundError,
            persistence.open("claimed", "write"),
            f"{attempt} open('claimed', 'write')",
        )
    async with await persistence.create(header("claimed")) as handle:
        await handle.append(one_turn())


@clause()
async def clause_seeded_session_keeps_its_inherited_event_count(ctx: ClauseContext) -> None:
    """create of a seeded header takes inherited_event_count (>= 1) and every handle reports it;
    a count on an unseeded header, or a seeded one without a count, raises ValueError and
    creates nothing."""
    persistence = await ctx.instance()
    seeded = header("seeded", seed_length=3)
    await expect_raises(
        ValueError, persistence.create(seeded), "seeded header without inherited_event_count"
    )
    await expect_raises(
        ValueError,
        persistence.create(header("seeded"), inherited_event_count=2),
        "unseeded header with inherited_event_count=2",
    )
    expect_equal(await persistence.stat("seeded"), None, "stat after refused creates")
    async with await persistence.create(seeded, inherited_event_count=3) as handle:
        expect_equal(handle.inherited_event_count, 3, "the creator's inherited_event_count")
        await handle.append(one_turn())
    async with await persistence.open("seeded", "read") as reader:
        expect_equal(reader.inherited_event_count, 3, "a reader's inherited_event_count")
        expect_equal(reader.header.is_seeded, True, "a reader's header.is_seeded")


@clause()
async def clause_export_writes_the_header_and_one_line_per_event(ctx: ClauseContext) -> None:
    """export_session writes the header line and one canonical line per logical event, and
    returns the event count, to a file object or a path."""
    persistence = await ctx.instance()
    log = one_turn() + second_turn()
    async with await persistence.create(header("export", cwd="/work")) as handle:
        await handle.append(log)
    expected = b"".join(
        line + b"\n"
        for line in [encode_header_line(header("export", cwd="/work"))]
        + [encode_event(e) for e in log]
    )
    out = io.BytesIO()
    expect_equal(await export_session(persistence, "export", out), 8, "the exported count")
    expect_equal(out.getvalue(), expected, "the exported bytes")
    with tempfile.TemporaryDirectory(prefix="dsh-contract-export-") as scratch:
        path = Path(scratch) / "export.jsonl"
        path.write_bytes(b"left over from an earlier export\n" * 20)
        count = await export_session(persistence, "export", path)
        expect_equal(count, 8, "the count exported to a path")
        expect_equal(path.read_bytes(), expected, f"the bytes exported to {path}")
        count = await export_session(persistence, "export", str(path))
        expect_equal(count, 8, "the count exported to a str path")
        expect_equal(path.read_bytes(), expected, "the bytes exported to a str path")
