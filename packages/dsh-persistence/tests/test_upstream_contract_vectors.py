"""Issue 13 §3: the TypeScript harness's persistence contract cases, as facts of our own tests.

Each test names the upstream case it ports (``packages/session/session-persistence/tests/``
``contract.ts`` and ``persistence.spec.ts``, MIT, Copyright (c) 2026 DeepSeek): the inputs and
the expected outputs are the harness's, the code is ours. They run against the seam's pure
validation helpers and the test-only reference backend of ``conftest.py`` (``DirPersistence``:
no real backend here). ``preparations.spec.ts`` tests the coordinator's caches and reservations
only, nothing about validation, so none of its cases is ported; nor are the cancellation cases
(asyncio cancellation replaces the harness's ``AbortSignal``, DESIGN §5, and the suite's
clauses hold it).

Where our seam deliberately differs, the test holds our behaviour and its docstring says how
and why. The difference that recurs: a backend serves what is stored; closing an interrupted
turn (``interrupted_turn_closers``) is the writer's job, where upstream's ``load`` appends the
closers itself.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, cast

import pytest

from dsh_persistence import (
    SessionFormatUnsupportedError,
    SessionPersistence,
    SessionPersistenceCorruptionError,
    SessionPersistenceNotFoundError,
    assert_contiguous,
    check_read_range,
    materialize_append_batch,
    materialize_create_header,
)
from dsh_session import (
    TOOL_NOT_STARTED,
    TOOL_OUTCOME_UNKNOWN,
    Session,
    SessionEvent,
    SessionHeader,
    SessionValidationError,
    decode_event,
    decode_header_line,
    encode_event,
    encode_header_line,
    interrupted_turn_closers,
    make_event,
)

_MODEL: dict[str, Any] = {"provider": "mock", "model": "mock"}


def _meta(session_id: str, cwd: str | None = None) -> SessionHeader:
    """The harness's ``meta(id, cwd?)``: version 0, ``createdAt`` 1000."""
    wire: dict[str, Any] = {"type": "session", "version": 0, "id": session_id, "createdAt": 1000}
    if cwd is not None:
        wire["cwd"] = cwd
    return decode_header_line(json.dumps(wire).encode())[0]


