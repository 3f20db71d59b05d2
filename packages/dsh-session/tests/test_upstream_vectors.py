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
    ChunkRowError,
    EpochHeader,
    Session,
    SessionEvent,
    SessionHeader,
    SessionValidationError,
    decode_row,
    encode_event,
    encode_rows,
    fold_request_header,
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
