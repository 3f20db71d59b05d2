"""The event envelope and the typed core events of format v0.

An event is a small immutable object over its *wire dict*: the validated JSON object of the line,
in wire key order (``type, seq, time, data, ignorable?, sourceEventSeqs?, surfaceOp?``). Its
``data`` is that JSON object, typed per event class as a ``TypedDict`` whose keys are the wire
(camelCase) keys: scalar fields the session model reads (``turn``, ``step``, ``callId``) are
checked strictly, nested structures (content blocks, sources, chunks, headers, reasons) stay JSON
values. Keys a type does not declare are kept, in order, after the declared ones, so a decoded
line re-encodes byte for byte. The wire dict is shared: treat ``data`` as read-only.
"""

from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Literal, NoReturn, TypeVar

from dsh_session._data import (
    AssistantChunkData,
    AssistantMessageData,
    FreeData,
    RequestContextData,
    RequestHeaderData,
    SessionTitleData,
    StepData,
    ToolCallData,
    ToolResultData,
    TurnEndData,
    TurnStartData,
    UserMessageData,
)
from dsh_session._json import JsonObject, JsonValue


@dataclass(frozen=True, slots=True)
class SurfaceReplace:
    """``{op:'replace', start, end}``: the event replaces the surface nodes ``start..end``
    (inclusive; both are node *seqs*, not positions). Generations v3 and v4 spell it
    ``{op:'replace', startSeq, endSeq}``; :meth:`to_wire` writes the v0 spelling."""

    start: int
    end: int
    op: ClassVar[Literal["replace"]] = "replace"

    def to_wire(self) -> JsonObject:
        """The wire form ``{"op":"replace","start":..,"end":..}``."""
        return {"op": "replace", "start": self.start, "end": self.end}


SurfaceOp = Literal["append"] | SurfaceReplace
"""A surface event's operation: ``"append"`` or a :class:`SurfaceReplace`."""
D = TypeVar("D")


class _Event(Generic[D]):
    """An immutable view over one validated wire dict."""

    __slots__ = ("_wire",)
    _wire: JsonObject
    event_type: ClassVar[str | None] = None

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"session events are immutable (cannot set {name!r})")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"session events are immutable (cannot delete {name!r})")

    @property
    def type(self) -> str:
        """The event type (``"turn/start"``, ``"user/message"``, a plugin type, ...)."""
        return self._wire["type"]  # type: ignore[no-any-return]

    @property
    def seq(self) -> int:
        """The event's index in its log."""
        return self._wire["seq"]  # type: ignore[no-any-return]

    @property
    def time(self) -> int:
        """Epoch milliseconds at append."""
        return self._wire["time"]  # type: ignore[no-any-return]

    @property
    def data(self) -> D:
        """The event's data (a JSON object for every core type; read-only)."""
        return self._wire["data"]  # type: ignore[no-any-return]

    @property
    def ignorable(self) -> bool | None:
        """``True`` marks a purely informational record; ``None`` (absent) means required."""
        return self._wire.get("ignorable")

    @property
    def source_event_seqs(self) -> tuple[int, ...] | None:
        """The seqs this surface event was built from (``None``: not recorded)."""
        seqs = self._wire.get("sourceEventSeqs")
        return None if seqs is None else tuple(seqs)

    @property
    def surface_op(self) -> SurfaceOp | None:
        """``"append"``, a :class:`SurfaceReplace`, or ``None`` for a non-surface event."""
        op = self._wire.get("surfaceOp")
        if op is None or op == "append":
            return op
        if "startSeq" in op:  # the spelling of the harness's generations v3 and v4
            return SurfaceReplace(op["startSeq"], op["endSeq"])
        return SurfaceReplace(op["start"], op["end"])

    def to_wire(self) -> JsonObject:
        """The event as its JSON object, in wire key order (shared: do not mutate)."""
        return self._wire

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Event):
            return NotImplemented
        return type(self) is type(other) and self._wire == other._wire

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._wire!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self._wire))


