"""The ``data`` shapes of the core event types, as ``TypedDict``s keyed by the wire (camelCase)
keys, declared in the order the TypeScript writer uses. Keys a shape does not declare are kept.
"""

from typing import Any, NotRequired, TypedDict

from dsh_session._json import JsonObject


class TurnStartData(TypedDict):
    """``turn/start``: opens turn ``turn``; ``trigger`` says what started it."""

    turn: int
    trigger: NotRequired[JsonObject]


class TurnEndData(TypedDict):
    """``turn/end``: closes turn ``turn``; ``reason`` is ``{kind, ...}``."""

    turn: int
    reason: JsonObject


class StepData(TypedDict):
    """``step/start`` and ``step/end``: one model call and the tools it asked for."""

    turn: int
    step: int


class UserMessageData(TypedDict):
    """``user/message``: ``{content, source}`` (some writers add ``role`` and ``id``)."""

    content: list[Any]
    source: NotRequired[JsonObject]
    role: NotRequired[str]
    id: NotRequired[str]


class AssistantChunkData(TypedDict):
    """``assistant/chunk``: one raw stream chunk of a step (log-only)."""

    turn: int
    step: int
    chunk: JsonObject


class AssistantMessageData(TypedDict):
    """``assistant/message``: ``{turn, step, content, provenance, usage}`` or the other written
    shape ``{turn, step, message, usage}``; ``interrupted`` marks a prefix finalized on cancel."""

    turn: int
    step: int
    content: NotRequired[list[Any]]
    provenance: NotRequired[JsonObject]
    message: NotRequired[JsonObject]
    usage: NotRequired[JsonObject]
    interrupted: NotRequired[bool]


class ToolCallData(TypedDict):
    """``tool/call``: the call was dispatched; ``arguments`` is the raw JSON string."""

    turn: int
    step: int
    callId: str
    name: str
    arguments: str


class ToolResultData(TypedDict):
    """``tool/result``: ``{turn, step, callId, content, isError}`` or the other written shape
    ``{turn, step, message}``; crash-repair closers add ``error{name, code}``."""

    turn: int
    step: int
    callId: NotRequired[str]
    content: NotRequired[list[Any]]
    isError: NotRequired[bool]
    message: NotRequired[JsonObject]
    error: NotRequired[JsonObject]
    meta: NotRequired[Any]


class RequestHeaderData(TypedDict):
    """``request/header``: the request's non-history half and why it was logged."""

    header: JsonObject
    reason: str


class RequestContextData(TypedDict):
    """``request/context``: route metadata, logged when it changes."""

    provider: str
    model: str
    contextWindow: NotRequired[int]


class SessionTitleData(TypedDict):
    """``session/title``: the latest one is the session's title."""

    title: str
    messageSeqs: NotRequired[list[Any]]
    source: NotRequired[JsonObject]


class FreeData(TypedDict):
    """Data of core events whose inner shape the session model does not read (any keys)."""


DATA_SHAPES: dict[str, type] = {
    "turn/start": TurnStartData,
    "turn/end": TurnEndData,
    "step/start": StepData,
    "step/end": StepData,
    "user/message": UserMessageData,
    "assistant/chunk": AssistantChunkData,
    "assistant/message": AssistantMessageData,
    "tool/call": ToolCallData,
    "tool/result": ToolResultData,
    "request/header": RequestHeaderData,
    "request/context": RequestContextData,
    "session/end-seed": FreeData,
    "session/title": SessionTitleData,
    "hook/invoked": FreeData,
    "hook/result": FreeData,
}
