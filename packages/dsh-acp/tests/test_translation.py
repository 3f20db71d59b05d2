"""What the editor is told: prompts read from ACP blocks (bounded, only the kinds offered), tool
calls described by kind, title, locations and diff, and session events turned into updates."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from acp import resource_block, resource_link_block, text_block
from acp.schema import (
    AgentMessageChunk,
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    FileEditToolCallContent,
    ImageContentBlock,
    TextResourceContents,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from dsh_acp import MAX_PROMPT_CHARS, PromptContentError, UpdateTranslator, call_view, prompt_text


def _event(kind: str, seq: int, data: dict[str, object]) -> object:
    """What the translator reads of an event: its type and data (``seq`` for readability)."""
    return SimpleNamespace(type=kind, seq=seq, data=data)


def test_a_prompt_joins_text_links_and_embedded_text() -> None:
    embedded = resource_block(TextResourceContents(uri="file:///a.py", text="x = 1"))
    text = prompt_text(
        [text_block("Look at"), resource_link_block("a.py", "file:///a.py"), embedded]
    )
    assert (
        text
        == 'Look at\n\n[@a.py](file:///a.py)\n\n<context uri="file:///a.py">\nx = 1\n</context>'
    )


@pytest.mark.parametrize(
    "block",
    [
        ImageContentBlock(type="image", data="AAAA", mime_type="image/png"),
        EmbeddedResourceContentBlock(
            type="resource", resource=BlobResourceContents(uri="file:///b", blob="AAAA")
        ),
    ],
    ids=["image", "binary resource"],
)
def test_a_block_the_agent_did_not_offer_is_refused(block: object) -> None:
    with pytest.raises(PromptContentError):
        prompt_text([block])  # type: ignore[list-item]


def test_an_empty_or_oversized_prompt_is_refused() -> None:
    with pytest.raises(PromptContentError, match="empty"):
        prompt_text([text_block("   ")])
    with pytest.raises(PromptContentError, match=str(MAX_PROMPT_CHARS)):
        prompt_text([text_block("x" * MAX_PROMPT_CHARS), text_block("y")])


def test_an_edit_is_described_with_its_absolute_path_and_diff() -> None:
    arguments = json.dumps({"file_path": "src/a.py", "old_string": "x = 1", "new_string": "x = 2"})
    view = call_view("edit", arguments, "/work/project")
    assert (view.kind, view.title) == ("edit", "Edit /work/project/src/a.py")
    assert [loc.path for loc in view.locations] == ["/work/project/src/a.py"]
    (diff,) = view.content
    assert isinstance(diff, FileEditToolCallContent)
    assert (diff.old_text, diff.new_text) == ("x = 1", "x = 2")


def test_a_command_title_is_one_bounded_line() -> None:
    view = call_view("bash", {"command": "echo a\necho b " + "x" * 500}, "/p")
    assert view.kind == "execute"
    assert "\n" not in view.title
    assert len(view.title) <= 200
    assert call_view("mcp__git__log", "not json", None).kind == "other"


def test_live_events_become_chunks_and_tool_call_statuses() -> None:
    translator = UpdateTranslator("/p")
    call = {"callId": "c1", "name": "bash", "arguments": json.dumps({"command": "ls"})}
    result = {"callId": "c1", "content": [{"type": "text", "text": "a.txt"}], "isError": False}
    chunk = {"chunk": {"type": "text-delta", "text": "Hi"}}
    updates = [
        update
        for seq, (kind, data) in enumerate(
            [("step/start", {}), ("assistant/chunk", chunk), ("tool/call", call)]
        )
        for update in translator.live(_event(kind, seq, data))  # type: ignore[arg-type]
    ]
    updates += translator.output("c1", "a.txt\n")
    updates += translator.live(_event("tool/result", 3, result))  # type: ignore[arg-type]
    assert isinstance(updates[0], AgentMessageChunk)
    assert isinstance(updates[1], ToolCallStart)
    assert updates[1].status == "pending"
    statuses = [u.status for u in updates[2:] if isinstance(u, ToolCallProgress)]
    assert statuses == ["in_progress", "in_progress", "completed"]


def test_replay_shows_the_prompts_and_answers_not_plugin_notices() -> None:
    translator = UpdateTranslator("/p")
    user = {"content": [{"type": "text", "text": "Hello?"}], "source": {"kind": "user"}}
    notice = {"content": [{"type": "text", "text": "job done"}], "source": {"kind": "plugin"}}
    answer = {"turn": 1, "step": 1, "content": [{"type": "text", "text": "Hi."}]}
    events = [
        _event("user/message", 0, user),
        _event("user/message", 1, notice),
        _event("assistant/message", 2, answer),
    ]
    updates = translator.replay(events)  # type: ignore[arg-type]
    assert [type(u) for u in updates] == [UserMessageChunk, AgentMessageChunk]


def test_replay_shows_a_prompts_inline_images_after_its_text() -> None:
    translator = UpdateTranslator("/p")
    image = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    stored = {"type": "image", "attachment": {"attachmentId": "a1", "mediaType": "image/png"}}
    user = {
        "content": [{"type": "text", "text": "What is this?"}, image, stored],
        "source": {"kind": "user"},
    }
    updates = translator.replay([_event("user/message", 0, user)])  # type: ignore[list-item]
    assert [type(u) for u in updates] == [UserMessageChunk, UserMessageChunk]
    shown = updates[1].content
    assert isinstance(shown, ImageContentBlock)
    assert (shown.data, shown.mime_type) == ("iVBORw0KGgo=", "image/png")
