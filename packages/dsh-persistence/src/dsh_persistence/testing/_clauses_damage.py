"""Clauses about stored records damaged after they were written: corruption, never repair."""

from __future__ import annotations

from dsh_persistence import SessionPersistence, SessionPersistenceCorruptionError
from dsh_persistence.testing._expect import (
    ContractViolation,
    expect,
    expect_equal,
    expect_raises,
    expect_stat,
)
from dsh_persistence.testing._fixture import DAMAGE_EVENT, REOPEN, REPLACE_RECORD
from dsh_persistence.testing._runner import ClauseContext, clause
from dsh_persistence.testing._samples import header, one_turn, second_turn, user_message
from dsh_session import SessionEvent


def _open_turn() -> list[SessionEvent]:
    """A turn still running: turn/start .. step/end and three more messages, no turn/end."""
    return one_turn()[:5] + [user_message(seq, f"steer {seq}") for seq in (5, 6, 7)]


def _expect_names_the_place(error: BaseException, session_id: str, what: str) -> None:
    expect_equal(getattr(error, "session_id", None), session_id, f"{what}: the error's session_id")
    artifact = getattr(error, "artifact", None)
    expect(artifact, f"{what}: the error names no artifact: {error}")
    where = getattr(error, "line", None) or getattr(error, "row", None)
    expect(
        where is not None or "offset" in str(error),
        f"{what}: the error names no line, row or offset: {error}",
    )


async def _stored_facts(persistence: SessionPersistence, session_id: str) -> object:
    """stat's event_count and size_bytes, or "corrupt" from a stat that reads the body."""
    try:
        snapshot = await expect_stat(persistence, session_id, "stat of a damaged session")
    except SessionPersistenceCorruptionError:
        return "corrupt"
    return {"event_count": snapshot.event_count, "size_bytes": snapshot.size_bytes}


async def _read_all(persistence: SessionPersistence, session_id: str) -> None:
    async with await persistence.open(session_id, "read") as reader:
        events = await reader.read()
    raise ContractViolation(
        f"a read of {session_id!r} damaged in the middle returned {len(events)} events instead "
        "of raising SessionPersistenceCorruptionError"
    )


@clause(DAMAGE_EVENT, REOPEN)
async def clause_damage_in_the_middle_is_corruption_and_is_never_repaired(
    ctx: ClauseContext,
) -> None:
    """A stored event damaged with intact events after it (in an open turn, and in completed
    turns) makes a fresh instance's read and open(write) raise SessionPersistenceCorruptionError
    naming the artifact and the line, row or offset, again on retry; nothing is truncated (stat's
    event_count and size_bytes unchanged, a later open(write) still refuses)."""
    first = await ctx.instance()
    logs = {"damaged-open-turn": _open_turn(), "damaged-completed": one_turn() + second_turn()}
    for session_id, log in logs.items():
        async with await first.create(header(session_id)) as writer:
            await writer.append(log)
            await writer.flush()
    await first.aclose()
    for session_id in logs:
        await ctx.damage_event(session_id, 3)
    for session_id in logs:
        second = await ctx.instance()
        before = await _stored_facts(second, session_id)
        error = await expect_raises(
            SessionPersistenceCorruptionError,
            _read_all(second, session_id),
            f"open(read) and read of {session_id!r} damaged at seq 3",
        )
        _expect_names_the_place(error, session_id, f"the read of {session_id!r}")
        for attempt in ("first", "second"):
            error = await expect_raises(
                SessionPersistenceCorruptionError,
                second.open(session_id, "write"),
                f"the {attempt} open(write) of {session_id!r} damaged at seq 3",
            )
            _expect_names_the_place(error, session_id, f"the {attempt} open(write)")
        third = await ctx.instance()
        expect_equal(
            await _stored_facts(third, session_id),
            before,
            f"stat({session_id!r}) after the refused opens (truncated?)",
        )
        await expect_raises(
            SessionPersistenceCorruptionError,
            third.open(session_id, "write"),
            f"a later instance's open(write) of {session_id!r} (a repaired log opens)",
        )


