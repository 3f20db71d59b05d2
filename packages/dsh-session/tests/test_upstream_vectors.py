"""Issue 13 §3: the TypeScript harness's ``core/session`` test cases, as facts of our own tests.

Each test names the upstream case it ports (``packages/core/session/tests/<spec>``, MIT,
Copyright (c) 2026 DeepSeek): the inputs and the expected outputs are the harness's, the code is
ours. Cases whose input our typed events cannot even carry (a fractional ``time``, a
``surfaceOp`` on a chunk) are covered by the envelope tests instead.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from dsh_session import (
    MAX_SAFE_INTEGER,
    TOOL_NOT_STARTED,
    TOOL_OUTCOME_UNKNOWN,
    ChunkRowError,
    EpochHeader,
    EventDecodeError,
    Session,
    SessionEvent,
    SessionForkError,
    SessionHeader,
    SessionValidationError,
    decode_event,
    decode_row,
    encode_event,
    encode_rows,
    fold_request_header,
    interrupted_turn_closers,
    make_event,
)

HEADER = SessionHeader(id="vectors", created_at=1, cwd="/home/user/project")


def _chunk(seq: int, time: int, chunk: Any, turn: int = 1, step: int = 1) -> SessionEvent:
    return make_event("assistant/chunk", seq, time, {"turn": turn, "step": step, "chunk": chunk})


def _run(kind: str, count: int, seq0: int = 0, index: int = 0) -> list[SessionEvent]:
    return [
        _chunk(seq0 + k, 1000 + 10 * k, {"type": kind, "index": index, "text": f"t{k}"})
        for k in range(count)
    ]


def _rows(events: list[SessionEvent]) -> list[Any]:
    return [json.loads(row) for row in encode_rows(events, pack_chunks=True)]


def _decode_all(events: list[SessionEvent]) -> list[SessionEvent]:
    return [e for row in encode_rows(events, pack_chunks=True) for e in decode_row(row)]


def _verbatim(events: list[SessionEvent]) -> bool:
    return encode_rows(events, pack_chunks=True) == [encode_event(e) for e in events]


# -- chunk-rows.spec.ts: packChunkRuns -------------------------------------------------------


def test_a_text_delta_run_packs_into_one_row_and_round_trips() -> None:
    """packChunkRuns: 'packs a text-delta run into one text-chunks row and round-trips it'."""
    events = _run("text-delta", 5)
    (row,) = _rows(events)
    assert (row["type"], row["seq0"], row["time0"]) == ("text-chunks", 0, 1000)
    assert row["data"] == {
        "turn": 1,
        "step": 1,
        "index": 0,
        "dt": [10, 10, 10, 10],
        "texts": ["t0", "t1", "t2", "t3", "t4"],
    }
    assert _decode_all(events) == events


def test_reasoning_and_tool_call_runs_pack_under_their_own_tags() -> None:
    """packChunkRuns: 'packs reasoning and tool-call runs under their own tags'."""
    reasoning = _run("reasoning-delta", 3)
    calls = [
        _chunk(
            seq,
            1000 + seq,
            {
                "type": "tool-call-delta",
                "index": 1,
                "id": "c1",
                "name": "write",
                "argumentsDelta": f"a{seq}",
            },
        )
        for seq in (3, 4, 5)
    ]
    rows = _rows(reasoning + calls)
    assert [r["type"] for r in rows] == ["reasoning-chunks", "tool-call-chunks"]
    assert rows[1]["data"]["id"] == "c1"
    assert rows[1]["data"]["name"] == "write"
    assert rows[1]["data"]["args"] == ["a3", "a4", "a5"]
    assert _decode_all(reasoning + calls) == reasoning + calls


def test_a_name_less_tool_call_run_keeps_the_name_absent() -> None:
    """packChunkRuns: 'packs a name-less tool-call run and round-trips field absence'."""
    events = [
        _chunk(s, 1000, {"type": "tool-call-delta", "index": 0, "id": "c1", "argumentsDelta": "a"})
        for s in range(3)
    ]
    (row,) = _rows(events)
    assert "name" not in row["data"]
    decoded = _decode_all(events)
    assert decoded == events
    assert all("name" not in e.to_wire()["data"]["chunk"] for e in decoded)


def test_runs_shorter_than_three_stay_verbatim() -> None:
    """packChunkRuns: 'leaves runs shorter than three events verbatim'."""
    assert _verbatim(_run("text-delta", 2))


def test_non_delta_chunks_and_other_events_stay_verbatim_between_runs() -> None:
    """packChunkRuns: 'leaves non-delta chunks and non-chunk events verbatim between runs'."""
    events = [
        _chunk(0, 1000, {"type": "block-start", "index": 0, "blockType": "text"}),
        *_run("text-delta", 3, 1),
        _chunk(4, 1040, {"type": "block-end", "index": 0, "block": {"type": "text", "text": "x"}}),
        make_event("step/end", 5, 1050, {"turn": 1, "step": 1}),
    ]
    rows = _rows(events)
    assert len(rows) == 4
    assert rows[1]["type"] == "text-chunks"
    assert _decode_all(events) == events


def _restep(event: SessionEvent, step: int) -> SessionEvent:
    data = event.to_wire()["data"]
    return _chunk(event.seq, event.time, data["chunk"], 1, step)


@pytest.mark.parametrize(
    "events",
    [
        pytest.param(
            [
                *_run("text-delta", 2),
                _chunk(9, 1020, {"type": "text-delta", "index": 0, "text": "x"}),
            ],
            id="a seq gap",
        ),
        pytest.param([*_run("text-delta", 2), *_run("reasoning-delta", 1, 2)], id="a kind switch"),
        pytest.param(
            [*_run("text-delta", 2), *_run("text-delta", 1, 2, 7)], id="a block-index switch"
        ),
        pytest.param(
            [*_run("text-delta", 3)[:2], _restep(_run("text-delta", 3)[2], 2)], id="a step switch"
        ),
    ],
)
def test_a_run_breaks_and_both_halves_stay_verbatim(events: list[SessionEvent]) -> None:
    """packChunkRuns: 'breaks a run on %s (both halves too short to pack)'."""
    assert _verbatim(events)


def _call(seq: int, id: str, name: str | None = None) -> SessionEvent:
    chunk: dict[str, Any] = {"type": "tool-call-delta", "index": 0, "id": id}
    if name is not None:
        chunk["name"] = name
    chunk["argumentsDelta"] = "a"
    return _chunk(seq, 1000, chunk)


def test_a_tool_call_run_breaks_on_a_call_id_or_name_change() -> None:
    """packChunkRuns: 'breaks a tool-call run on call-id or name change'."""
    assert _verbatim([_call(0, "c1", "w"), _call(1, "c1", "w"), _call(2, "c2", "w")])
    assert _verbatim([_call(0, "c1", "w"), _call(1, "c1", "w"), _call(2, "c1")])


def test_an_off_whitelist_delta_stays_verbatim() -> None:
    """packChunkRuns: 'stores an off-whitelist delta verbatim (extra field, bad type, ...)'
    (the bad-type member; a fractional time is refused by our envelope already)."""
    events = [
        *_run("text-delta", 2),
        _chunk(2, 1020, {"type": "text-delta", "index": 0, "text": 7}),
        _chunk(3, 1030, {"type": "text-delta", "index": 0, "text": "x", "extra": 1}),
    ]
    assert _verbatim(events)


def test_a_time_gap_beyond_the_safe_range_breaks_a_run() -> None:
    """packChunkRuns: 'breaks a run on a time gap beyond safe-integer range'."""
    a, b = -MAX_SAFE_INTEGER, MAX_SAFE_INTEGER - 1
    events = [
        _chunk(0, a, {"type": "text-delta", "index": 0, "text": "x"}),
        _chunk(1, b, {"type": "text-delta", "index": 0, "text": "y"}),
        _chunk(2, b + 1, {"type": "text-delta", "index": 0, "text": "z"}),
    ]
    assert _verbatim(events)
    assert _decode_all(events) == events


@pytest.mark.parametrize(
    "data",
    [
        {
            "turn": 1,
            "step": 1,
            "chunk": {"type": "text-delta", "index": 0, "text": "a"},
            "extra": 1,
        },
        {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": "x", "text": "a"}},
        {
            "turn": 1,
            "step": 1,
            "chunk": {"type": "tool-call-delta", "index": 0, "id": 7, "argumentsDelta": "a"},
        },
        {
            "turn": 1,
            "step": 1,
            "chunk": {
                "type": "tool-call-delta",
                "index": 0,
                "id": "c",
                "name": 7,
                "argumentsDelta": "a",
            },
        },
    ],
)
def test_a_delta_with_an_off_whitelist_envelope_stays_verbatim(data: Any) -> None:
    """packChunkRuns: 'stores a delta with an off-whitelist data envelope verbatim'."""
    events = [make_event("assistant/chunk", seq, 1000, data) for seq in range(3)]
    assert _verbatim(events)


# -- chunk-rows.spec.ts: decodeStorageRecord -------------------------------------------------


def test_timestamps_come_back_through_negative_gaps() -> None:
    """decodeStorageRecord: 'reconstructs timestamps through negative dt gaps (clock stepped
    back)'."""
    events = [
        _chunk(0, 1000, {"type": "text-delta", "index": 0, "text": "a"}),
        _chunk(1, 990, {"type": "text-delta", "index": 0, "text": "b"}),
        _chunk(2, 995, {"type": "text-delta", "index": 0, "text": "c"}),
    ]
    (row,) = _rows(events)
    assert row["data"]["dt"] == [-10, 5]
    assert _decode_all(events) == events


