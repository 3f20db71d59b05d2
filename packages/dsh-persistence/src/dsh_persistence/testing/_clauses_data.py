"""Clauses about what is stored: vocabulary, size, strings, torn tails, snapshots, plain files."""

from __future__ import annotations

import asyncio
import io
import os
from collections.abc import MutableSequence, Sequence
from pathlib import Path

from dsh_persistence import SessionFormatUnsupportedError, SessionPersistence, export_session
from dsh_persistence.testing._expect import (
    ContractViolation,
    expect,
    expect_equal,
    expect_events,
    expect_raises,
)
from dsh_persistence.testing._fixture import CORRUPT_TAIL, PLAIN_PATH, REOPEN
from dsh_persistence.testing._runner import ClauseContext, clause
from dsh_persistence.testing._samples import (
    header,
    nested_event,
    one_turn,
    second_turn,
    streamed_turn,
    unknown_event,
    user_message,
)
from dsh_session import SessionEvent, decode_rows, encode_event, encode_header_line

TEN_MIB = 10 * 1024 * 1024
STRINGS = [
    "plain ascii",
    "héllo wörld — ünïcode",
    "中文 日本語 한국어 עברית العربية",
    "emoji 🎉👍🏽 and a ZWJ family 👨‍👩‍👧",
    "a lone high surrogate \ud800 in the middle",
    "a lone low surrogate \udfff at the end \udfff",
    'controls \u0000 \u001f, separators \u2028 \u2029, quote " backslash \\',
]


async def _read_everywhere(
    ctx: ClauseContext, session_id: str, expected: list[SessionEvent], what: str
) -> None:
    """Read the log through a new handle of a new instance (when reopen is declared)."""
    if ctx.has(REOPEN):
        fresh = await ctx.instance()
        async with await fresh.open(session_id, "read") as reader:
            expect_events(await reader.read(), expected, f"{what}, read by a fresh instance")


@clause()
async def clause_unknown_event_type_is_read_as_opaque_data(ctx: ClauseContext) -> None:
    """append stores an event of a type this build does not know; a read handle returns it as
    data that re-encodes to the same bytes."""
    persistence = await ctx.instance()
    log = [*one_turn(), unknown_event(6)]
    async with await persistence.create(header("unknown")) as writer:
        await writer.append(log)
    async with await persistence.open("unknown", "read") as reader:
        events = await reader.read()
        expect_events(events, log, "the log read back")
        expect_equal(events[6].type, "mystery/event", "the unknown event's type")
    await _read_everywhere(ctx, "unknown", log, "the log")


@clause()
async def clause_write_open_refuses_an_unknown_non_ignorable_type(ctx: ClauseContext) -> None:
    """open(write) of a log holding an unknown type not marked ignorable raises
    SessionFormatUnsupportedError naming the type, again on retry (the failed open released
    its claim); open(read) still works."""
    persistence = await ctx.instance()
    async with await persistence.create(header("refused")) as writer:
        await writer.append([*one_turn(), unknown_event(6)])
    instances = [persistence] + ([await ctx.instance()] if ctx.has(REOPEN) else [])
    for instance in instances:
        for attempt in ("first", "second"):
            error = await expect_raises(
                SessionFormatUnsupportedError,
                instance.open("refused", "write"),
                f"{attempt} open(write) of a log with an unknown type",
                match="mystery/event",
            )
            expect_equal(getattr(error, "event_type", None), "mystery/event", "error.event_type")
        async with await instance.open("refused", "read") as reader:
            expect_equal(len(await reader.read()), 7, "events read after the refusal")


@clause()
async def clause_ignorable_unknown_type_is_accepted_for_write(ctx: ClauseContext) -> None:
    """An unknown type marked ignorable does not stop a write open; it is kept, marker and all,
    and appends continue after it."""
    persistence = await ctx.instance()
    log = [*one_turn(), unknown_event(6, ignorable=True)]
    async with await persistence.create(header("ignorable")) as writer:
        await writer.append(log)
    async with await persistence.open("ignorable", "write") as writer:
        await writer.append(second_turn(7))
        expect_events(await writer.read(), log + second_turn(7), "the log")
    await _read_everywhere(ctx, "ignorable", log + second_turn(7), "the log")


