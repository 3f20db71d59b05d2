"""Crash-repair closers (reference §1.11): wording, codes, seq and time rules, idempotence."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from dsh_session import (
    NOT_STARTED_TEXT,
    OUTCOME_UNKNOWN_TEXT,
    TOOL_NOT_STARTED,
    TOOL_OUTCOME_UNKNOWN,
    Session,
    SessionEvent,
    SessionHeader,
    ToolResultEvent,
    encode_event,
    interrupted_turn_closers,
)

HEADER = SessionHeader(id="s", created_at=1)


def _open_tool_step(build: Any, *, started: bool) -> Session:
    session = Session(HEADER)
    session.append("turn/start", {"turn": 3}, time=100)
    session.append("user/message", build.user_message(), time=101)
    session.append("step/start", {"turn": 3, "step": 2}, time=102)
    session.append("assistant/message", build.assistant_message("c1", turn=3, step=2), time=103)
    if started:
        session.append(
            "tool/call",
            {"turn": 3, "step": 2, "callId": "c1", "name": "bash", "arguments": "{}"},
            time=104,
        )
    return session


def test_a_balanced_or_empty_log_needs_no_closers(build: Any) -> None:
    assert interrupted_turn_closers([]) == []
    session = Session(HEADER)
    session.append("turn/start", {"turn": 1})
    session.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    assert interrupted_turn_closers(list(session.events)) == []


def test_a_started_call_gets_an_outcome_unknown_result_citing_its_tool_call(build: Any) -> None:
    session = _open_tool_step(build, started=True)
    result, step_end, turn_end = interrupted_turn_closers(list(session.events))
    assert isinstance(result, ToolResultEvent)
    assert (result.seq, result.time) == (5, 104)
    assert result.source_event_seqs == (4,)
    assert result.surface_op == "append"
    assert encode_event(result) == (
        b'{"type":"tool/result","seq":5,"time":104,"data":{"turn":3,"step":2,"message":'
        b'{"id":"interrupted-tool-result-c1-5","role":"user","source":{"kind":"tool",'
        b'"callId":"c1"},"content":[{"type":"tool-result","toolCallId":"c1","isError":true,'
        b'"content":[{"type":"text","text":"' + OUTCOME_UNKNOWN_TEXT.encode() + b'"}]}]},'
        b'"error":{"name":"ToolOutcomeUnknownError","code":"TOOL_OUTCOME_UNKNOWN"}},'
        b'"sourceEventSeqs":[4],"surfaceOp":"append"}'
    )
    assert (
        encode_event(step_end)
        == b'{"type":"step/end","seq":6,"time":104,"data":{"turn":3,"step":2}}'
    )
    assert encode_event(turn_end) == (
        b'{"type":"turn/end","seq":7,"time":104,"data":{"turn":3,"reason":{"kind":"interrupted"}}}'
    )


def test_a_call_never_recorded_as_started_gets_a_not_started_result(build: Any) -> None:
    session = _open_tool_step(build, started=False)
    result = interrupted_turn_closers(list(session.events))[0]
    assert result.source_event_seqs is None
    data = result.data
    assert data["error"] == {"name": "ToolNotStartedError", "code": TOOL_NOT_STARTED}  # type: ignore[index]
    text = data["message"]["content"][0]["content"][0]["text"]  # type: ignore[index]
    assert text == NOT_STARTED_TEXT
    assert TOOL_OUTCOME_UNKNOWN == "TOOL_OUTCOME_UNKNOWN"


def test_the_wording_is_the_harness_wording() -> None:
    assert NOT_STARTED_TEXT == (
        "The tool call was interrupted before the Harness recorded it as started. "
        "Retry it if it is still needed."
    )
    assert OUTCOME_UNKNOWN_TEXT.startswith(
        "The tool call was interrupted after it was recorded, but no result was durably recorded."
    )
    assert OUTCOME_UNKNOWN_TEXT.endswith("Do not retry blindly.")


def test_pending_calls_close_in_the_order_the_model_asked(build: Any) -> None:
    session = Session(HEADER)
    session.append("turn/start", {"turn": 1})
    session.append("step/start", {"turn": 1, "step": 1})
    session.append("assistant/message", build.assistant_message("b", "a", "c"))
    session.append("tool/result", build.tool_result("a"))
    closers = interrupted_turn_closers(list(session.events))
    ids = [c.data["message"]["source"]["callId"] for c in closers[:-2]]  # type: ignore[index]
    assert ids == ["b", "c"]


def test_calls_of_an_already_closed_step_get_no_result(build: Any) -> None:
    session = Session(HEADER)
    session.append("turn/start", {"turn": 1})
    session.append("step/start", {"turn": 1, "step": 1})
    session.append("assistant/message", build.assistant_message("c1"))
    session.append("step/end", {"turn": 1, "step": 1})
    types = [c.type for c in interrupted_turn_closers(list(session.events))]
    assert types == ["turn/end"]


def test_an_open_turn_without_a_step_gets_only_a_turn_end() -> None:
    session = Session(HEADER)
    session.append("turn/start", {"turn": 7}, time=5)
    (turn_end,) = interrupted_turn_closers(list(session.events))
    assert turn_end.data == {"turn": 7, "reason": {"kind": "interrupted"}}
    assert (turn_end.seq, turn_end.time) == (1, 5)


def test_the_flat_shape_is_available(build: Any) -> None:
    session = _open_tool_step(build, started=True)
    result = interrupted_turn_closers(list(session.events), shape="flat")[0]
    assert list(result.data) == ["turn", "step", "callId", "content", "isError", "error"]  # type: ignore[arg-type]


def test_closers_append_cleanly_and_then_the_log_needs_none(build: Any) -> None:
    session = _open_tool_step(build, started=True)
    for closer in interrupted_turn_closers(list(session.events)):
        session.append_event(closer)
    assert interrupted_turn_closers(list(session.events)) == []
    assert [type(m).__name__ for m in session.derive_messages()] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
    ]


def test_closers_are_deterministic(build: Any) -> None:
    events = list(_open_tool_step(build, started=False).events)
    assert interrupted_turn_closers(events) == interrupted_turn_closers(events)


# -- property: any prefix of a valid log becomes balanced ---------------------------------------


@st.composite
def valid_logs(draw: st.DrawFn) -> list[SessionEvent]:
    session = Session(HEADER)
    clock = 1000
    for turn in range(1, draw(st.integers(1, 3)) + 1):
        session.append("turn/start", {"turn": turn}, time=clock)
        session.append(
            "user/message",
            {"content": [{"type": "text", "text": "go"}], "source": {"kind": "user"}},
            time=clock,
        )
        for step in range(1, draw(st.integers(0, 3)) + 1):
            clock += draw(st.integers(0, 5))
            session.append("step/start", {"turn": turn, "step": step}, time=clock)
            calls = [f"c{turn}-{step}-{i}" for i in range(draw(st.integers(0, 3)))]
            content = [
                {"type": "tool-call", "id": c, "name": "bash", "arguments": "{}"} for c in calls
            ] or [{"type": "text", "text": "done"}]
            session.append(
                "assistant/message",
                {
                    "turn": turn,
                    "step": step,
                    "content": content,
                    "provenance": {"provider": "p", "model": "m"},
                },
                time=clock,
            )
            for call in calls:
                call_event = session.append(
                    "tool/call",
                    {"turn": turn, "step": step, "callId": call, "name": "bash", "arguments": "{}"},
                    time=clock,
                )
                session.append(
                    "tool/result",
                    {
                        "turn": turn,
                        "step": step,
                        "callId": call,
                        "content": [{"type": "text", "text": "ok"}],
                        "isError": False,
                    },
                    source_event_seqs=[call_event.seq],
                    time=clock,
                )
            session.append("step/end", {"turn": turn, "step": step}, time=clock)
        session.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}}, time=clock)
    return list(session.events)


@given(valid_logs(), st.data())
def test_closers_balance_any_prefix_of_a_valid_log_and_are_idempotent(
    log: list[SessionEvent], data: st.DataObject
) -> None:
    prefix = log[: data.draw(st.integers(0, len(log)))]
    closers = interrupted_turn_closers(prefix)
    session = Session(HEADER, prefix)
    for closer in closers:
        session.append_event(closer)
    repaired = list(session.events)
    assert interrupted_turn_closers(repaired) == []
    # balanced: turns alternate start/end, and every tool call of the log has a result
    markers = [e.type for e in repaired if e.type in ("turn/start", "turn/end")]
    assert markers == ["turn/start", "turn/end"] * (len(markers) // 2)
    answered = {
        e.data.get("callId") or e.data["message"]["source"]["callId"]  # type: ignore[union-attr,index]
        for e in repaired
        if e.type == "tool/result"
    }
    asked = {
        b["id"]
        for e in repaired
        if e.type == "assistant/message"
        for b in e.data["content"]
        if b["type"] == "tool-call"
    }  # type: ignore[index]
    assert asked <= answered
    assert all(c.time == (prefix[-1].time if prefix else 0) for c in closers)
    assert [c.seq for c in closers] == list(range(len(prefix), len(prefix) + len(closers)))
