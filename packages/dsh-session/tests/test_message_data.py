"""The identified message shapes the writers produce, and ``message_parts`` over both shapes."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from dsh_session import (
    Session,
    SessionHeader,
    assistant_message_data,
    decode_header_line,
    decode_row,
    encode_event,
    message_parts,
    project_message,
    tool_result_data,
    user_message_data,
)

HERE = Path(__file__).parent / "fixtures"
LOGS = sorted([*HERE.glob("upstream-v0/*.jsonl"), *HERE.glob("upstream-real/*.jsonl")])
HEADER = SessionHeader(id="s", created_at=1)


def _events(path: Path) -> list[Any]:
    lines = path.read_bytes().rstrip(b"\n").split(b"\n")
    decode_header_line(lines[0])
    return [event for line in lines[1:] for event in decode_row(line)]


@pytest.mark.parametrize("path", LOGS, ids=[p.stem for p in LOGS])
def test_parts_agree_with_the_derived_message_on_every_real_surface_event(path: Path) -> None:
    """On every surface event of the harness's own logs (both shapes occur among them),
    ``message_parts`` reads the role and content the derived message has."""
    seen = 0
    for event in _events(path):
        if event.type not in ("user/message", "assistant/message", "tool/result"):
            continue
        parts = message_parts(event.type, event.to_wire()["data"])
        assert parts is not None
        try:
            message = project_message(event)
        except Exception:  # a record the session refuses to derive is not this test's business
            continue
        if message is None:
            assert parts.content == []
            continue
        wire = message.to_wire()
        assert (parts.role, parts.content) == (wire.get("role", "user"), wire["content"])
        if event.type == "tool/result":
            assert parts.call_id == wire["source"]["callId"]
            assert parts.result == wire["content"][0]["content"]
        seen += 1
    assert seen or "plan-narrow" in path.stem or "seed" in path.stem


def test_the_writers_use_the_harness_key_order_and_fresh_uuids() -> None:
    user = user_message_data([{"type": "text", "text": "hi"}], {"kind": "user"})
    assert list(user) == ["content", "source", "role", "id"]
    assistant = assistant_message_data(
        1,
        1,
        [{"type": "text", "text": "ok"}],
        {"provider": "p", "model": "m"},
        usage={"inputTokens": 1, "outputTokens": 1},
    )
    assert list(assistant) == ["turn", "step", "message", "usage"]
    assert list(assistant["message"]) == ["role", "content", "source", "id"]
    assert list(assistant["message"]["source"]) == ["kind", "provider", "model"]
    cut = assistant_message_data(1, 1, [], {"provider": "p", "model": "m"}, interrupted=True)
    assert list(cut) == ["turn", "step", "message", "interrupted"]
    result = tool_result_data(
        1, 1, "c1", [{"type": "text", "text": "x"}], is_error=True, error={"name": "E", "code": "C"}
    )
    assert list(result) == ["turn", "step", "message", "error"]
    assert list(result["message"]) == ["source", "content", "role", "id"]
    assert list(result["message"]["content"][0]) == ["type", "toolCallId", "content", "isError"]
    ids = {user["id"], assistant["message"]["id"], cut["message"]["id"], result["message"]["id"]}
    assert len(ids) == 4
    assert all(uuid.UUID(value).version == 4 and str(uuid.UUID(value)) == value for value in ids)
    assert user_message_data([], {"kind": "user"}, id="given")["id"] == "given"


def test_both_shapes_give_the_same_parts_and_the_same_derived_message() -> None:
    session = Session(HEADER)
    session.append("turn/start", {"turn": 1})
    session.append("step/start", {"turn": 1, "step": 1})
    session.append(
        "user/message", {"content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}}
    )
    session.append(
        "user/message", user_message_data([{"type": "text", "text": "hi"}], {"kind": "user"})
    )
    call = {"type": "tool-call", "id": "c1", "name": "t", "arguments": "{}"}
    provenance = {"provider": "p", "model": "m"}
    bare_assistant = {"turn": 1, "step": 1, "content": [call], "provenance": provenance}
    session.append("assistant/message", bare_assistant, source_event_seqs=[])
    session.append(
        "tool/call", {"turn": 1, "step": 1, "callId": "c1", "name": "t", "arguments": "{}"}
    )
    bare_result = {"turn": 1, "step": 1, "callId": "c1", "content": [], "isError": False}
    session.append("tool/result", bare_result, source_event_seqs=[5])
    session.append("step/end", {"turn": 1, "step": 1})
    session.append("step/start", {"turn": 1, "step": 2})
    session.append(
        "assistant/message", assistant_message_data(1, 2, [call], provenance), source_event_seqs=[]
    )
    session.append(
        "tool/call", {"turn": 1, "step": 2, "callId": "c1", "name": "t", "arguments": "{}"}
    )
    session.append(
        "tool/result", tool_result_data(1, 2, "c1", [], is_error=False), source_event_seqs=[10]
    )
    events = session.events
    pairs = [(2, 3), (4, 9), (6, 11)]
    for bare, identified in pairs:
        old = message_parts(events[bare].type, events[bare].to_wire()["data"])
        new = message_parts(events[identified].type, events[identified].to_wire()["data"])
        assert old is not None
        assert new is not None
        assert (old.role, old.content, old.source, old.call_id, old.result, old.is_error) == (
            new.role,
            new.content,
            new.source,
            new.call_id,
            new.result,
            new.is_error,
        )
        assert (old.identified, new.identified) == (False, True)
        assert old.id is None
        assert new.id is not None
        old_message, new_message = (
            project_message(events[bare]),
            project_message(events[identified]),
        )
        assert old_message is not None
        assert new_message is not None
        assert old_message.model_dump(exclude={"id"}) == new_message.model_dump(exclude={"id"})
        assert new_message.id == new.id
    assert len(session.derive_messages()) == 6
    for event in events:
        assert encode_event(event)  # every written shape encodes


def test_parts_never_raise_on_junk() -> None:
    assert message_parts("turn/start", {"turn": 1}) is None
    assert message_parts("user/message", [1]) is None
    junk = message_parts("tool/result", {"message": {"content": "x", "source": 3}})
    assert junk is not None
    assert junk.content == []
    assert junk.call_id is None
    assert message_parts("assistant/message", {"content": 5}) is not None


V4_LOGS = sorted(HERE.glob("upstream-generations/*.v4.jsonl"))


@pytest.mark.parametrize("path", V4_LOGS, ids=[p.stem for p in V4_LOGS])
def test_a_v4_tool_result_reads_as_one_tool_result_block(path: Path) -> None:
    """A v4 log's tool result (role ``tool``, its own blocks) reads like the v0 shapes: the
    call id, the tool's blocks, and one ``tool-result`` block wrapping them."""
    import json

    rows = [json.loads(line) for line in path.read_text().splitlines()[1:] if line.strip()]
    results = [row["data"] for row in rows if row.get("type") == "tool/result"]
    for data in results:
        message = data["message"]
        parts = message_parts("tool/result", data)
        assert parts is not None
        assert (parts.role, parts.call_id, parts.result) == (
            "user",
            message["toolCallId"],
            message["content"],
        )
        (block,) = parts.content
        assert block["type"] == "tool-result"
        assert block["toolCallId"] == message["toolCallId"]
        assert block["content"] == message["content"]
    if "tool-error" in path.stem:
        assert any(message_parts("tool/result", d).is_error for d in results)  # type: ignore[union-attr]