_ROW = {"turn": 1, "step": 1, "index": 0, "dt": [], "texts": ["a"]}


@pytest.mark.parametrize(
    "row",
    [
        pytest.param(
            {"type": "text-chunks", "seq0": 0, "time0": 1, "data": "x"}, id="non-object data"
        ),
        pytest.param(
            {"type": "text-chunks", "seq0": 0, "time0": 1, "data": _ROW, "extra": 1},
            id="envelope with extra keys",
        ),
        pytest.param(
            {"type": "text-chunks", "seq0": -1, "time0": 1, "data": _ROW}, id="negative seq0"
        ),
        pytest.param(
            {"type": "text-chunks", "seq0": 0, "time0": 1.5, "data": _ROW}, id="fractional time0"
        ),
        pytest.param(
            {
                "type": "text-chunks",
                "seq0": 0,
                "time0": 1,
                "data": {"turn": 1, "step": 1, "index": 0, "dt": [], "args": ["a"]},
            },
            id="data shape mismatch",
        ),
        pytest.param(
            {"type": "text-chunks", "seq0": 0, "time0": 1, "data": {**_ROW, "texts": [7]}},
            id="non-string member",
        ),
        pytest.param(
            {"type": "text-chunks", "seq0": 0, "time0": 1, "data": {**_ROW, "texts": []}},
            id="empty member list",
        ),
        pytest.param(
            {
                "type": "text-chunks",
                "seq0": 0,
                "time0": 1,
                "data": {**_ROW, "dt": [1, 2], "texts": ["a", "b"]},
            },
            id="dt arity mismatch",
        ),
        pytest.param(
            {
                "type": "text-chunks",
                "seq0": 0,
                "time0": 1,
                "data": {**_ROW, "dt": [0.5], "texts": ["a", "b"]},
            },
            id="fractional dt gap",
        ),
        pytest.param(
            {
                "type": "text-chunks",
                "seq0": MAX_SAFE_INTEGER,
                "time0": 1,
                "data": {**_ROW, "dt": [0, 0], "texts": ["a", "b", "c"]},
            },
            id="member seq leaving safe range",
        ),
        pytest.param(
            {
                "type": "text-chunks",
                "seq0": 0,
                "time0": MAX_SAFE_INTEGER,
                "data": {**_ROW, "dt": [1], "texts": ["a", "b"]},
            },
            id="member time leaving safe range",
        ),
        pytest.param(
            {"type": "text-chunks", "seq0": 0, "time0": 1, "data": {**_ROW, "turn": "x"}},
            id="non-numeric turn",
        ),
        pytest.param(
            {
                "type": "tool-call-chunks",
                "seq0": 0,
                "time0": 1,
                "data": {"turn": 1, "step": 1, "index": 0, "dt": [], "args": ["a"]},
            },
            id="tool-call row without id",
        ),
        pytest.param(
            {
                "type": "tool-call-chunks",
                "seq0": 0,
                "time0": 1,
                "data": {"turn": 1, "step": 1, "index": 0, "id": 7, "dt": [], "args": ["a"]},
            },
            id="tool-call row with non-string id",
        ),
        pytest.param(
            {
                "type": "tool-call-chunks",
                "seq0": 0,
                "time0": 1,
                "data": {
                    "turn": 1,
                    "step": 1,
                    "index": 0,
                    "id": "c",
                    "name": 7,
                    "dt": [],
                    "args": ["a"],
                },
            },
            id="tool-call row with non-string name",
        ),
    ],
)
def test_a_malformed_row_is_refused(row: Any) -> None:
    """decodeStorageRecord: 'throws on %s' (/malformed .* storage row/)."""
    with pytest.raises(ChunkRowError, match=r"malformed .* storage row"):
        decode_row(json.dumps(row, separators=(",", ":")))