_BAD_SEQ = 3
_MALFORMED_RECORDS: dict[str, bytes] = {
    "a-list": b"[1,2]",
    "a-string": b'"turn/start"',
    "null": b"null",
    "a-number": b"42",
    "type-a-list": b'{"type":["step/start"],"seq":3,"time":1004,"data":{"turn":1,"step":1}}',
    "type-an-object": b'{"type":{"a":1},"seq":3,"time":1004,"data":{}}',
    "type-a-number": b'{"type":7,"seq":3,"time":1004,"data":{}}',
    "type-missing": b'{"seq":3,"time":1004,"data":{}}',
    "seq-missing": b'{"type":"mystery/event","time":1004,"data":{}}',
    "seq-a-string": b'{"type":"mystery/event","seq":"3","time":1004,"data":{}}',
    "seq-a-float": b'{"type":"mystery/event","seq":3.5,"time":1004,"data":{}}',
    "seq-a-bool": b'{"type":"mystery/event","seq":true,"time":1004,"data":{}}',
    "seq-negative": b'{"type":"mystery/event","seq":-1,"time":1004,"data":{}}',
    "seq-another-event's": b'{"type":"mystery/event","seq":7,"time":1004,"data":{}}',
    "time-missing": b'{"type":"mystery/event","seq":3,"data":{}}',
    "time-a-string": b'{"type":"mystery/event","seq":3,"time":"now","data":{}}',
    "data-missing": b'{"type":"mystery/event","seq":3,"time":1004}',
    "data-not-an-object": b'{"type":"step/start","seq":3,"time":1004,"data":[1]}',
    "a-malformed-packed-row": b'{"type":"text-chunks","seq":3,"time":1004,"data":{}}',
}
"""Records that parse as JSON but are no event (each replaces seq 3 of its own session)."""


def _expect_names_session_and_seq(error: BaseException, session_id: str, what: str) -> None:
    """The error is the seam's corruption error naming the session, the artifact, and where
    (a row named by its seq, or a physical line)."""
    _expect_names_the_place(error, session_id, what)
    row, line = getattr(error, "row", None), getattr(error, "line", None)
    if row is not None:
        expect_equal(row, _BAD_SEQ, f"{what}: the error's row (the seq of the malformed record)")
    elif line is None:
        expect(f"seq {_BAD_SEQ}" in str(error), f"{what}: the error names no row or line: {error}")


@clause(REPLACE_RECORD, REOPEN)
async def clause_malformed_stored_records_are_corruption_naming_the_session_and_seq(
    ctx: ClauseContext,
) -> None:
    """A stored record that parses but is no event (a list, a string, null; a type that is not
    a string; a seq or time missing or of the wrong type; a seq of another event; data missing
    or not an object; a malformed packed row), with intact records after it, makes a fresh
    instance's read and open(write) raise SessionPersistenceCorruptionError naming the session
    and the row (its seq) or the line, never another exception; stat and list either work or
    raise that error."""
    first = await ctx.instance()
    log = one_turn() + second_turn()
    sessions = {f"malformed-{name}": record for name, record in _MALFORMED_RECORDS.items()}
    for session_id in sessions:
        async with await first.create(header(session_id)) as writer:
            await writer.append(log)
            await writer.flush()
    await first.aclose()
    for session_id, record in sessions.items():
        await ctx.replace_record(session_id, _BAD_SEQ, record)
    second = await ctx.instance()
    try:
        await second.list()
    except SessionPersistenceCorruptionError as listed:
        expect(getattr(listed, "session_id", "") in sessions, f"list() raised {listed!r}")
    for session_id, record in sessions.items():
        what = f"{session_id!r} holding {record.decode()} at seq {_BAD_SEQ}"
        try:
            await second.stat(session_id)
        except SessionPersistenceCorruptionError as stated:
            _expect_names_the_place(stated, session_id, f"stat of {what}")
        error = await expect_raises(
            SessionPersistenceCorruptionError,
            _read_all(second, session_id),
            f"open(read) and read of {what}",
        )
        _expect_names_session_and_seq(error, session_id, f"the read of {what}")
        error = await expect_raises(
            SessionPersistenceCorruptionError,
            second.open(session_id, "write"),
            f"open(write) of {what}",
        )
        _expect_names_session_and_seq(error, session_id, f"the open(write) of {what}")
