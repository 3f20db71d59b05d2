"""Surface node → model message, for both data shapes format v0 writers used (the TypeScript
harness's older and current ``user/message``, ``assistant/message`` and ``tool/result`` data)."""

from __future__ import annotations

from pydantic import ValidationError

from dsh_llm import AssistantMessage, Message, ToolResultMessage, UserMessage
from dsh_session._errors import SessionValidationError, describe_validation_error
from dsh_session._events import (
    SessionEvent,
)
from dsh_session._generation_derive import v0_message_of
from dsh_session._json import (
    JsonObject,
)


def _assistant(data: JsonObject) -> AssistantMessage | None:
    if "message" in data:
        message = data["message"]
        if not message.get("content"):
            return None  # the node only carries usage (max tokens before any content)
        return AssistantMessage.model_validate(message)
    content = data.get("content")
    if not content:
        return None
    provenance = data.get("provenance") or {}
    return AssistantMessage.model_validate(
        {"role": "assistant", "content": content, "source": {"kind": "model", **provenance}}
    )


def _tool_result(data: JsonObject) -> ToolResultMessage:
    if "message" in data:
        message = data["message"]
        if isinstance(message, dict) and message.get("role") == "tool":  # v4: no wrapper block
            message = v0_message_of(message)
        return ToolResultMessage.model_validate(message)
    call_id = data.get("callId")
    block: JsonObject = {
        "type": "tool-result",
        "toolCallId": call_id,
        "content": data.get("content"),
    }
    if "isError" in data:
        block["isError"] = data["isError"]
    return ToolResultMessage.model_validate(
        {"source": {"kind": "tool", "callId": call_id}, "content": [block]}
    )


def _has_file_block(content: object) -> bool:
    return isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") == "file" for block in content
    )


def _without_meta(data: JsonObject) -> JsonObject:
    """A ``user/message`` as the model sees it: the ``meta`` object the TypeScript harness wrote
    beside the message from 2026-07-23 to 07-26 is bookkeeping (never model-visible), so the
    derived message leaves it out; the event keeps it byte for byte."""
    if isinstance(data, dict) and "meta" in data:
        return {key: value for key, value in data.items() if key != "meta"}
    return data


def project_message(event: SessionEvent) -> Message | None:
    """The model message a surface event stands for, or ``None`` (an empty assistant message,
    or a non-surface event).

    ``user/message`` data is the message; ``assistant/message`` is ``data.message`` or, in the
    ``{content, provenance}`` shape, a message with a model source built from the provenance;
    ``tool/result`` is ``data.message`` or, in the ``{callId, content, isError}`` shape, a
    one-block tool-result message; a v4 role-``tool`` result and a v3+ ``file`` block are
    projected to those forms (:mod:`dsh_session._generation_derive`); ``system/message`` and
    ``developer/message`` give ``None``. Raises :class:`SessionValidationError` (code
    ``DERIVE``) when the data is not a valid message.
    """
    data = event.to_wire()["data"]
    try:
        if event.type == "user/message":
            if isinstance(data, dict) and _has_file_block(data.get("content")):  # v3+
                data = v0_message_of(data)
            return UserMessage.model_validate(_without_meta(data))
        if event.type == "assistant/message":
            return _assistant(data)
        if event.type == "tool/result":
            return _tool_result(data)
    except ValidationError as exc:
        raise SessionValidationError(
            f"{event.type} data is not a valid message: {describe_validation_error(exc)}",
            code="DERIVE",
            seq=event.seq,
        ) from exc
    except (AttributeError, TypeError) as exc:
        raise SessionValidationError(
            f"{event.type} data is not a valid message: {exc}", code="DERIVE", seq=event.seq
        ) from exc
    return None
