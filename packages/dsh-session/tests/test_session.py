"""Session: the validated, append-only in-memory log."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from dsh_session import (
    EventDecodeError,
    LosslessJsonError,
    Session,
    SessionEvent,
    SessionHeader,
    SessionValidationError,
    UserMessageEvent,
    decode_event,
    decode_header_line,
    decode_row,
    make_event,
)

HEADER = SessionHeader(id="s", created_at=1)


def _restore(path: Path) -> Session:
    lines = path.read_bytes().rstrip(b"\n").split(b"\n")
    header, inherited = decode_header_line(lines[0])
    events = [event for line in lines[1:] for event in decode_row(line)]
    return Session(header, events, inherited_event_count=inherited)


def test_every_fixture_restores_into_a_session(fixture_file: Path) -> None:
    session = _restore(fixture_file)
    assert session.next_seq == len(session.events)
    assert [e.seq for e in session.events] == list(range(session.next_seq))


def test_append_assigns_the_next_seq_and_returns_the_typed_event(build: Any) -> None:
    session = Session(HEADER)
    first = session.append("turn/start", {"turn": 1}, time=10)
    second = session.append("user/message", build.user_message(), time=11)
    assert (first.seq, second.seq, session.next_seq) == (0, 1, 2)
    assert isinstance(second, UserMessageEvent)
    assert second.surface_op == "append"
    assert list(session.events) == [first, second]


def test_append_defaults_time_to_the_wall_clock() -> None:
    event = Session(HEADER).append("turn/start", {"turn": 1})
    assert event.time > 1_700_000_000_000


def test_append_event_requires_the_next_seq() -> None:
    session = Session(HEADER)
    with pytest.raises(SessionValidationError) as info:
        session.append_event(make_event("turn/start", 1, 0, {"turn": 1}))
    assert info.value.code == "SEQ"
    assert session.next_seq == 0


def test_restoring_a_log_with_a_seq_gap_is_refused() -> None:
    events = [
        make_event("turn/start", 0, 0, {"turn": 1}),
        make_event("step/start", 2, 0, {"turn": 1, "step": 1}),
    ]
    with pytest.raises(SessionValidationError, match="seq"):
        Session(HEADER, events)


def test_a_malformed_append_is_refused_with_an_envelope_error() -> None:
    session = Session(HEADER)
    with pytest.raises(SessionValidationError) as info:
        session.append("step/start", {"turn": 1})
    assert info.value.code == "ENVELOPE"
    assert session.next_seq == 0


def test_data_json_cannot_carry_is_refused_on_append_and_restore() -> None:
    session = Session(HEADER)
    with pytest.raises(LosslessJsonError):
        session.append("x/y", {"v": float("inf")})
    foreign = decode_event(b'{"type":"x/y","seq":0,"time":1,"data":{"v":-0.0}}')
    with pytest.raises(SessionValidationError) as info:
        Session(HEADER, [foreign])
    assert info.value.code == "DATA"


def test_a_non_surface_event_may_not_carry_surface_fields() -> None:
    session = Session(HEADER)
    with pytest.raises(SessionValidationError) as info:
        session.append("todo/write", {"todos": []}, surface_op="append")
    assert info.value.code == "ENVELOPE"


def test_retired_types_and_the_fallback_header_reason_are_refused() -> None:
    session = Session(HEADER)
    with pytest.raises(SessionValidationError, match="retired"):
        session.append("request/header-delta", {})
    header = {"config": {"provider": "p", "model": "m"}}
    with pytest.raises(SessionValidationError, match="fallback"):
        session.append("request/header", {"header": header, "reason": "fallback"})
    with pytest.raises(SessionValidationError, match="provider"):
        session.append("request/header", {"header": {"config": {}}, "reason": "initial"})
    assert session.next_seq == 0


def test_unknown_types_are_accepted_as_data() -> None:
    event = Session(HEADER).append("future/thing", [1, 2], ignorable=True)
    assert event.ignorable is True


def test_subscribers_are_notified_after_commit_in_order() -> None:
    session = Session(HEADER)
    seen: list[tuple[str, int, int]] = []
    session.subscribe(lambda e: seen.append(("a", e.seq, session.next_seq)))
    session.subscribe(lambda e: seen.append(("b", e.seq, session.next_seq)))
    session.append("turn/start", {"turn": 1})
    assert seen == [("a", 0, 1), ("b", 0, 1)]


def test_a_refused_append_notifies_nobody() -> None:
    session = Session(HEADER)
    seen: list[SessionEvent] = []
    session.subscribe(seen.append)
    with pytest.raises(SessionValidationError):
        session.append("step/start", {})
    assert seen == []


def test_a_subscription_is_a_disposer_and_a_context_manager() -> None:
    session = Session(HEADER)
    seen: list[int] = []
    with session.subscribe(lambda e: seen.append(e.seq)):
        session.append("turn/start", {"turn": 1})
    session.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    subscription = session.subscribe(lambda e: seen.append(-e.seq))
    subscription.close()
    subscription.close()
    session.append("turn/start", {"turn": 2})
    assert seen == [0]


def test_a_failing_subscriber_is_logged_and_does_not_undo_the_append(
    caplog: pytest.LogCaptureFixture,
) -> None:
    session = Session(HEADER)
    seen: list[int] = []

    def broken(event: SessionEvent) -> None:
        raise RuntimeError("boom")

    session.subscribe(broken)
    session.subscribe(lambda e: seen.append(e.seq))
    with caplog.at_level(logging.ERROR, logger="dsh_session"):
        session.append("turn/start", {"turn": 1})
    assert session.next_seq == 1
    assert seen == [0]
    assert "subscriber failed" in caplog.text


def test_appending_from_a_subscriber_is_refused_as_reentrant() -> None:
    session = Session(HEADER)
    errors: list[SessionValidationError] = []

    def reenter(event: SessionEvent) -> None:
        try:
            session.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
        except SessionValidationError as exc:
            errors.append(exc)

    session.subscribe(reenter)
    session.append("turn/start", {"turn": 1})
    assert [e.code for e in errors] == ["REENTRANT"]
    assert session.next_seq == 1


def test_events_view_is_read_only_and_live() -> None:
    session = Session(HEADER)
    view = session.events
    session.append("turn/start", {"turn": 1})
    assert len(view) == 1
    assert view[0].type == "turn/start"
    assert not hasattr(view, "append")


def test_title_is_the_latest_session_title() -> None:
    session = Session(HEADER)
    assert session.title is None
    session.append("session/title", {"title": "first", "source": {"kind": "fallback"}})
    session.append("session/title", {"title": "second", "source": {"kind": "llm"}})
    assert session.title == "second"


def test_fixture_titles_are_the_fallback_start_of_the_first_prompt(fixture_file: Path) -> None:
    session = _restore(fixture_file)
    titles = [e for e in session.events if e.type == "session/title"]
    if titles:
        assert session.title is not None
        first_prompt = next(e for e in session.events if e.type == "user/message")
        text = first_prompt.data["content"][0]["text"]  # type: ignore[index]
        assert text.startswith(session.title)
        assert titles[-1].data["source"] == {"kind": "fallback"}  # type: ignore[index]


def test_request_context_is_last_wins() -> None:
    session = Session(HEADER)
    session.append("request/context", {"provider": "a", "model": "x"})
    session.append("request/context", {"provider": "b", "model": "y", "contextWindow": 9})
    assert session.request_context == {"provider": "b", "model": "y", "contextWindow": 9}


def test_a_header_cut_must_agree_with_is_seeded() -> None:
    with pytest.raises(SessionValidationError, match="seeded"):
        Session(SessionHeader(id="s", created_at=1, is_seeded=True))
    with pytest.raises(SessionValidationError, match="not seeded"):
        Session(HEADER, [], inherited_event_count=2)
    seeded = SessionHeader(id="s", created_at=1, is_seeded=True)
    with pytest.raises(SessionValidationError, match="exceeds"):
        Session(seeded, [make_event("turn/start", 0, 0, {"turn": 1})], inherited_event_count=2)


def test_a_tool_round_derives_user_assistant_and_tool_result_messages(build: Any) -> None:
    session = Session(HEADER)
    session.append("turn/start", {"turn": 1})
    session.append("user/message", build.user_message("list files"))
    session.append("step/start", {"turn": 1, "step": 1})
    session.append("assistant/message", build.assistant_message("c1"))
    session.append(
        "tool/call", {"turn": 1, "step": 1, "callId": "c1", "name": "bash", "arguments": "{}"}
    )
    session.append("tool/result", build.tool_result("c1"), source_event_seqs=[4])
    kinds = [type(m).__name__ for m in session.derive_messages()]
    assert kinds == ["UserMessage", "AssistantMessage", "ToolResultMessage"]


def test_make_event_errors_inside_append_keep_their_reason() -> None:
    with pytest.raises(SessionValidationError, match=r"data\.turn"):
        Session(HEADER).append("turn/start", {"turn": "one"})
    with pytest.raises(EventDecodeError):
        make_event("turn/start", 0, 0, {"turn": "one"})