@clause()
async def clause_ten_megabyte_event_round_trips(ctx: ClauseContext) -> None:
    """A single 10 MiB event is stored and read back byte for byte."""
    persistence = await ctx.instance()
    big = [user_message(0, "x" * TEN_MIB + " — the end")]
    async with await persistence.create(header("big")) as writer:
        await writer.append(big)
        await writer.append(second_turn(1))
        await writer.flush()
    expected = big + second_turn(1)
    async with await persistence.open("big", "read") as reader:
        expect_events(await reader.read(), expected, "the log")
        expect_events(await reader.read(1), second_turn(1), "read(1) after the big event")
    await _read_everywhere(ctx, "big", expected, "the log")


@clause()
async def clause_non_ascii_and_lone_surrogate_strings_round_trip(ctx: ClauseContext) -> None:
    """Non-ASCII text, emoji, control characters and lone surrogates survive a write and a
    read unchanged."""
    persistence = await ctx.instance()
    log = [user_message(seq, text) for seq, text in enumerate(STRINGS)]
    async with await persistence.create(header("unicode-é-中-🎉")) as writer:
        await writer.append(log)
    async with await persistence.open("unicode-é-中-🎉", "read") as reader:
        events = await reader.read()
        expect_events(events, log, "the log")
        expect(b"\\ud800" in encode_event(events[4]), "the lone high surrogate was lost")
    await _read_everywhere(ctx, "unicode-é-中-🎉", log, "the log")


@clause(CORRUPT_TAIL, REOPEN)
async def clause_torn_tail_is_never_served_and_is_repaired(ctx: ClauseContext) -> None:
    """After a torn record lands behind the committed log, a fresh reader gets exactly the
    committed events; a writer continues at the committed next seq; a later instance reads the
    repaired log."""
    first = await ctx.instance()
    async with await first.create(header("torn")) as writer:
        await writer.append(one_turn())
    await first.aclose()
    await ctx.corrupt_tail("torn")
    second = await ctx.instance()
    async with await second.open("torn", "read") as reader:
        expect_events(await reader.read(), one_turn(), "a read over a torn tail")
    async with await second.open("torn", "write") as writer:
        expect_events(await writer.read(), one_turn(), "the writer's read over a torn tail")
        await writer.append(second_turn())
    third = await ctx.instance()
    async with await third.open("torn", "read") as reader:
        expect_events(await reader.read(), one_turn() + second_turn(), "the repaired log")


@clause()
async def clause_stat_and_list_agree_with_handles(ctx: ClauseContext) -> None:
    """stat and list give one snapshot per session with the handle's header, the same revision,
    a plausible event_count, size_bytes, updated_at and plain_path; stat of an absent id is
    None."""
    persistence = await ctx.instance()
    cwds = {"listed-a": "/work/a", "listed-b": None}
    for session_id, cwd in cwds.items():
        async with await persistence.create(header(session_id, cwd=cwd)) as writer:
            await writer.append(one_turn())
    listed = await persistence.list()
    ids = sorted(s.header.id for s in listed)
    expect_equal(ids, ["listed-a", "listed-b"], "the ids list() returns")
    for snapshot in listed:
        session_id = snapshot.header.id
        stat = await persistence.stat(session_id)
        expect(stat is not None, f"stat({session_id!r}) returned None")
        assert stat is not None
        async with await persistence.open(session_id, "read") as reader:
            expect_equal(stat.header, reader.header, f"stat({session_id!r}).header")
        expect_equal(snapshot.header, stat.header, f"list/stat header of {session_id!r}")
        expect_equal(snapshot.revision, stat.revision, f"list/stat revision of {session_id!r}")
        expect(stat.event_count in (6, None), f"event_count {stat.event_count}, expected 6")
        expect(stat.size_bytes is None or stat.size_bytes > 0, f"size_bytes {stat.size_bytes!r}")
        expect(
            stat.updated_at is None or isinstance(stat.updated_at, int),
            f"updated_at {stat.updated_at!r} is not epoch milliseconds",
        )
        expect(
            stat.plain_path is None or os.path.isabs(stat.plain_path),
            f"plain_path {stat.plain_path!r} is not absolute",
        )
        expect_equal(
            encode_header_line(snapshot.header),
            encode_header_line(header(session_id, cwd=cwds[session_id])),
            f"the listed header of {session_id!r} (compared to the created one)",
        )
    expect_equal(await persistence.stat("listed-absent"), None, "stat of an absent id")