def _one_turn_log() -> list[SessionEvent]:
    """The harness's ``oneTurnLog()`` in our event shapes (seqs 0..5, times 1..6)."""
    return [
        make_event("turn/start", 0, 1, {"turn": 1}),
        make_event(
            "user/message",
            1,
            2,
            {"content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}},
            surface_op="append",
        ),
        make_event("step/start", 2, 3, {"turn": 1, "step": 1}),
        make_event(
            "assistant/message",
            3,
            4,
            {
                "turn": 1,
                "step": 1,
                "content": [{"type": "text", "text": "hello"}],
                "provenance": _MODEL,
            },
            surface_op="append",
        ),
        make_event("step/end", 4, 5, {"turn": 1, "step": 1}),
        make_event("turn/end", 5, 6, {"turn": 1, "reason": {"kind": "completed"}}),
    ]


def _tool_request(seq: int, time: int, turn: int, call_id: str, name: str) -> SessionEvent:
    call = {"type": "tool-call", "id": call_id, "name": name, "arguments": "{}"}
    data: dict[str, Any] = {"turn": turn, "step": 1, "content": [call], "provenance": _MODEL}
    return make_event("assistant/message", seq, time, data, surface_op="append")


@pytest.fixture
def store(tmp_path: Path, variants: dict[str, type]) -> SessionPersistence:
    """A reference backend over an empty directory."""
    return cast(SessionPersistence, variants["DirPersistence"](tmp_path / "sessions"))


@pytest.fixture
def reopen(tmp_path: Path, variants: dict[str, type]) -> Any:
    """Another instance over the same directory (``reopen()``), as another process would be."""
    return lambda: cast(SessionPersistence, variants["DirPersistence"](tmp_path / "sessions"))


async def _write(store: SessionPersistence, header: SessionHeader, *batches: Any) -> None:
    async with await store.create(header) as writer:
        for batch in batches:
            await writer.append(batch)


async def _read_all(store: SessionPersistence, session_id: str) -> list[SessionEvent]:
    async with await store.open(session_id, "read") as reader:
        return list(await reader.read())


async def _revision(store: SessionPersistence, session_id: str) -> str:
    snapshot = await store.stat(session_id)
    assert snapshot is not None
    return snapshot.revision


# -- contract.ts: round trip and header validation --------------------------------------------


async def test_a_session_round_trips_its_header_and_its_events(
    store: SessionPersistence, reopen: Any
) -> None:
    """contract.ts: "round-trips a session: create + append → load returns identical meta and
    byte-identical events"."""
    header, log = _meta("s1", "/work"), _one_turn_log()
    await _write(store, header, log)
    async with await reopen().open("s1", "read") as reader:
        assert (reader.header.version, reader.header.id, reader.header.cwd) == (0, "s1", "/work")
        events = list(await reader.read())
    assert events == log
    assert [encode_event(e) for e in events] == [encode_event(e) for e in log]
    await store.aclose()


async def test_a_fractional_creation_time_is_refused_and_reserves_no_id(
    store: SessionPersistence,
) -> None:
    """contract.ts: "rejects a fractional creation timestamp without reserving its session id".
    Ours refuses it where the header is built (a ``SessionHeader`` is strict), so no backend
    ever sees it; the id then creates normally."""
    with pytest.raises(ValueError, match=r"created_at|createdAt"):
        SessionHeader(id="fractional-created-at", created_at=cast(int, 1.5))
    valid = _meta("fractional-created-at")
    await _write(store, valid, _one_turn_log())
    async with await store.open(valid.id, "read") as reader:
        assert reader.header.created_at == 1000
    await store.aclose()


def test_a_fractional_creation_time_in_an_unvalidated_header_is_refused_at_create() -> None:
    """contract.ts: "rejects a fractional creation timestamp without reserving its session id"
    (upstream: "session metadata createdAt must be a non-negative safe integer"), for a header
    that skipped validation, as ``model_copy(update={"created_at": time.time() * 1000})``
    would build one."""
    header = _meta("fractional-created-at").model_copy(update={"created_at": 1.5})
    with pytest.raises(ValueError, match="would not read back as a valid header line"):
        materialize_create_header(header)


@pytest.mark.parametrize("value", [math.inf, math.nan])
def test_header_metadata_that_is_not_lossless_json_is_refused_at_create(value: float) -> None:
    """persistence.spec.ts: "rejects non-JSON session metadata before registering lazy state"
    (upstream: a BigInt ``createdAt``; Python has no BigInt, so a non-finite number stands in:
    JSON cannot carry it either)."""
    header = _meta("invalid-meta").model_copy(update={"created_at": value})
    with pytest.raises(TypeError, match="not losslessly JSON-serializable"):
        materialize_create_header(header)


# -- contract.ts: crash recovery ----------------------------------------------------------------


async def test_an_interrupted_turn_is_served_as_stored_then_closed_by_the_writer(
    store: SessionPersistence, reopen: Any
) -> None:
    """contract.ts: "crash recovery: load preserves an interrupted (unclosed) turn and closes it
    with turn/end {interrupted}". Differs in who closes: a read serves the ten stored events
    and leaves the revision as it was (upstream's ``inspect``); the writer appends the closers
    (step/end 8, turn/end {interrupted} 9), which changes the revision (upstream's ``load``);
    the next turn continues at seq 10 and everything reads back."""
    header = _meta("interrupted")
    open_turn = [
        make_event("turn/start", 6, 7, {"turn": 2}),
        make_event("step/start", 7, 8, {"turn": 2, "step": 1}),
    ]
    await _write(store, header, _one_turn_log(), open_turn)
    before = await _revision(store, "interrupted")
    stored = await _read_all(reopen(), "interrupted")
    assert [e.seq for e in stored] == list(range(8))
    assert await _revision(store, "interrupted") == before
    closers = interrupted_turn_closers(stored)
    assert [(e.type, e.seq) for e in closers] == [("step/end", 8), ("turn/end", 9)]
    assert closers[-1].to_wire()["data"]["reason"] == {"kind": "interrupted"}
    turn3 = [
        make_event("turn/start", 10, 9, {"turn": 3}),
        make_event("turn/end", 11, 10, {"turn": 3, "reason": {"kind": "completed"}}),
    ]
    async with await reopen().open("interrupted", "write") as writer:
        await writer.append(closers)
        assert await _revision(store, "interrupted") != before
        await writer.append(turn3)
    assert [e.type for e in await _read_all(reopen(), "interrupted")] == [
        *(e.type for e in _one_turn_log()),
        "turn/start",
        "step/start",
        "step/end",
        "turn/end",
        "turn/start",
        "turn/end",
    ]
    await store.aclose()


async def test_an_unstarted_tool_request_gets_a_retryable_synthetic_result(
    store: SessionPersistence, reopen: Any
) -> None:
    """contract.ts: "crash recovery: an unstarted assistant tool request gets a retryable
    synthetic result": the closers answer ``call-x`` (tool-result, ``isError``,
    ``TOOL_NOT_STARTED``) before step/end and turn/end, and the resumed session pairs it."""
    header = _meta("interrupted-toolcall")
    crashed = [
        make_event("turn/start", 6, 7, {"turn": 2}),
        make_event("step/start", 7, 8, {"turn": 2, "step": 1}),
        _tool_request(8, 9, 2, "call-x", "bash"),
    ]
    await _write(store, header, _one_turn_log(), crashed)
    stored = await _read_all(reopen(), "interrupted-toolcall")
    closers = interrupted_turn_closers(stored)
    assert [e.type for e in closers] == ["tool/result", "step/end", "turn/end"]
    data = closers[0].to_wire()["data"]
    assert data["message"]["source"] == {"kind": "tool", "callId": "call-x"}
    (block,) = data["message"]["content"]
    assert (block["type"], block["toolCallId"], block["isError"]) == ("tool-result", "call-x", True)
    assert data["error"]["code"] == TOOL_NOT_STARTED
    async with await reopen().open("interrupted-toolcall", "write") as writer:
        await writer.append(closers)
    resumed = Session(header, await _read_all(reopen(), "interrupted-toolcall"))
    *_, call, answer = resumed.derive_messages()
    assert [(b.type, b.id) for b in call.content] == [("tool-call", "call-x")]  # type: ignore[union-attr]
    (result,) = answer.content
    assert (result.type, result.tool_call_id, result.is_error) == ("tool-result", "call-x", True)  # type: ignore[union-attr]
    await store.aclose()


async def test_a_recorded_tool_call_with_no_result_tells_the_model_to_assess_retry_risk(
    store: SessionPersistence, reopen: Any
) -> None:
    """contract.ts: "crash recovery: a recorded tool call with no result tells the model to
    assess retry risk": ``ToolOutcomeUnknownError`` / ``TOOL_OUTCOME_UNKNOWN`` and the two
    retry sentences."""
    header = _meta("unknown-tool-outcome")
    call: dict[str, Any] = {
        "turn": 1,
        "step": 1,
        "callId": "call-risk",
        "name": "write",
        "arguments": "{}",
    }
    await _write(
        store,
        header,
        [
            make_event("turn/start", 0, 1, {"turn": 1}),
            make_event("step/start", 1, 2, {"turn": 1, "step": 1}),
            _tool_request(2, 3, 1, "call-risk", "write"),
            make_event("tool/call", 3, 4, call),
        ],
    )
    closers = interrupted_turn_closers(await _read_all(reopen(), "unknown-tool-outcome"))
    data = closers[0].to_wire()["data"]
    assert data["error"] == {"name": "ToolOutcomeUnknownError", "code": TOOL_OUTCOME_UNKNOWN}
    (block,) = data["message"]["content"]
    text = block["content"][0]["text"]
    assert "retry only if the operation is read-only or idempotent" in text
    assert "if it may have side effects, first verify external state or ask the user" in text
    assert (block["toolCallId"], block["isError"]) == ("call-risk", True)
    await store.aclose()


# -- contract.ts: listing, reading, revisions ----------------------------------------------------


async def test_a_created_session_never_appended_to_is_not_listed(
    store: SessionPersistence, reopen: Any
) -> None:
    """contract.ts: "list() excludes a created-but-never-appended (zero-event) session".
    Differs while the handle is open: the creating instance lists its pending session (our
    seam's lazy-materialization clause: a handle exists, so ``stat`` and ``list`` show it),
    another instance does not; closed with nothing appended, it never existed for anyone."""
    writer = await store.create(_meta("empty"))
    assert "empty" in [s.header.id for s in await store.list()]
    assert "empty" not in [s.header.id for s in await reopen().list()]
    await writer.close()
    for instance in (store, reopen()):
        assert "empty" not in [s.header.id for s in await instance.list()]
        assert await instance.stat("empty") is None
    await store.aclose()


async def test_a_read_from_a_seq_returns_exactly_the_stored_suffix(
    store: SessionPersistence,
) -> None:
    """contract.ts: "readFrom returns exactly the stored suffix from the requested seq, without
    mutating the log" (``read(offset)`` is ours): the whole log, the suffix from seq 3, nothing
    at and past the end, an open turn served with no closers, not found for an absent id, and
    a negative or fractional offset refused as not a non-negative integer."""
    log = _one_turn_log()
    async with await store.create(_meta("read-from", "/work")) as writer:
        await writer.append(log)
        await writer.append([make_event("turn/start", 6, 7, {"turn": 2})])
    async with await store.open("read-from", "read") as reader:
        assert reader.header.cwd == "/work"
        assert list(await reader.read(0, 6)) == log
        suffix = list(await reader.read(3, 3))
        assert suffix == log[3:]
        assert suffix[0].seq == 3
        assert [e.type for e in await reader.read(6)] == ["turn/start"]
        assert list(await reader.read(7)) == []
        assert list(await reader.read(107)) == []
        with pytest.raises(ValueError, match="non-negative integer"):
            await reader.read(-1)
        with pytest.raises(TypeError, match="non-negative integer"):
            await reader.read(cast(int, 1.5))
    with pytest.raises(SessionPersistenceNotFoundError):
        await store.open("absent-read-from", "read")
    await store.aclose()


@pytest.mark.parametrize(
    ("offset", "kind"), [(-1, ValueError), (1.5, TypeError), (True, TypeError)]
)
def test_the_read_range_helper_refuses_what_read_from_refuses(
    offset: object, kind: type[Exception]
) -> None:
    """contract.ts: "readFrom returns exactly the stored suffix from the requested seq, without
    mutating the log" (the refused offsets, through the helper every backend calls)."""
    with pytest.raises(kind, match="non-negative integer"):
        check_read_range(offset, None)


async def test_revisions_are_stable_and_change_after_an_append(
    store: SessionPersistence, reopen: Any
) -> None:
    """contract.ts: "lists stable lightweight revisions that change after an append"."""
    header = _meta("s2")
    async with await store.create(header) as writer:
        await writer.append(_one_turn_log())
        await writer.flush()
        listed = [s for s in await store.list() if s.header.id == "s2"]
        assert len(listed) == 1
        first = listed[0].revision
        assert [s.revision for s in await store.list() if s.header.id == "s2"] == [first]
        assert await _revision(reopen(), "s2") == first
        await writer.append([make_event("turn/start", 6, 7, {"turn": 2})])
        await writer.flush()
        assert await _revision(store, "s2") != first
    await store.aclose()


# -- contract.ts: append rejections --------------------------------------------------------------


async def test_a_batch_whose_first_seq_is_not_the_next_is_refused_and_stores_nothing(
    store: SessionPersistence, reopen: Any
) -> None:
    """contract.ts: "append rejects a batch whose first seq does not match the stored
    next-seq" (a re-append of seqs 0..5)."""
    with pytest.raises(ValueError, match="expected seq 6 at index 0, got 0"):
        assert_contiguous("s3", _one_turn_log(), 6)
    async with await store.create(_meta("s3")) as writer:
        await writer.append(_one_turn_log())
        with pytest.raises(ValueError, match="expected seq 6"):
            await writer.append(_one_turn_log())
    assert [e.seq for e in await _read_all(reopen(), "s3")] == list(range(6))
    await store.aclose()


async def test_a_batch_with_a_seq_gap_inside_is_refused_and_stores_nothing(
    store: SessionPersistence, reopen: Any
) -> None:
    """contract.ts: "append rejects a mid-batch seq gap"."""
    gapped = [
        make_event("turn/start", 0, 1, {"turn": 1}),
        make_event("step/start", 2, 2, {"turn": 1, "step": 1}),
    ]
    with pytest.raises(ValueError, match="expected seq 1 at index 1, got 2"):
        assert_contiguous("s4", gapped, 0)
    async with await store.create(_meta("s4")) as writer:
        with pytest.raises(ValueError, match="expected seq 1"):
            await writer.append(gapped)
        await writer.append(gapped[:1])
    assert [e.seq for e in await _read_all(reopen(), "s4")] == [0]
    await store.aclose()


def _with_extra(value: object) -> SessionEvent:
    """A user message carrying ``value`` in a plugin-added field, put there after the event was
    built (an event cannot be built holding it)."""
    event = decode_event(
        b'{"type":"user/message","seq":0,"time":1,"surfaceOp":"append","data":{"content":'
        b'[{"type":"text","text":"x"}],"source":{"kind":"user"},"extra":null}}'
    )
    cast(dict[str, Any], event.data)["extra"] = value
    return event


def _cyclic() -> dict[str, Any]:
    cyclic: dict[str, Any] = {"type": "text", "text": "x"}
    cyclic["self"] = cyclic
    return cyclic


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(2**53 + 1, id="an integer no double holds (for BigInt)"),
        pytest.param(math.inf, id="Infinity"),
        pytest.param(math.nan, id="NaN"),
        pytest.param(-0.0, id="negative zero"),
        pytest.param(lambda: 0, id="function"),
        pytest.param(object(), id="symbol-like object"),
        pytest.param({1, 2}, id="set (for Map)"),
        pytest.param(_cyclic(), id="circular"),
    ],
)
async def test_event_data_that_is_not_lossless_json_is_refused_naming_the_event(
    store: SessionPersistence, bad: object
) -> None:
    """contract.ts: "append rejects non-JSON-serializable event data, naming the event type"
    (each value in a plugin-added field of one user message, each in a fresh session; Python
    analogues stand in for BigInt, Symbol and Map). Ours names the index of the event in its
    batch; nothing of the batch is stored."""
    with pytest.raises(TypeError, match="index 0 is not losslessly JSON-serializable"):
        materialize_append_batch("s5", [_with_extra(bad)])
    async with await store.create(_meta("s5")) as writer:
        with pytest.raises(TypeError, match="not losslessly JSON-serializable"):
            await writer.append([_with_extra(bad)])
    assert await store.stat("s5") is None
    await store.aclose()