_new = object.__new__
_set_wire = _Event.__dict__["_wire"].__set__


def _rebuild(cls: type[_Event[Any]], wire: JsonObject) -> _Event[Any]:
    event = _new(cls)
    _set_wire(event, wire)
    return event


class TurnStartEvent(_Event[TurnStartData]):
    """``turn/start``."""

    __slots__ = ()
    event_type = "turn/start"


class TurnEndEvent(_Event[TurnEndData]):
    """``turn/end``."""

    __slots__ = ()
    event_type = "turn/end"


class StepStartEvent(_Event[StepData]):
    """``step/start``."""

    __slots__ = ()
    event_type = "step/start"


class StepEndEvent(_Event[StepData]):
    """``step/end``."""

    __slots__ = ()
    event_type = "step/end"


class UserMessageEvent(_Event[UserMessageData]):
    """``user/message`` (surface)."""

    __slots__ = ()
    event_type = "user/message"


class AssistantChunkEvent(_Event[AssistantChunkData]):
    """``assistant/chunk`` (log-only)."""

    __slots__ = ()
    event_type = "assistant/chunk"


class AssistantMessageEvent(_Event[AssistantMessageData]):
    """``assistant/message`` (surface)."""

    __slots__ = ()
    event_type = "assistant/message"


class ToolCallEvent(_Event[ToolCallData]):
    """``tool/call`` (log-only)."""

    __slots__ = ()
    event_type = "tool/call"


class ToolResultEvent(_Event[ToolResultData]):
    """``tool/result`` (surface)."""

    __slots__ = ()
    event_type = "tool/result"


class RequestHeaderEvent(_Event[RequestHeaderData]):
    """``request/header`` (log-only)."""

    __slots__ = ()
    event_type = "request/header"


class RequestContextEvent(_Event[RequestContextData]):
    """``request/context`` (log-only)."""

    __slots__ = ()
    event_type = "request/context"


class SessionEndSeedEvent(_Event[FreeData]):
    """``session/end-seed``: marks the end of a constructor seed."""

    __slots__ = ()
    event_type = "session/end-seed"


class SessionTitleEvent(_Event[SessionTitleData]):
    """``session/title`` (latest wins)."""

    __slots__ = ()
    event_type = "session/title"


class HookInvokedEvent(_Event[FreeData]):
    """``hook/invoked``."""

    __slots__ = ()
    event_type = "hook/invoked"


class HookResultEvent(_Event[FreeData]):
    """``hook/result``."""

    __slots__ = ()
    event_type = "hook/result"


class OpaqueEvent(_Event[JsonValue]):
    """A plugin or unknown event type: ``data`` is any JSON value, kept byte for byte."""

    __slots__ = ()


SessionEvent = (
    TurnStartEvent
    | TurnEndEvent
    | StepStartEvent
    | StepEndEvent
    | UserMessageEvent
    | AssistantChunkEvent
    | AssistantMessageEvent
    | ToolCallEvent
    | ToolResultEvent
    | RequestHeaderEvent
    | RequestContextEvent
    | SessionEndSeedEvent
    | SessionTitleEvent
    | HookInvokedEvent
    | HookResultEvent
    | OpaqueEvent
)
"""Any event of a session log: a typed core event, or an :class:`OpaqueEvent`."""

CORE_EVENT_CLASSES: tuple[type[_Event[Any]], ...] = (
    TurnStartEvent,
    TurnEndEvent,
    StepStartEvent,
    StepEndEvent,
    UserMessageEvent,
    AssistantChunkEvent,
    AssistantMessageEvent,
    ToolCallEvent,
    ToolResultEvent,
    RequestHeaderEvent,
    RequestContextEvent,
    SessionEndSeedEvent,
    SessionTitleEvent,
    HookInvokedEvent,
    HookResultEvent,
)
