"""The model's view of the harness's later generations, in this library's message vocabulary.

``dsh_llm`` speaks format v0's messages (user, assistant, and a tool result as a user message
holding one ``tool-result`` block). The later generations differ in three places, projected
here so :func:`~dsh_session.project_message` and the request-header fold need only ask:

- a v4 tool result is ``{role: 'tool', toolCallId, content, isError?}``: it becomes the v0 form,
  one ``tool-result`` block answering ``toolCallId`` (``isError`` carried over);
- a v3+ ``file`` content block (an uploaded attachment, ``{type: 'file', attachment: {attachmentId,
  name?, bytes?, mediaType?}}``) has no ``dsh_llm`` block: it becomes a text block naming the
  attachment, so the message keeps its place and its other blocks;
- a snapshot of the harness's own test suite lists a request header's tools by name only
  (``"tools": ["bash", ...]``): each name folds as ``{"name": ...}``.

``system/message`` and ``developer/message`` nodes are not messages of this vocabulary: the
system prompt is :attr:`Session.system_prompt <dsh_session.Session.system_prompt>`, and a
developer node (tool additions and removals) is not part of the derived history.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from dsh_session._errors import SessionValidationError, describe_validation_error
from dsh_session._events import SessionEvent
from dsh_session._json import JsonObject
from dsh_session._request_header import EpochHeader, header_of_event

__all__ = ["file_block_text", "header_of_generation_event", "v0_message_of"]


def file_block_text(block: JsonObject) -> str:
    """The text a ``file`` block stands for in the derived history: ``[attached file: <name>
    (<bytes> bytes, <attachmentId>)]``, with what the attachment names."""
    attachment = block.get("attachment")
    facts = attachment if isinstance(attachment, dict) else {}
    name = facts.get("name") if isinstance(facts.get("name"), str) else "unnamed"
    details = [f"{facts['bytes']} bytes"] if isinstance(facts.get("bytes"), int) else []
    if isinstance(facts.get("attachmentId"), str):
        details.append(facts["attachmentId"])
    suffix = f" ({', '.join(details)})" if details else ""
    return f"[attached file: {name}{suffix}]"


def _blocks(content: Any) -> Any:
    if not isinstance(content, list) or not any(
        isinstance(block, dict) and block.get("type") == "file" for block in content
    ):
        return content
    return [
        {"type": "text", "text": file_block_text(block)}
        if isinstance(block, dict) and block.get("type") == "file"
        else block
        for block in content
    ]


def v0_message_of(message: JsonObject) -> JsonObject:
    """A later generation's message object in the form ``dsh_llm`` validates (see the module);
    any other message comes back as it is (``file`` blocks replaced)."""
    if message.get("role") == "tool":
        block: JsonObject = {
            "type": "tool-result",
            "toolCallId": message.get("toolCallId"),
            "content": message.get("content"),
        }
        if "isError" in message:
            block["isError"] = message["isError"]
        converted: JsonObject = {"source": message.get("source"), "content": [block]}
        if "id" in message:
            converted["id"] = message["id"]
        return converted
    content = message.get("content")
    blocks = _blocks(content)
    if blocks is content:
        return message
    return {**message, "content": blocks}


def header_of_generation_event(event: SessionEvent) -> EpochHeader:
    """:func:`~dsh_session._request_header.header_of_event` for a v2+ ``request/header``: tools
    listed by name fold as ``{"name": ...}``. Raises ``SessionValidationError`` (``DATA``)."""
    data = event.to_wire()["data"]
    header = data.get("header") if isinstance(data, dict) else None
    tools = header.get("tools") if isinstance(header, dict) else None
    if not (isinstance(tools, list) and any(isinstance(tool, str) for tool in tools)):
        return header_of_event(event)
    named = [{"name": tool} if isinstance(tool, str) else tool for tool in tools]
    try:
        return EpochHeader.from_wire({**header, "tools": named}).canonical()  # type: ignore[dict-item]
    except ValidationError as exc:
        raise SessionValidationError(
            f"request/header: {describe_validation_error(exc)}", code="DATA", seq=event.seq
        ) from exc
