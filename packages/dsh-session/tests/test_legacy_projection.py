"""Issue 13 §1: logs from before the harness's react-loop change (its bug-fix note of
2026-08-04) are projected at load exactly as the harness's persistence coordinator does; the
exact-shape cases follow its ``coordinator-contract`` and ``resume`` specs."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from dsh_session import (
    LEGACY_EVENT_TYPES,
    PROJECTED_EVENT_TYPES,
    HeaderDecodeError,
    Session,
    SessionHeader,
    SessionValidationError,
    decode_event,
    decode_header_line,
    is_known_event_type,
    make_event,
    project_stored_event,
    project_stored_events,
)

HEADER = SessionHeader(id="s-old", created_at=1, cwd="/home/user/project")
USER = {"content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}}


def _event(type: str, seq: int, data: Any, **options: Any) -> Any:
    return make_event(type, seq, 1000 + seq, data, **options)


def _end(reason: Any, **extra: Any) -> Any:
    return _event("turn/end", 0, {"turn": 1, "reason": reason, **extra})


def _projected_reason(reason: Any) -> Any:
    return project_stored_event(_end(reason), "s").to_wire()["data"]["reason"]


COMPACT = ("compact/start", "compact/summary", "compact/end", "compact/prune")


def test_steering_message_and_the_old_compaction_names_are_known_legacy_types() -> None:
    assert {"steering/message", *COMPACT} == LEGACY_EVENT_TYPES
    assert all(is_known_event_type(t) for t in LEGACY_EVENT_TYPES)
    assert {"steering/message", *COMPACT, "turn/start", "turn/end"} == PROJECTED_EVENT_TYPES


def test_flat_steering_becomes_the_identified_user_message() -> None:
    """Upstream case: 'loads pre-react-loop steering as an identified user message'."""
    stored = _event("steering/message", 4, {"turn": 1, **USER}, surface_op="append")
    projected = project_stored_event(stored, "s-old")
    assert projected.to_wire() == {
        "type": "user/message",
        "seq": 4,
        "time": 1004,
        "data": {**USER, "id": "legacy-message:s-old:4", "role": "user"},
        "surfaceOp": "append",
    }
    assert list(projected.to_wire()["data"]) == ["content", "source", "id", "role"]
    assert stored.type == "steering/message"  # the stored event is left as it was


def test_wrapped_steering_becomes_its_message_unchanged() -> None:
    message = {**USER, "role": "user", "id": "m-7"}
    stored = _event("steering/message", 2, {"turn": 1, "message": message}, surface_op="append")
    projected = project_stored_event(stored, "s")
    assert projected.type == "user/message"
    assert projected.to_wire()["data"] == message


@pytest.mark.parametrize(
    "data",
    [
        {"turn": 1, **USER, "extra": 1},
        {"turn": "1", **USER},
        {"content": USER["content"], "source": USER["source"]},
        {"turn": 1, "message": "not an object"},
        {"turn": 1, "message": {**USER}, "content": []},
        [1, 2],
    ],
)
def test_a_steering_record_not_exactly_of_an_old_shape_is_refused(data: Any) -> None:
    stored = _event("steering/message", 3, data, surface_op="append")
    with pytest.raises(SessionValidationError, match="pre-react-loop") as caught:
        project_stored_event(stored, "s")
    assert (caught.value.code, caught.value.seq) == ("LEGACY", 3)


def test_steering_whose_projection_is_not_a_user_message_is_refused() -> None:
    data = {"turn": 1, "content": "text", "source": {}}
    stored = _event("steering/message", 0, data, surface_op="append")
    with pytest.raises(SessionValidationError, match=r"data\.content must be an array") as caught:
        project_stored_event(stored, "s")
    assert caught.value.code == "LEGACY"


def test_turn_start_trigger_is_dropped() -> None:
    trigger = {"kind": "message", "source": {"kind": "user", "rpcId": "rpc-1"}}
    projected = project_stored_event(_event("turn/start", 0, {"turn": 2, "trigger": trigger}), "s")
    assert projected.to_wire()["data"] == {"turn": 2}


def test_turn_start_without_trigger_is_the_same_object() -> None:
    stored = _event("turn/start", 0, {"turn": 1})
    assert project_stored_event(stored, "s") is stored


@pytest.mark.parametrize(
    "data",
    [
        {"turn": 0, "trigger": {"kind": "message"}},
        {"turn": 1, "trigger": {"kind": ""}},
        {"turn": 1, "trigger": {}},
        {"turn": 1, "trigger": {"kind": "message"}, "other": True},
    ],
)
def test_a_malformed_old_turn_start_is_refused(data: Any) -> None:
    with pytest.raises(SessionValidationError, match="malformed pre-react-loop turn/start"):
        project_stored_event(_event("turn/start", 0, data), "s")


@pytest.mark.parametrize(
    ("old", "current"),
    [
        ({"kind": "aborted"}, {"kind": "aborted", "reason": {"kind": "legacy"}}),
        ({"kind": "disposed"}, {"kind": "aborted", "reason": {"kind": "disposed"}}),
        (
            {"kind": "error", "step": 1, "failure": {"message": "boom", "code": "SERVER"}},
            {"kind": "error", "error": {"message": "boom", "code": "SERVER"}},
        ),
        (
            {
                "kind": "error",
                "step": 2,
                "failure": {
                    "message": "slow",
                    "code": "RATE_LIMIT",
                    "status": 429,
                    "providerRetryAfterMs": 1500,
                    "requestId": "req-1",
                },
            },
            {
                "kind": "error",
                "error": {
                    "message": "slow",
                    "code": "RATE_LIMIT",
                    "status": 429,
                    "providerRetryAfterMs": 1500,
                    "requestId": "req-1",
                },
            },
        ),
        (
            {"kind": "error", "step": 1, "message": "no key", "code": "AUTH"},
            {"kind": "error", "error": {"message": "no key", "code": "AUTH"}},
        ),
        (
            {"kind": "error", "step": 0, "message": "disk full"},
            {"kind": "error", "error": {"message": "disk full", "code": "UNKNOWN"}},
        ),
        (
            {"kind": "error", "step": 0, "message": "empty code", "code": ""},
            {"kind": "error", "error": {"message": "empty code", "code": ""}},
        ),
    ],
)
def test_old_turn_end_reasons_project_to_current_ones(old: Any, current: Any) -> None:
    assert _projected_reason(old) == current


@pytest.mark.parametrize(
    "reason",
    [
        {"kind": "completed"},
        {"kind": "blocked"},
        {"kind": "max-tokens"},
        {"kind": "interrupted"},
        {"kind": "aborted", "reason": {"kind": "user"}},
        {"kind": "aborted", "reason": "session/cancel"},
        {"kind": "error", "error": {"message": "m", "code": "UNKNOWN"}},
        {"kind": "forked"},
        {"kind": "rejected", "reason": "a kind this build does not know"},
    ],
)
def test_current_turn_end_reasons_are_left_as_they_are(reason: Any) -> None:
    stored = _end(reason)
    assert project_stored_event(stored, "s") is stored


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"turn": 1, "step": 1, "reason": {"kind": "completed"}}, "exactly {turn, reason}"),
        ({"turn": 0, "reason": {"kind": "completed"}}, "positive turn"),
        ({"turn": 1, "reason": {"kind": 7}}, "string kind"),
        ({"turn": 1, "reason": {"kind": "completed", "why": "x"}}, "no other key"),
        ({"turn": 1, "reason": {"kind": "aborted", "by": "user"}}, "coarse 'aborted'"),
        ({"turn": 1, "reason": {"kind": "disposed", "at": 1}}, "'disposed'"),
        ({"turn": 1, "reason": {"kind": "error", "message": "m"}}, "non-negative step"),
        ({"turn": 1, "reason": {"kind": "error", "step": -1, "message": "m"}}, "step"),
        ({"turn": 1, "reason": {"kind": "error", "step": 1}}, "old error reason is"),
        ({"turn": 1, "reason": {"kind": "error", "step": 1, "message": 3}}, "old error reason"),
        (
            {"turn": 1, "reason": {"kind": "error", "step": 1, "message": "m", "code": 5}},
            "old error reason",
        ),
        (
            {"turn": 1, "reason": {"kind": "error", "step": 1, "failure": {"message": "m"}}},
            "old error reason",
        ),
        (
            {
                "turn": 1,
                "reason": {
                    "kind": "error",
                    "step": 1,
                    "failure": {"message": "m", "code": "C", "status": "429"},
                },
            },
            "old error reason",
        ),
    ],
)
def test_a_turn_end_not_exactly_of_a_known_shape_is_refused(data: Any, problem: str) -> None:
    with pytest.raises(SessionValidationError, match="malformed pre-react-loop turn/end") as caught:
        project_stored_event(_event("turn/end", 5, data), "s")
    assert problem in str(caught.value)
    assert (caught.value.code, caught.value.seq) == ("LEGACY", 5)


def _old_log() -> list[Any]:
    trigger = {"kind": "message", "source": {"kind": "user"}}
    return [
        _event("turn/start", 0, {"turn": 1, "trigger": trigger}),
        _event("step/start", 1, {"turn": 1, "step": 1}),
        _event("user/message", 2, USER, surface_op="append"),
        _event("steering/message", 3, {"turn": 1, **USER}, surface_op="append"),
        _event("step/end", 4, {"turn": 1, "step": 1}),
        _event("turn/end", 5, {"turn": 1, "reason": {"kind": "disposed"}}),
    ]


def test_a_restored_session_sees_the_projection_and_derives() -> None:
    stored = _old_log()
    session = Session(HEADER, stored)
    assert [e.type for e in session.events][3] == "user/message"
    assert session.events[0].to_wire()["data"] == {"turn": 1}
    assert session.events[5].to_wire()["data"]["reason"] == {
        "kind": "aborted",
        "reason": {"kind": "disposed"},
    }
    assert session.surface == (2, 3)
    messages = session.derive_messages()
    assert [m.id for m in messages] == [None, "legacy-message:s-old:3"]
    assert stored[3].type == "steering/message"  # the caller's events are not touched
    assert project_stored_events(stored, "s-old") == list(session.events)


def test_a_resume_appends_current_events_after_the_old_ones() -> None:
    session = Session(HEADER, _old_log())
    session.append("turn/start", {"turn": 2}, time=2000)
    session.append("user/message", USER, time=2001)
    session.append("turn/end", {"turn": 2, "reason": {"kind": "completed"}}, time=2002)
    assert len(session.derive_messages()) == 3
    reread = Session(HEADER, [*_old_log(), *list(session.events)[6:]])
    assert list(reread.events) == list(session.events)


def test_appending_a_legacy_type_is_refused() -> None:
    session = Session(HEADER)
    with pytest.raises(SessionValidationError, match="pre-react-loop") as caught:
        session.append("steering/message", {"turn": 1, **USER}, surface_op="append")
    assert caught.value.code == "LEGACY"
    with pytest.raises(SessionValidationError, match="pre-react-loop"):
        session.append_event(_event("steering/message", 0, {"turn": 1, **USER}))
    assert session.next_seq == 0


def test_a_restore_refuses_a_malformed_old_record_naming_its_seq() -> None:
    log = _old_log()
    log[5] = _event("turn/end", 5, {"turn": 1, "reason": {"kind": "disposed", "x": 1}})
    with pytest.raises(SessionValidationError, match=r"event seq 5: malformed pre-react-loop"):
        Session(HEADER, log)


def test_a_session_fork_of_an_old_log_carries_the_projection() -> None:
    child = Session(HEADER, _old_log()).fork("child", created_at=5)
    assert child.events[3].type == "user/message"


# -- errors keep their whole reason (issue 13 §1) -------------------------------------------


def test_a_derive_error_names_every_problem_and_chains_the_pydantic_error() -> None:
    """Was only the first line: '... (2 validation errors for UserMessage'."""
    bad = {"content": [{"type": "text", "text": 3}, {"type": "video"}], "source": {"kind": "user"}}
    session = Session(HEADER, [_event("user/message", 0, bad, surface_op="append")])
    with pytest.raises(SessionValidationError) as caught:
        session.derive_messages()
    message = str(caught.value)
    assert caught.value.code == "DERIVE"
    assert "content.0.text.text: Input should be a valid string (got 3)" in message
    assert "content.1: Input tag 'video' found using 'type' does not match any of the " in message
    assert "'text', 'image'" in message  # the allowed values
    assert isinstance(caught.value.__cause__, ValidationError)


def test_a_derive_error_names_the_allowed_values_of_a_field() -> None:
    bad = {"content": [], "source": {"kind": "user"}, "role": "system"}
    session = Session(HEADER, [_event("user/message", 0, bad, surface_op="append")])
    with pytest.raises(
        SessionValidationError, match="role: Input should be 'user' \\(got 'system'\\)"
    ):
        session.derive_messages()


def test_a_request_header_error_keeps_every_problem_and_its_cause() -> None:
    data = {"header": {"config": {"provider": "", "model": 3}, "tools": 1}, "reason": "initial"}
    with pytest.raises(SessionValidationError) as caught:
        Session(HEADER, [_event("request/header", 0, data)])
    message = str(caught.value)
    assert message.count("; ") >= 1
    assert "tools" in message
    assert isinstance(caught.value.__cause__, ValidationError)


def test_a_header_error_chains_the_pydantic_error() -> None:
    line = b'{"type":"session","version":0,"id":"s","createdAt":1,"cwd":"relative"}'
    with pytest.raises(HeaderDecodeError, match="cwd") as caught:
        decode_header_line(line)
    assert isinstance(caught.value.__cause__, ValidationError)


def test_decoding_a_stored_steering_line_keeps_it_as_stored() -> None:
    line = (
        b'{"type":"steering/message","seq":0,"time":1,"data":{"turn":1,"content":[],'
        b'"source":{"kind":"user"}},"surfaceOp":"append"}'
    )
    assert decode_event(line).type == "steering/message"


# -- compact/* (before the 2026-08-13 rename to compaction/*) -------------------------------

COMPACTION_ID = "c-1"


@pytest.mark.parametrize("old", COMPACT)
def test_a_compact_record_becomes_its_compaction_type_with_everything_else_kept(old: str) -> None:
    data = {"compactionId": COMPACTION_ID, "turn": 1, "nested": {"keep": [1, 2.5, None]}}
    stored = _event(old, 7, data, ignorable=False, source_event_seqs=[3, 4])
    projected = project_stored_event(stored, "s")
    assert projected.to_wire() == {
        "type": "compaction/" + old.removeprefix("compact/"),
        "seq": 7,
        "time": 1007,
        "data": data,
        "ignorable": False,
        "sourceEventSeqs": [3, 4],
    }
    assert list(projected.to_wire()) == list(stored.to_wire())  # same keys, same order
    assert stored.type == old  # the stored event is left as it was


@pytest.mark.parametrize("current", ["compaction/start", "compaction/summary", "compaction/end"])
def test_a_current_compaction_record_is_the_same_object(current: str) -> None:
    stored = _event(current, 0, {"compactionId": COMPACTION_ID, "turn": 1})
    assert project_stored_event(stored, "s") is stored


@pytest.mark.parametrize("data", [[1, 2], "start", 3, None, True])
@pytest.mark.parametrize("old", COMPACT)
def test_a_compact_record_whose_data_is_not_an_object_is_refused(old: str, data: Any) -> None:
    stored = _event(old, 6, data)
    with pytest.raises(SessionValidationError, match=f"malformed pre-rename {old}") as caught:
        project_stored_event(stored, "s")
    assert "data must be an object" in str(caught.value)
    assert (caught.value.code, caught.value.seq) == ("LEGACY", 6)


def test_a_restore_refuses_a_malformed_compact_record_naming_its_seq() -> None:
    log = [
        _event("turn/start", 0, {"turn": 1}),
        _event("compact/start", 1, {"compactionId": COMPACTION_ID, "turn": 1}),
        _event("compact/end", 2, ["not", "an", "object"]),
    ]
    with pytest.raises(
        SessionValidationError, match=r"event seq 2: malformed pre-rename compact/end"
    ) as caught:
        Session(HEADER, log)
    assert caught.value.code == "LEGACY"


@pytest.mark.parametrize("old", COMPACT)
def test_appending_a_compact_record_is_refused_naming_the_current_form(old: str) -> None:
    session = Session(HEADER)
    current = "compaction/" + old.removeprefix("compact/")
    data: dict[str, Any] = {"compactionId": COMPACTION_ID, "turn": 1}
    with pytest.raises(SessionValidationError, match=f"append '{current}' instead") as caught:
        session.append(old, data)
    assert caught.value.code == "LEGACY"
    with pytest.raises(SessionValidationError, match=f"append '{current}' instead") as caught:
        session.append_event(_event(old, 0, data))
    assert caught.value.code == "LEGACY"
    assert session.next_seq == 0
    session.append(current, data)  # the current form is appended as usual
    assert session.events[0].type == current


def test_a_restored_compact_log_resumes_with_current_records() -> None:
    stored = [
        _event("turn/start", 0, {"turn": 1}),
        _event("user/message", 1, USER, surface_op="append"),
        _event("compact/start", 2, {"compactionId": COMPACTION_ID, "turn": 1}),
        _event("compact/end", 3, {"compactionId": COMPACTION_ID, "turn": 1}),
        _event("turn/end", 4, {"turn": 1, "reason": {"kind": "completed"}}),
    ]
    session = Session(HEADER, stored)
    assert [e.type for e in session.events][2:4] == ["compaction/start", "compaction/end"]
    session.append("turn/start", {"turn": 2}, time=2000)
    session.append("compaction/start", {"compactionId": "c-2", "turn": 2}, time=2001)
    session.append("compaction/end", {"compactionId": "c-2", "turn": 2}, time=2002)
    session.append("turn/end", {"turn": 2, "reason": {"kind": "completed"}}, time=2003)
    reread = Session(HEADER, [*stored, *list(session.events)[5:]])
    assert list(reread.events) == list(session.events)
    assert project_stored_events(stored, "s-old") == list(session.events)[:5]