# -- persistence.spec.ts: stored identity and legacy vocabulary ---------------------------------


def _plant(store: SessionPersistence, session_id: str, lines: list[bytes]) -> Path:
    """Write a raw log for ``session_id`` where the reference backend keeps it."""
    path = cast(Path, store.log_path(session_id))  # type: ignore[attr-defined]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


async def test_a_stored_header_naming_another_session_is_refused_before_any_repair(
    store: SessionPersistence,
) -> None:
    """persistence.spec.ts: "rejects a mismatched backend header before repair or state
    publication" (stored identity mismatch; the torn tail after it stays untouched)."""
    turn = encode_event(make_event("turn/start", 0, 1, {"turn": 1}))
    path = _plant(store, "requested", [encode_header_line(_meta("different")), turn])
    path.write_bytes(path.read_bytes() + b'{"type":"turn/end","se')
    before = path.read_bytes()
    for access in ("read", "write"):
        with pytest.raises(SessionPersistenceCorruptionError, match="different"):
            await store.open("requested", access)
    assert path.read_bytes() == before
    await store.aclose()


_HEADER_DELTA = b'{"type":"request/header-delta","seq":0,"time":1,"data":{"config":{"model":"m"}}}'
_FALLBACK = (
    b'{"type":"request/header","seq":0,"time":1,"data":{"header":{"config":{"model":"legacy"}},'
    b'"reason":"fallback"}}'
)