@clause()
async def clause_revision_is_equal_iff_the_log_is_unchanged(ctx: ClauseContext) -> None:
    """stat twice and list give one revision; opening and closing handles keeps it; an append
    changes it, and list agrees."""
    persistence = await ctx.instance()
    async with await persistence.create(header("revision")) as writer:
        await writer.append(one_turn())

    async def revision() -> str:
        snapshot = await persistence.stat("revision")
        expect(snapshot is not None, "stat returned None")
        assert snapshot is not None
        return snapshot.revision

    first = await revision()
    expect_equal(await revision(), first, "a second stat's revision")
    listed = [s.revision for s in await persistence.list() if s.header.id == "revision"]
    expect_equal(listed, [first], "list()'s revision")
    async with await persistence.open("revision", "read") as reader:
        await reader.read()
    async with await persistence.open("revision", "write") as writer:
        expect_equal(await revision(), first, "the revision while a writer holds the session")
    expect_equal(await revision(), first, "the revision after ownership churn")
    async with await persistence.open("revision", "write") as writer:
        await writer.append(second_turn())
        changed = await revision()
    expect(changed != first, "an append did not change the revision")
    listed = [s.revision for s in await persistence.list() if s.header.id == "revision"]
    expect_equal(listed, [changed], "list()'s revision after the append")


@clause(PLAIN_PATH)
async def clause_plain_path_rows_decode_to_the_logical_events(ctx: ClauseContext) -> None:
    """A materialized session's plain_path (from stat and list) is an absolute UTF-8 JSONL file:
    line 1 is the header line export_session writes, and its rows decode (packed chunk rows
    expanded) to exactly the logical events, while writing and after close."""
    persistence = await ctx.instance()
    writer = await persistence.create(header("plain", cwd="/work/plain"))
    for batch in (one_turn(), streamed_turn(6, turn=2), second_turn(17)):
        await writer.append(batch)
        await writer.flush()
        await _expect_plain_rows_are_the_log(persistence, "plain")
    await writer.close()
    await _expect_plain_rows_are_the_log(persistence, "plain")


async def _expect_plain_rows_are_the_log(persistence: SessionPersistence, session_id: str) -> None:
    snapshot = await persistence.stat(session_id)
    path = snapshot.plain_path if snapshot is not None else None
    expect(path, "stat(...).plain_path is not set")
    assert path is not None
    expect(os.path.isabs(path), f"plain_path {path!r} is not absolute")
    listed = [s.plain_path for s in await persistence.list()]
    expect(path in listed, f"list() does not give plain_path {path!r}: {listed}")
    out = io.BytesIO()
    await export_session(persistence, session_id, out)
    exported = out.getvalue().split(b"\n")
    content = await asyncio.to_thread(Path(path).read_bytes)
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ContractViolation(f"{path} is not UTF-8: {error}") from None
    expect(text.endswith("\n"), f"{path} does not end with a newline")
    lines = content.split(b"\n")[:-1]
    expect(lines, f"{path} is empty")
    expect_equal(lines[0], exported[0], f"line 1 (the header) of {path}")
    try:
        events, used = decode_rows(lines[1:], 0)
    except ValueError as error:
        raise ContractViolation(f"the rows of {path} do not decode: {error}") from None
    expect(used == len(lines) - 1, f"{path} line {used + 2} does not decode as the next row")
    expect_equal([encode_event(e) for e in events], exported[1:-1], f"the logical events of {path}")


def _scribble(value: object) -> None:
    """Change every dict and list nested in ``value`` in place."""
    if isinstance(value, dict):
        for item in list(value.values()):
            _scribble(item)
        value["scribbled"] = True
    elif isinstance(value, list):
        for item in value:
            _scribble(item)
        value.append("scribbled")


def _mutate(result: Sequence[SessionEvent]) -> None:
    """Change the events' data, then the sequence itself when it is mutable."""
    for item in result:
        _scribble(getattr(item, "data", None))
    if isinstance(result, MutableSequence):
        result.reverse()
        result.clear()


@clause()
async def clause_read_results_belong_to_the_caller(ctx: ClauseContext) -> None:
    """Changing what a read returned (the events' nested data, and the sequence itself when it
    is mutable: a list, a tuple or anything else) changes nothing stored or served to later
    reads, of this handle or another one."""
    persistence = await ctx.instance()
    log = [*one_turn(), nested_event(6)]
    async with await persistence.create(header("owned-results")) as writer:
        await writer.append(log)
        _mutate(await writer.read())
        expect_events(await writer.read(), log, "a read after mutating an earlier result")
        _mutate(await writer.read(6))
        expect_events(await writer.read(), log, "a read after mutating a slice")
    async with await persistence.open("owned-results", "read") as reader:
        _mutate(await reader.read())
        expect_events(await reader.read(), log, "a reader's second read")
    async with await persistence.open("owned-results", "read") as reader:
        expect_events(await reader.read(), log, "another reader's read")
