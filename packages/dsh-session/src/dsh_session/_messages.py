"""Message data of the three surface types: what a writer stores, and one view over both shapes.

Format v0 was written in two message shapes without a version bump. Until 2026-07-28 the
TypeScript harness stored messages bare and without identity: ``user/message`` ``{content,
source}``, ``assistant/message`` ``{turn, step, content, provenance, usage?}`` and
``tool/result`` ``{turn, step, callId, content, isError}``. Since then it stores every message
whole and identified: ``user/message`` data *is* the message ``{content, source, role: "user",
id}``; ``assistant/message`` is ``{turn, step, message: {role: "assistant", content, source:
{kind: "model", provider, model, replayState?}, id}, usage?}``; ``tool/result`` is ``{turn,
step, message: {source: {kind: "tool", callId}, content: [one tool-result block], role:
"user", id}, error?, meta?}``. The harness reads the bare shapes only through a compatibility
path that mints ``legacy-message:<session id>:<seq>`` ids, and refuses them in a seed.

The writers here produce the identified shape in the harness's key order; ids are random
UUIDs (``str(uuid4())``), as the harness mints them. :func:`message_parts` reads either shape,
so a reader of ``content``/``source``/``callId`` never branches on the shape itself.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dsh_session._json import JsonObject

__all__ = [
    "MessageParts",
    "assistant_message_data",
    "message_parts",
    "new_message_id",
    "tool_result_data",
    "user_message_data",
]


def new_message_id() -> str:
    """A fresh message id, as the TypeScript harness mints one (a random UUID, lower case)."""
    return str(uuid.uuid4())


def user_message_data(
    content: Sequence[Any], source: Mapping[str, Any], *, id: str | None = None
) -> JsonObject:
    """``user/message`` data in the identified shape: ``{content, source, role: "user", id}``.

    ``id`` defaults to a fresh :func:`new_message_id`.
    """
    return {
        "content": list(content),
        "source": dict(source),
        "role": "user",
        "id": new_message_id() if id is None else id,
    }


def assistant_message_data(
    turn: int,
    step: int,
    content: Sequence[Any],
    provenance: Mapping[str, Any],
    *,
    usage: Mapping[str, Any] | None = None,
    interrupted: bool = False,
    id: str | None = None,
) -> JsonObject:
    """``assistant/message`` data in the identified shape.

    ``provenance`` is ``{provider, model, replayState?}`` (a ``kind`` in it is ignored: the
    source's kind is ``model``). The keys follow the harness: ``{turn, step, message, usage?}``
    for a finished step, ``{turn, step, message, interrupted: true, usage?}`` for a prefix
    finalized on cancel. ``id`` defaults to a fresh :func:`new_message_id`.
    """
    source: JsonObject = {"kind": "model"}
    source.update((key, value) for key, value in provenance.items() if key != "kind")
    data: JsonObject = {
        "turn": turn,
        "step": step,
        "message": {
            "role": "assistant",
            "content": list(content),
            "source": source,
            "id": new_message_id() if id is None else id,
        },
    }
    if interrupted:
        data["interrupted"] = True
    if usage is not None:
        data["usage"] = dict(usage)
    return data


def tool_result_data(
    turn: int,
    step: int,
    call_id: str,
    content: Sequence[Any],
    *,
    is_error: bool,
    error: Mapping[str, Any] | None = None,
    meta: Any = None,
    id: str | None = None,
) -> JsonObject:
    """``tool/result`` data in the identified shape: ``{turn, step, message, error?, meta?}``,
    the message holding exactly one ``tool-result`` block answering ``call_id``.

    ``meta`` ``None`` means absent. ``id`` defaults to a fresh :func:`new_message_id` (a
    replacement result passes the id of the result it replaces, as the harness does).
    """
    data: JsonObject = {
        "turn": turn,
        "step": step,
        "message": {
            "source": {"kind": "tool", "callId": call_id},
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": call_id,
                    "content": list(content),
                    "isError": is_error,
                }
            ],
            "role": "user",
            "id": new_message_id() if id is None else id,
        },
    }
    if error is not None:
        data["error"] = dict(error)
    if meta is not None:
        data["meta"] = meta
    return data


@dataclass(frozen=True, slots=True)
class MessageParts:
    """The message a surface event's data carries, read from either shape.

    ``role`` is ``user`` or ``assistant`` (a tool result is a ``user`` message); ``content`` is
    the message's content (for a tool result: its one ``tool-result`` block, as the model sees
    it); ``source`` the message source (for the bare assistant shape: ``{kind: "model",
    **provenance}``; for the bare tool result: ``{kind: "tool", callId}``); ``id`` the stored id
    (``None`` in the bare shapes). For a ``tool/result``, ``call_id``, ``result`` (the tool's
    own content blocks) and ``is_error`` are filled in; they are ``None`` otherwise.
    ``identified`` says the data is in the identified shape. A v4 log's tool result (role
    ``tool``, its own blocks) reads like the others: one ``tool-result`` block made from it.
    """

    role: str
    content: list[Any]
    source: JsonObject | None
    id: str | None
    identified: bool
    call_id: str | None = None
    result: list[Any] | None = None
    is_error: bool | None = None


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: object) -> JsonObject | None:
    return value if isinstance(value, dict) else None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def message_parts(event_type: str, data: object) -> MessageParts | None:
    """The message parts of a ``user/message``, ``assistant/message`` or ``tool/result``
    event's ``data`` in either shape (see the module docs), or ``None`` for any other type or
    data that is not an object. Never raises: a field of the wrong type reads as absent (an
    empty list, ``None``), so a display or a meter can read an untrusted log."""
    if not isinstance(data, dict):
        return None
    if event_type == "user/message":
        return MessageParts(
            role="user",
            content=_list(data.get("content")),
            source=_dict(data.get("source")),
            id=_str(data.get("id")),
            identified="id" in data and "role" in data,
        )
    if event_type == "assistant/message":
        message = _dict(data.get("message"))
        if message is not None:
            return MessageParts(
                role="assistant",
                content=_list(message.get("content")),
                source=_dict(message.get("source")),
                id=_str(message.get("id")),
                identified=True,
            )
        provenance = _dict(data.get("provenance"))
        return MessageParts(
            role="assistant",
            content=_list(data.get("content")),
            source=None if provenance is None else {"kind": "model", **provenance},
            id=None,
            identified=False,
        )
    if event_type == "tool/result":
        message = _dict(data.get("message"))
        if message is not None and message.get("role") == "tool":
            # a v4 log: the tool's own blocks, no tool-result wrapper (one is made here)
            call = _str(message.get("toolCallId"))
            blocks = _list(message.get("content"))
            flag = message.get("isError")
            wrapped: JsonObject = {"type": "tool-result", "toolCallId": call, "content": blocks}
            if isinstance(flag, bool):
                wrapped["isError"] = flag
            return MessageParts(
                role="user",
                content=[wrapped],
                source=_dict(message.get("source")),
                id=_str(message.get("id")),
                identified=True,
                call_id=call,
                result=blocks,
                is_error=flag if isinstance(flag, bool) else None,
            )
        if message is not None:
            content = _list(message.get("content"))
            block = _dict(content[0]) if content else None
            source = _dict(message.get("source"))
            call_id = _str(source.get("callId")) if source is not None else None
            if call_id is None and block is not None:
                call_id = _str(block.get("toolCallId"))
            is_error = block.get("isError") if block is not None else None
            return MessageParts(
                role="user",
                content=content,
                source=source,
                id=_str(message.get("id")),
                identified=True,
                call_id=call_id,
                result=_list(block.get("content")) if block is not None else [],
                is_error=is_error if isinstance(is_error, bool) else None,
            )
        call_id = _str(data.get("callId"))
        result = _list(data.get("content"))
        is_error = data.get("isError")
        block_: JsonObject = {"type": "tool-result", "toolCallId": call_id, "content": result}
        if "isError" in data:
            block_["isError"] = is_error
        return MessageParts(
            role="user",
            content=[block_],
            source={"kind": "tool", "callId": call_id},
            id=None,
            identified=False,
            call_id=call_id,
            result=result,
            is_error=is_error if isinstance(is_error, bool) else None,
        )
    return None