# -- request-header.spec.ts -----------------------------------------------------------------

CONFIG = {"provider": "mock", "model": "m"}


def _tool(name: str, description: str = "d") -> dict[str, Any]:
    return {"name": name, "description": description, "parameters": {"type": "object"}}


def _canonical(wire: dict[str, Any]) -> EpochHeader:
    return EpochHeader.from_wire(wire).canonical()


def test_empty_optional_header_fields_fold_to_absence() -> None:
    """canonicalHeader: 'normalizes empty optional fields to absence and preserves populated
    fields'."""
    empty = _canonical({"config": CONFIG, "adapterDefaults": {}, "system": "", "tools": []})
    assert empty.to_wire() == {"config": CONFIG}
    full = {
        "config": {**CONFIG, "maxTokens": 256_000},
        "adapterDefaults": {"maxTokens": True},
        "system": "s",
        "tools": [_tool("a")],
    }
    assert _canonical(full).to_wire() == full


def test_header_equality_covers_every_canonical_field_and_tool_order() -> None:
    """headerEquals: 'compares every canonical field and preserves tool order'."""
    base = {"config": CONFIG, "system": "s", "tools": [_tool("a")]}
    assert _canonical(base) == _canonical(json.loads(json.dumps(base)))
    different = [
        {**base, "config": {"provider": "mock", "model": "other"}},
        {**base, "config": {**CONFIG, "reasoningEffort": "high"}},
        {**base, "system": "other"},
        {**base, "tools": []},
        {**base, "tools": [_tool("a", "changed")]},
    ]
    for other in different:
        assert _canonical(base) != _canonical(other), other
    with_max = {**base, "config": {**CONFIG, "maxTokens": 256_000}}
    assert _canonical(with_max) != _canonical({**with_max, "adapterDefaults": {"maxTokens": True}})
    assert _canonical({"config": CONFIG, "tools": [_tool("a"), _tool("b")]}) != _canonical(
        {"config": CONFIG, "tools": [_tool("b"), _tool("a")]}
    )