@pytest.mark.parametrize(
    "line",
    [pytest.param(_HEADER_DELTA, id="header-delta"), pytest.param(_FALLBACK, id="fallback")],
)
async def test_a_stored_legacy_request_event_is_served_and_refused_on_restore(
    store: SessionPersistence, line: bytes
) -> None:
    """persistence.spec.ts: "rejects a legacy stored prefix during live HMR adoption" and
    "rejects a stored legacy fallback header during load" (seq 0). Differs in where: the seam
    serves stored events as data, and the session refuses them when a log is restored into
    it (``SessionValidationError`` at seq 0)."""
    header = _meta("legacy", "/legacy")
    _plant(store, "legacy", [encode_header_line(header), line])
    (event,) = await _read_all(store, "legacy")
    with pytest.raises(SessionValidationError) as info:
        Session(header, [event])
    assert info.value.seq == 0
    await store.aclose()


def test_a_live_producer_cannot_append_a_legacy_request_event() -> None:
    """persistence.spec.ts: "rejects a legacy header delta from a pre-change live producer" and
    "rejects a legacy fallback header buffered by a pre-change live producer": the append
    raises and the session stays empty."""
    session = Session(_meta("legacy-live", "/legacy"))
    with pytest.raises(SessionValidationError, match="retired"):
        session.append("request/header-delta", {"config": {"model": "legacy"}}, time=1)
    fallback: dict[str, Any] = {"header": {"config": {"model": "legacy"}}, "reason": "fallback"}
    with pytest.raises(SessionValidationError, match="fallback"):
        session.append("request/header", fallback, time=1)
    assert len(session.events) == 0


async def test_a_stored_unknown_event_type_reads_but_refuses_a_write_open(
    store: SessionPersistence,
) -> None:
    """persistence.spec.ts: "rejects a stored legacy named-mode event during load" (``mode/set``
    at seq 0). Differs: a type this build does not know is opaque data to a read; a write open
    refuses it (``SessionFormatUnsupportedError`` naming the type), since appending after it
    could break invariants this build does not know."""
    mode = b'{"type":"mode/set","seq":0,"time":1,"data":{"mode":"plan"}}'
    _plant(store, "legacy-mode", [encode_header_line(_meta("legacy-mode", "/legacy")), mode])
    assert [e.type for e in await _read_all(store, "legacy-mode")] == ["mode/set"]
    with pytest.raises(SessionFormatUnsupportedError, match="mode/set") as info:
        await store.open("legacy-mode", "write")
    assert info.value.event_type == "mode/set"
    await store.aclose()
