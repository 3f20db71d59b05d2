"""derive_messages (reference §1.6): both data shapes, empty assistant nodes, incremental cache."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh_llm import AssistantMessage, ToolResultMessage, UserMessage
from dsh_session import (
    Session,
    SessionHeader,
    SessionValidationError,
    SurfaceReplace,
    decode_header_line,
    decode_row,
)

HEADER = SessionHeader(id="s", created_at=1)


def _restore(path: Path) -> Session:
    lines = path.read_bytes().rstrip(b"\n").split(b"\n")
    header, inherited = decode_header_line(lines[0])
    return Session(
        header, [e for line in lines[1:] for e in decode_row(line)], inherited_event_count=inherited
    )


def test_every_fixture_derives_one_message_per_non_empty_surface_node(fixture_file: Path) -> None:
    session = _restore(fixture_file)
    messages = session.derive_messages()
    assert len(messages) == len(session.surface)


def test_the_flat_assistant_shape_gets_a_model_source_from_its_provenance(build: Any) -> None:
    session = Session(HEADER)
    session.append("assistant/message", build.assistant_message("c1", text="hello"))
    (message,) = session.derive_messages()
    assert isinstance(message, AssistantMessage)
    assert (message.source.provider, message.source.model) == ("p", "m")
    assert message.text == "hello"
    assert [c.id for c in message.tool_calls] == ["c1"]


def test_the_message_assistant_shape_is_the_message_itself() -> None:
    session = Session(HEADER)
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": "DONE"}],
        "source": {"kind": "model", "provider": "p", "model": "m"},
        "id": "a1",
    }
    session.append("assistant/message", {"turn": 1, "step": 1, "message": message, "usage": {}})
    (derived,) = session.derive_messages()
    assert isinstance(derived, AssistantMessage)
    assert derived.id == "a1"


def test_an_empty_assistant_message_stays_on_the_surface_but_derives_nothing(build: Any) -> None:
    session = Session(HEADER)
    session.append("user/message", build.user_message())
    session.append("assistant/message", build.assistant_message(text=""))
    assert session.surface == (0, 1)
    assert [type(m) for m in session.derive_messages()] == [UserMessage]


def test_both_tool_result_shapes_derive_a_tool_result_message(build: Any) -> None:
    session = Session(HEADER)
    session.append("tool/result", build.tool_result("c1", "flat"))
    block = {
        "type": "tool-result",
        "toolCallId": "c2",
        "content": [{"type": "text", "text": "m"}],
        "isError": True,
    }
    session.append(
        "tool/result",
        {
            "turn": 1,
            "step": 1,
            "message": {
                "source": {"kind": "tool", "callId": "c2"},
                "content": [block],
                "role": "user",
                "id": "r",
            },
        },
    )
    first, second = session.derive_messages()
    assert isinstance(first, ToolResultMessage)
    assert isinstance(second, ToolResultMessage)
    assert (first.source.call_id, first.result.is_error) == ("c1", False)
    assert (second.source.call_id, second.result.is_error) == ("c2", True)


def test_a_user_message_with_role_and_id_keeps_them(build: Any) -> None:
    session = Session(HEADER)
    session.append("user/message", {**build.user_message(), "role": "user", "id": "u1"})
    (message,) = session.derive_messages()
    assert isinstance(message, UserMessage)
    assert message.id == "u1"


def test_derive_returns_a_fresh_list_of_shared_messages(build: Any) -> None:
    session = Session(HEADER)
    session.append("user/message", build.user_message())
    first = session.derive_messages()
    first.clear()
    again = session.derive_messages()
    assert len(again) == 1
    assert again[0] is session.derive_messages()[0]


def test_appending_does_not_re_derive_the_history(build: Any) -> None:
    session = Session(HEADER)
    for index in range(5):
        session.append("user/message", build.user_message(str(index)))
    before = session.derive_messages()
    session.append("assistant/message", build.assistant_message())
    after = session.derive_messages()
    assert len(after) == 6
    assert all(a is b for a, b in zip(before, after[:5], strict=True))


def test_a_replace_rebuilds_from_the_cache_without_re_projecting(build: Any) -> None:
    session = Session(HEADER)
    for index in range(4):
        session.append("user/message", build.user_message(str(index)))
    before = session.derive_messages()
    session.append(
        "user/message",
        build.user_message("summary"),
        surface_op=SurfaceReplace(1, 2),
        source_event_seqs=[1, 2],
    )
    after = session.derive_messages()
    assert [m.content[0].text for m in after] == ["0", "summary", "3"]  # type: ignore[union-attr]
    assert after[0] is before[0]
    assert after[2] is before[3]


def test_derivation_ignores_log_only_and_plugin_events(build: Any) -> None:
    session = Session(HEADER)
    session.append("turn/start", {"turn": 1})
    session.append("permission/preset", {"preset": "x"})
    session.append("user/message", build.user_message())
    assert len(session.derive_messages()) == 1


def test_data_that_is_not_a_message_raises_a_derive_error() -> None:
    session = Session(HEADER)
    session.append("user/message", {"content": [{"type": "video"}], "source": {"kind": "user"}})
    with pytest.raises(SessionValidationError) as info:
        session.derive_messages()
    assert (info.value.code, info.value.seq) == ("DERIVE", 0)


def test_a_derive_error_is_raised_again_and_a_replace_recovers(build: Any) -> None:
    session = Session(HEADER)
    session.append("user/message", build.user_message("ok"))
    session.append("user/message", {"content": [{"type": "video"}], "source": {"kind": "user"}})
    for _ in range(2):
        with pytest.raises(SessionValidationError):
            session.derive_messages()
    session.append(
        "user/message",
        build.user_message("fixed"),
        surface_op=SurfaceReplace(1, 1),
        source_event_seqs=[1],
    )
    assert [m.content[0].text for m in session.derive_messages()] == ["ok", "fixed"]  # type: ignore[union-attr]


def test_project_message_gives_none_for_log_only_events() -> None:
    from dsh_session import make_event, project_message

    assert project_message(make_event("turn/start", 0, 0, {"turn": 1})) is None


def test_a_user_message_with_the_harness_meta_field_derives_without_it() -> None:
    """The TypeScript harness wrote ``meta`` beside user messages from 2026-07-23 to 07-26 (9
    real logs); it is bookkeeping: the derived message leaves it out, the event keeps it."""
    session = Session(HEADER)
    data = {
        "content": [{"type": "text", "text": "hi"}],
        "source": {"kind": "user"},
        "meta": {"clientMessageId": "m-1", "composer": {"mode": "chat"}},
    }
    event = session.append("user/message", data)
    (derived,) = session.derive_messages()
    assert isinstance(derived, UserMessage)
    assert derived.model_dump(mode="json", by_alias=True, exclude_none=True)["content"] == [
        {"type": "text", "text": "hi"}
    ]
    assert event.to_wire()["data"]["meta"] == data["meta"]