def test_absent_and_empty_tool_lists_are_equal() -> None:
    """headerEquals: 'treats absent and empty tool arrays as equivalent canonical absence'."""
    assert _canonical({"config": CONFIG}) == _canonical({"config": CONFIG, "tools": []})


def test_folding_with_no_header_gives_none() -> None:
    """foldRequestHeader: 'returns the supplied baseline when no snapshot follows' (we have no
    baseline argument: no snapshot is ``None``)."""
    assert fold_request_header([make_event("turn/start", 0, 1, {"turn": 1})]) is None


def test_folding_takes_the_latest_full_snapshot() -> None:
    """foldRequestHeader: 'takes the latest full snapshot and skips unrelated events'."""
    session = Session(HEADER)
    session.append("turn/start", {"turn": 1}, time=1)
    first = {"header": {"config": CONFIG, "system": "first"}, "reason": "initial"}
    session.append("request/header", first, time=2)
    user = {"content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}}
    session.append("user/message", user, time=3)
    latest = {"header": {"config": {"provider": "mock", "model": "other"}, "tools": []}}
    session.append("request/header", {**latest, "reason": "change"}, time=4)
    folded = fold_request_header(session.events)
    assert folded is not None
    assert folded.to_wire() == {"config": {"provider": "mock", "model": "other"}}
    assert session.request_header == folded


def test_request_header_delta_and_the_fallback_reason_are_refused() -> None:
    """legacy request-header format: 'rejects request/header-delta in seeds and untyped appends'
    and 'rejects the removed fallback reason in seeds and untyped appends'."""
    delta = make_event("request/header-delta", 0, 1, {"header": {}})
    with pytest.raises(SessionValidationError, match="retired"):
        Session(HEADER, [delta])
    with pytest.raises(SessionValidationError, match="retired"):
        Session(HEADER).append("request/header-delta", {}, time=1)
    fallback = {"header": {"config": CONFIG}, "reason": "fallback"}
    with pytest.raises(SessionValidationError, match="fallback"):
        Session(HEADER, [make_event("request/header", 0, 1, fallback)])
    with pytest.raises(SessionValidationError, match="fallback"):
        Session(HEADER).append("request/header", fallback, time=1)


# -- repair.spec.ts: interruptedTurnClosers -------------------------------------------------


def _start(turn: int, seq: int) -> SessionEvent:
    return make_event("turn/start", seq, seq, {"turn": turn})


def _step(turn: int, seq: int, step: int = 1) -> SessionEvent:
    return make_event("step/start", seq, seq, {"turn": turn, "step": step})


def _asks(turn: int, seq: int, *calls: str) -> SessionEvent:
    message = {
        "role": "assistant",
        "content": [
            {"type": "tool-call", "id": call, "name": "bash", "arguments": "{}"} for call in calls
        ],
        "source": {"kind": "model", "provider": "mock", "model": "mock"},
    }
    data = {"turn": turn, "step": 1, "message": message}
    return make_event("assistant/message", seq, seq, data, surface_op="append")


def _answer(turn: int, seq: int, call: str) -> SessionEvent:
    message = {
        "role": "user",
        "source": {"kind": "tool", "callId": call},
        "content": [{"type": "tool-result", "toolCallId": call, "content": [], "isError": False}],
    }
    data = {"turn": turn, "step": 1, "message": message}
    return make_event("tool/result", seq, seq, data, surface_op="append")


def _called(turn: int, seq: int, call: str) -> SessionEvent:
    data = {"turn": turn, "step": 1, "callId": call, "name": "bash", "arguments": "{}"}
    return make_event("tool/call", seq, seq, data)


def _types(events: list[SessionEvent]) -> list[str]:
    return [e.type for e in events]


def test_a_balanced_or_empty_log_needs_no_closers() -> None:
    """interruptedTurnClosers: 'returns nothing for a balanced log (ends on turn/end)' and
    'returns nothing for an empty log'."""
    end = make_event("turn/end", 1, 1, {"turn": 1, "reason": {"kind": "completed"}})
    assert interrupted_turn_closers([_start(1, 0), end]) == []
    assert interrupted_turn_closers([]) == []


def test_an_open_turn_without_a_step_gets_only_turn_end_interrupted() -> None:
    """interruptedTurnClosers: 'closes an open turn with no open step'."""
    (end,) = interrupted_turn_closers([_start(1, 0)])
    assert (end.type, end.seq) == ("turn/end", 1)
    assert end.to_wire()["data"]["reason"] == {"kind": "interrupted"}


def test_an_open_step_closes_before_the_turn() -> None:
    """interruptedTurnClosers: 'closes an open step before the turn (step/end then turn/end)'."""
    closers = interrupted_turn_closers([_start(1, 0), _step(1, 1)])
    assert _types(closers) == ["step/end", "turn/end"]
    assert [c.seq for c in closers] == [2, 3]


def test_a_requested_call_with_no_recorded_start_is_not_started() -> None:
    """interruptedTurnClosers: 'marks an assistant tool request with no recorded call as not
    started'."""
    closers = interrupted_turn_closers([_start(2, 0), _step(2, 1), _asks(2, 2, "call-1")])
    assert _types(closers) == ["tool/result", "step/end", "turn/end"]
    assert [c.seq for c in closers] == [3, 4, 5]
    data = closers[0].to_wire()["data"]
    assert (data["turn"], data["step"]) == (2, 1)
    assert data["message"]["source"]["callId"] == "call-1"
    assert data["message"]["content"][0]["isError"] is True
    assert data["error"]["code"] == TOOL_NOT_STARTED
    assert data["message"]["content"][0]["content"] == [
        {
            "type": "text",
            "text": "The tool call was interrupted before the Harness recorded it as started. "
            "Retry it if it is still needed.",
        }
    ]


def test_an_answered_call_gets_no_synthetic_result() -> None:
    """interruptedTurnClosers: 'does NOT synthesize a result for a tool-call that already has
    one'."""
    log = [_start(2, 0), _step(2, 1), _asks(2, 2, "call-1"), _answer(2, 3, "call-1")]
    assert _types(interrupted_turn_closers(log)) == ["step/end", "turn/end"]


def test_no_result_is_synthesized_after_the_owning_step_closed() -> None:
    """interruptedTurnClosers: 'does NOT synthesize a result after the owning step already
    closed'."""
    log = [
        _start(2, 0),
        _step(2, 1),
        _asks(2, 2, "call-1"),
        make_event("step/end", 3, 3, {"turn": 2, "step": 1}),
    ]
    (end,) = interrupted_turn_closers(log)
    assert (end.type, end.seq) == ("turn/end", 4)


def test_only_the_open_turn_gets_synthetic_results() -> None:
    """interruptedTurnClosers: 'synthesizes results only for the still-open turn, not a
    committed earlier turn'."""
    log = [
        _start(1, 0),
        _step(1, 1),
        _asks(1, 2, "old-call"),
        _answer(1, 3, "old-call"),
        make_event("step/end", 4, 4, {"turn": 1, "step": 1}),
        make_event("turn/end", 5, 5, {"turn": 1, "reason": {"kind": "completed"}}),
        _start(2, 6),
        _step(2, 7),
        _asks(2, 8, "new-call"),
    ]
    closers = interrupted_turn_closers(log)
    assert _types(closers) == ["tool/result", "step/end", "turn/end"]
    assert closers[0].to_wire()["data"]["message"]["source"]["callId"] == "new-call"


def test_each_unanswered_call_gets_a_result_in_log_order() -> None:
    """interruptedTurnClosers: 'synthesizes a result for each of multiple unanswered calls, in
    log order' (call-a answered, call-b not)."""
    log = [_start(1, 0), _step(1, 1), _asks(1, 2, "call-a", "call-b"), _answer(1, 3, "call-a")]
    closers = interrupted_turn_closers(log)
    assert _types(closers) == ["tool/result", "step/end", "turn/end"]
    assert closers[0].to_wire()["data"]["message"]["source"]["callId"] == "call-b"


def test_a_started_call_gets_outcome_unknown_citing_its_tool_call() -> None:
    """interruptedTurnClosers: 'synthesized tool/result carries surfaceOp and sourceEventSeqs
    when tool/call was logged'."""
    log = [_start(1, 0), _step(1, 1), _asks(1, 2, "call-1"), _called(1, 3, "call-1")]
    closers = interrupted_turn_closers(log)
    assert _types(closers) == ["tool/result", "step/end", "turn/end"]
    result = closers[0]
    assert result.surface_op == "append"
    assert result.source_event_seqs == (3,)
    data = result.to_wire()["data"]
    assert data["error"] == {"name": "ToolOutcomeUnknownError", "code": TOOL_OUTCOME_UNKNOWN}
    text = data["message"]["content"][0]["content"][0]["text"]
    assert "retry only if the operation is read-only or idempotent" in text
    assert "first verify external state or ask the user" in text


def test_a_tool_call_without_a_requesting_message_gets_no_result() -> None:
    """interruptedTurnClosers: 'handles tool/call without a matching assistant/message entry
    gracefully'."""
    log = [_start(1, 0), _step(1, 1), _called(1, 2, "orphan")]
    assert _types(interrupted_turn_closers(log)) == ["step/end", "turn/end"]


# -- fork.spec.ts: SessionStore.fork --------------------------------------------------------


def _turn(session: Session, turn: int, reason: Any = None) -> None:
    session.append("turn/start", {"turn": turn}, time=turn * 10)
    user = {"content": [{"type": "text", "text": "hello"}], "source": {"kind": "user"}}
    session.append("user/message", user, time=turn * 10 + 1)
    session.append(
        "turn/end", {"turn": turn, "reason": reason or {"kind": "completed"}}, time=turn * 10 + 2
    )


def test_forking_an_empty_session_gives_an_empty_child_with_lineage() -> None:
    """SessionStore.fork: 'forks an empty live session as an empty child with lineage
    metadata'."""
    child = Session(HEADER).fork("child", created_at=5)
    assert child.next_seq == 0
    assert child.header.parent_session == HEADER.id
    assert not child.header.is_seeded


def test_the_default_boundary_is_the_whole_balanced_log_and_log_only_events_after_it() -> None:
    """SessionStore.fork: 'forks the latest completed boundary by default into detached frozen
    seed events' and 'includes stable log-only events appended after a closed turn'."""
    source = Session(HEADER)
    _turn(source, 1)
    source.append("test/log-only", {"value": "after execution"}, time=99)
    child = source.fork("child", created_at=5)
    assert list(child.events)[:-1] == list(source.events)
    assert child.events[-2].to_wire()["data"] == {"value": "after execution"}
    assert child.events[-1].to_wire()["data"] == {"inherited": True}  # our seed's end marker
    assert child.inherited_event_count == source.next_seq
    assert child.header.is_seeded
    assert child.derive_messages() == source.derive_messages()


def test_an_earlier_boundary_works_while_the_source_has_an_open_tail() -> None:
    """SessionStore.fork: 'forks from an earlier turn boundary even when the source currently
    has an open tail'."""
    source = Session(HEADER)
    _turn(source, 1)
    boundary = source.next_seq - 1
    source.append("turn/start", {"turn": 2}, time=100)
    child = source.fork("child", boundary=boundary, created_at=5)
    assert list(child.events)[:-1] == list(source.events)[: boundary + 1]
    assert child.events[-1].type == "session/end-seed"
    assert child.inherited_event_count == boundary + 1


@pytest.mark.parametrize(
    "reason",
    [
        {"kind": "completed"},
        {"kind": "aborted", "reason": {"kind": "user"}},
        {"kind": "blocked"},
        {"kind": "error", "error": {"message": "m", "code": "UNKNOWN"}},
        {"kind": "max-tokens"},
        {"kind": "interrupted"},
    ],
)
def test_every_turn_end_reason_is_a_fork_boundary(reason: Any) -> None:
    """SessionStore.fork: 'accepts every turn/end reason as an explicit fork boundary'."""
    source = Session(HEADER)
    _turn(source, 1, reason)
    child = source.fork("child", boundary=source.next_seq - 1, created_at=5)
    assert child.events[-2].type == "turn/end"
    assert child.inherited_event_count == source.next_seq


@pytest.mark.parametrize("boundary", [-1, 3, MAX_SAFE_INTEGER + 1])
def test_an_invalid_boundary_is_refused(boundary: int) -> None:
    """SessionStore.fork: 'rejects invalid boundaries before creating a child' (negative, past
    the end, unsafe; an empty session has no boundary 0)."""
    source = Session(HEADER)
    _turn(source, 1)
    with pytest.raises(SessionForkError) as caught:
        source.fork("child", boundary=boundary)
    assert caught.value.code == "INVALID_BOUNDARY"
    with pytest.raises(SessionForkError) as empty:
        Session(HEADER).fork("child", boundary=0)
    assert empty.value.code == "INVALID_BOUNDARY"


def test_a_boundary_inside_an_open_turn_is_refused() -> None:
    """SessionStore.fork: 'rejects selected slices whose boundary is inside an open turn'."""
    source = Session(HEADER)
    _turn(source, 1)
    source.append("turn/start", {"turn": 2}, time=100)
    source.append("step/start", {"turn": 2, "step": 1}, time=101)
    for boundary in (source.next_seq - 2, source.next_seq - 1):
        with pytest.raises(SessionForkError) as caught:
            source.fork("child", boundary=boundary)
        assert caught.value.code == "OPEN_TURN"


# -- surface.spec.ts ------------------------------------------------------------------------


def _user_text(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "source": {"kind": "user"}}


def _surface_session(count: int) -> Session:
    session = Session(HEADER)
    for k in range(count):
        session.append("user/message", _user_text(f"m{k}"), time=k)
    return session


def _replace(session: Session, start: int, end: int, sources: list[int]) -> SessionEvent:
    return session.append(
        "user/message",
        _user_text("summary"),
        surface_op={"op": "replace", "start": start, "end": end},
        source_event_seqs=sources,
        time=100,
    )


def test_append_markers_fold_into_ordered_nodes() -> None:
    """SurfaceManager: 'folds an ordered sequence list from surfaceOp: append markers' and
    'empty surface yields empty nodes'."""
    assert Session(HEADER).surface == ()
    assert _surface_session(3).surface == (0, 1, 2)


def test_a_replace_splices_only_its_range() -> None:
    """SurfaceManager: 'replace with both ends at real nodes splices only the range' and
    'replace starting at non-head position preserves surrounding order'."""
    session = _surface_session(4)
    _replace(session, 1, 2, [1, 2])
    assert session.surface == (0, 4, 3)
    assert session.replace_generation == 1
    texts = [m.content[0].text for m in session.derive_messages()]  # type: ignore[union-attr]
    assert texts == ["m0", "summary", "m3"]


def test_a_single_node_replacement() -> None:
    """SurfaceManager: 'single-node replacement (start === end)'."""
    session = _surface_session(2)
    _replace(session, 1, 1, [1])
    assert session.surface == (0, 2)


@pytest.mark.parametrize(
    ("start", "end", "problem"),
    [
        (7, 1, "seq 7, which is not a surface node"),
        (0, 7, "seq 7, which is not a surface node"),
        (2, 0, "start 2 comes after end 0"),
    ],
)
def test_a_replace_naming_a_missing_node_or_reversed_is_refused(
    start: int, end: int, problem: str
) -> None:
    """SurfaceManager: 'throws when replace start is not found', '... end is not found',
    'throws when start is after end' — and the log is unchanged."""
    session = _surface_session(3)
    with pytest.raises(SessionValidationError, match=problem) as caught:
        _replace(session, start, end, [0, 1, 2])
    assert caught.value.code == "SURFACE"
    assert (session.next_seq, session.surface) == (3, (0, 1, 2))


def test_a_replace_must_cite_every_node_it_shadows() -> None:
    """foldSurface source-event references: 'accepts absent or valid source-event references
    and complete replacement coverage' (the incomplete one is refused)."""
    session = _surface_session(3)
    with pytest.raises(SessionValidationError, match="cite every shadowed node"):
        _replace(session, 0, 1, [0])


def test_surface_fields_on_a_non_surface_event_are_refused() -> None:
    """foldSurface: 'rejects source-event references on a non-surface event' and 'foldSurface
    rejects surfaceOp on a non-surface event'."""
    with pytest.raises(
        SessionValidationError, match=r"unexpected envelope key\(s\) \['surfaceOp'\]"
    ):
        Session(HEADER).append("turn/start", {"turn": 1}, surface_op="append", time=1)
    with pytest.raises(SessionValidationError, match="sourceEventSeqs"):
        Session(HEADER).append("turn/start", {"turn": 1}, source_event_seqs=[], time=1)


def test_a_surface_type_without_its_marker_is_refused() -> None:
    """SurfaceManager: 'foldSurface rejects a surface-eligible event without its mandatory
    marker'."""
    line = (
        b'{"type":"user/message","seq":0,"time":1,"data":{"content":[],"source":{"kind":"user"}}}'
    )
    with pytest.raises(EventDecodeError, match="must carry surfaceOp"):
        decode_event(line)


def test_an_empty_source_list_on_an_assistant_message_is_accepted() -> None:
    """foldSurface source-event references: 'accepts an explicit empty source-event list on an
    assistant message'."""
    session = Session(HEADER)
    data = {"turn": 1, "step": 1, "content": [{"type": "text", "text": "x"}], "provenance": {}}
    event = session.append("assistant/message", data, source_event_seqs=[], time=1)
    assert event.source_event_seqs == ()


def test_an_empty_assistant_node_derives_to_nothing() -> None:
    """Session.append surface opts: 'deriveMessages skips a surface node that derives to null
    (empty assistant/message)'."""
    session = _surface_session(1)
    session.append("assistant/message", {"turn": 1, "step": 1, "content": []}, time=2)
    assert session.surface == (0, 1)
    assert len(session.derive_messages()) == 1


def _result(seq_call: str, text: str, **extra: Any) -> dict[str, Any]:
    return {
        "turn": 1,
        "step": 1,
        "callId": seq_call,
        "content": [{"type": "text", "text": text}],
        "isError": False,
        **extra,
    }


def test_tool_result_rewrites_change_only_one_results_content() -> None:
    """foldSurface tool-result rewrites: 'rejects a replacement spanning multiple current
    nodes', 'rejects a replacement targeting a non-result node', 'rejects changes outside
    tool-result content', 'compares array-valued rest fields structurally'."""
    session = Session(HEADER)
    session.append("user/message", _user_text("go"), time=1)
    session.append("tool/result", _result("c1", "long output", meta=[1, 2]), time=2)
    session.append("tool/result", _result("c2", "other"), time=3)

    def rewrite(start: int, end: int, data: dict[str, Any]) -> SessionEvent:
        return session.append(
            "tool/result",
            data,
            surface_op={"op": "replace", "start": start, "end": end},
            source_event_seqs=list(range(start, end + 1)),
            time=4,
        )

    with pytest.raises(SessionValidationError, match="exactly one tool/result"):
        rewrite(1, 2, _result("c1", "short", meta=[1, 2]))
    with pytest.raises(SessionValidationError, match="exactly one tool/result"):
        rewrite(0, 0, _result("c1", "short", meta=[1, 2]))
    with pytest.raises(SessionValidationError, match="only the result content"):
        rewrite(1, 1, _result("c1", "short", meta=[1, 3]))  # drifted meta array
    with pytest.raises(SessionValidationError, match="only the result content"):
        rewrite(1, 1, {**_result("c1", "short", meta=[1, 2]), "isError": True})
    rewrite(1, 1, _result("c1", "short", meta=[1, 2]))  # equal meta array: accepted
    assert session.surface == (0, 3, 2)
