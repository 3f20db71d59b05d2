"""Issue 13 §1: an open vocabulary of user-message sources, and images stored as attachments.

The shapes are the ones the TypeScript harness's example agents and web UI wrote into their
snapshot logs (MIT, Copyright (c) 2026 DeepSeek); the values here are our own.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from dsh_llm import (
    CONTENT_BLOCK_ADAPTER,
    MESSAGE_ADAPTER,
    RESERVED_SOURCE_KINDS,
    ImageAttachment,
    ImageBlock,
    OtherSource,
    PluginSource,
    TextBlock,
    ToolResultMessage,
    UserMessage,
    UserSource,
)

OTHER_SOURCES: list[dict[str, Any]] = [
    {"kind": "goal", "goalId": "goal-1", "revision": 2, "round": 3},
    {"kind": "agent-instructions", "form": "instructions", "baseline": True, "changes": []},
    {"kind": "workspace-instructions", "form": "instructions", "baselineIdentity": "{}"},
    {"kind": "skill-catalog", "form": "catalog", "entries": [{"name": "s", "description": "d"}]},
    {"kind": "coordinator", "form": "relay", "senderSessionId": "11111111-aaaa"},
    {"kind": "subagent-report", "form": "relay", "senderSessionId": "33333333-bbbb"},
    {"kind": "subagent-settled", "form": "notice", "summary": "done", "senderSessionId": "x"},
    {"kind": "a-kind-nobody-knows-yet", "nested": {"a": [1, None, "b"]}},
]

ATTACHMENT = {
    "attachmentId": "sha256:b1ff9c8ea3a780bad09b346c423d2d0e46815926879b18e841d928376a946640",
    "mediaType": "image/png",
    "bytes": 69,
    "width": 1,
    "height": 1,
    "name": "red.png",
}


def _user(source: dict[str, Any], *blocks: dict[str, Any]) -> dict[str, Any]:
    content = list(blocks) or [{"type": "text", "text": "context"}]
    return {"content": content, "source": source, "role": "user", "id": "m-1"}


@pytest.mark.parametrize("source", OTHER_SOURCES, ids=[s["kind"] for s in OTHER_SOURCES])
def test_a_source_of_another_kind_validates_keeps_its_fields_and_writes_back(
    source: dict[str, Any],
) -> None:
    raw = _user(source)
    message = MESSAGE_ADAPTER.validate_python(raw)
    assert isinstance(message, UserMessage)
    assert isinstance(message.source, OtherSource)
    assert message.source.kind == source["kind"]
    assert message.source.fields == {k: v for k, v in source.items() if k != "kind"}
    assert json.dumps(message.to_wire()) == json.dumps(raw)  # same keys, same order


def test_an_other_source_validates_from_json_text_too() -> None:
    raw = json.dumps(_user(OTHER_SOURCES[0]), separators=(",", ":"))
    assert MESSAGE_ADAPTER.validate_json(raw).to_wire_json() == raw


def test_an_other_source_can_be_built_in_python() -> None:
    source = OtherSource(kind="goal", goalId="g", revision=1, round=1)  # type: ignore[call-arg]
    message = UserMessage.from_text("next round", source=source, id="m")
    assert message.to_wire()["source"] == {"kind": "goal", "goalId": "g", "revision": 1, "round": 1}


@pytest.mark.parametrize("kind", sorted(RESERVED_SOURCE_KINDS))
def test_other_source_refuses_a_reserved_kind(kind: str) -> None:
    with pytest.raises(ValidationError, match="reserved"):
        OtherSource(kind=kind)


def test_known_kinds_keep_their_strict_classes() -> None:
    """A malformed plugin source is refused, never read as an unknown kind."""
    assert isinstance(MESSAGE_ADAPTER.validate_python(_user({"kind": "user"})).source, UserSource)
    plugin = MESSAGE_ADAPTER.validate_python(_user({"kind": "plugin", "plugin": "p"})).source
    assert isinstance(plugin, PluginSource)
    with pytest.raises(ValidationError, match=r"source\.plugin\.plugin"):
        MESSAGE_ADAPTER.validate_python(_user({"kind": "plugin"}))
    with pytest.raises(ValidationError, match="Input should be a valid string"):
        MESSAGE_ADAPTER.validate_python(_user({"kind": "plugin", "plugin": 7}))


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ({}, "needs a string 'kind'"),
        ({"kind": 3}, "needs a string 'kind'"),
        ({"kind": ""}, "at least 1 character"),
        ({"kind": "model", "provider": "p", "model": "m"}, "reserved"),
    ],
)
def test_a_user_message_source_needs_a_usable_kind(source: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        UserMessage.model_validate(_user(source))


def test_an_inline_image_still_validates_and_writes_back() -> None:
    raw = {"type": "image", "data": "aGVsbG8=", "mimeType": "image/jpeg"}
    block = CONTENT_BLOCK_ADAPTER.validate_python(raw)
    assert isinstance(block, ImageBlock)
    assert block.is_inline
    assert block.media_type == "image/jpeg"
    assert block.attachment is None
    assert block.to_wire() == raw


def test_an_attachment_image_validates_and_writes_back_in_its_key_order() -> None:
    raw = {"type": "image", "attachment": ATTACHMENT}
    block = CONTENT_BLOCK_ADAPTER.validate_json(json.dumps(raw))
    assert isinstance(block, ImageBlock)
    assert not block.is_inline
    assert block.attachment == ImageAttachment.model_validate(ATTACHMENT)
    assert block.media_type == "image/png"
    assert block.data is None
    assert json.dumps(block.to_wire()) == json.dumps(raw)


def test_an_attachment_without_a_name_is_valid() -> None:
    attachment = {k: v for k, v in ATTACHMENT.items() if k != "name"}
    block = ImageBlock.model_validate({"type": "image", "attachment": attachment})
    assert block.attachment is not None
    assert block.attachment.name is None
    assert block.to_wire() == {"type": "image", "attachment": attachment}


def test_attachment_images_validate_in_user_and_tool_result_messages() -> None:
    image = {"type": "image", "attachment": ATTACHMENT}
    user = MESSAGE_ADAPTER.validate_python(
        _user({"kind": "user"}, image, {"type": "text", "text": "?"})
    )
    assert isinstance(user, UserMessage)
    assert isinstance(user.content[0], ImageBlock)
    tool = MESSAGE_ADAPTER.validate_python(
        {
            "role": "user",
            "source": {"kind": "tool", "callId": "c1"},
            "content": [{"type": "tool-result", "toolCallId": "c1", "content": [image]}],
        }
    )
    assert isinstance(tool, ToolResultMessage)
    assert tool.result.content[0] == ImageBlock(
        attachment=ImageAttachment.model_validate(ATTACHMENT)
    )


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"type": "image"}, "needs both data and mimeType"),
        ({"type": "image", "data": "aGk="}, r"mimeType is missing"),
        ({"type": "image", "mimeType": "image/png"}, r"data is missing"),
        (
            {"type": "image", "data": "aGk=", "mimeType": "image/png", "attachment": ATTACHMENT},
            "not both",
        ),
        ({"type": "image", "attachment": {**ATTACHMENT, "bytes": "69"}}, r"attachment\.bytes"),
        ({"type": "image", "attachment": {**ATTACHMENT, "width": -1}}, r"attachment\.width"),
        ({"type": "image", "attachment": {**ATTACHMENT, "path": "/x"}}, r"attachment\.path"),
        ({"type": "image", "attachment": {"attachmentId": "a"}}, r"attachment\.mediaType"),
    ],
)
def test_a_malformed_image_block_is_refused_naming_the_problem(
    raw: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ValidationError, match=problem):
        ImageBlock.model_validate(raw)


def test_text_blocks_are_unaffected() -> None:
    assert CONTENT_BLOCK_ADAPTER.validate_python({"type": "text", "text": "x"}) == TextBlock(
        text="x"
    )


def test_message_source_tells_every_kind_apart() -> None:
    from pydantic import TypeAdapter

    from dsh_llm import MessageSource, ModelSource, ToolSource

    adapter: TypeAdapter[Any] = TypeAdapter(MessageSource)
    assert isinstance(adapter.validate_python({"kind": "user"}), UserSource)
    assert isinstance(adapter.validate_python({"kind": "plugin", "plugin": "p"}), PluginSource)
    model = adapter.validate_python({"kind": "model", "provider": "p", "model": "m"})
    assert isinstance(model, ModelSource)
    assert isinstance(adapter.validate_python({"kind": "tool", "callId": "c"}), ToolSource)
    assert isinstance(adapter.validate_python({"kind": "goal", "round": 1}), OtherSource)
    with pytest.raises(ValidationError, match=r"tool\.callId"):
        adapter.validate_python({"kind": "tool"})  # a reserved kind never falls back
