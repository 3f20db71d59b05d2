"""Reading the TypeScript harness's later log generations (v2, v3, v4) into the same model.

The harness kept format v0 (``session.jsonl``) until 2026-09-03 and then wrote generation-
addressed logs: v2 (``session.v2.jsonl``, 0.1.3, 2026-09-04), v3 (0.1.5, 2026-09-08) and v4
(0.1.7 and 0.2.x, from 2026-09-16). This module holds what differs, so the v0 codec and
:class:`~dsh_session.Session` stay as they are and only ask it when a header is not v0:

- **header**: v2+ stores ``isSeeded`` (a boolean, always present) instead of ``seedLength``, and
  ``delegationDepth`` is required. The inherited cut of a seeded log is in its body: the seq of
  the last ``session/end-seed`` whose data is exactly ``{"inherited": true}`` (the marker itself
  is not inherited) — :func:`generation_cut`.
- **rows**: one event per row (no packed chunk rows), no ``assistant/chunk`` (v2 embeds the
  timed stream in ``assistant/message.data.stream``; an attempt that ended without a message is
  ``assistant/attempt``), no ``sourceEventSeqs`` on ``assistant/message``.
- **surface**: v3 adds ``system/message`` (the system prompt as a surface node; a
  ``request/header`` no longer carries ``system``) and spells a replacement
  ``{"op":"replace","startSeq":S,"endSeq":E}``; v4 adds ``developer/message`` (tool additions and
  removals, ``headerSeq`` naming the header that holds an added tool's schema) and makes a tool
  result a role-``tool`` message with ``toolCallId`` and no ``tool-result`` wrapper block.
- **unknown types**, each generation's own rule: a v2 log may hold only v2's closed inventory
  (the harness's v2 to v3 migration refuses anything else, even an ignorable record); a v3 or v4
  log may also hold unknown types marked ``"ignorable": true`` (kept as opaque data), never an
  unknown required one.

Everything here reads; this library writes v0 only (a v2+ :class:`~dsh_session.Session` refuses
appends and forks).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dsh_session._errors import EventDecodeError, HeaderDecodeError
from dsh_session._events import SessionEvent
from dsh_session._json import MAX_SAFE_INTEGER, JsonObject

__all__ = [
    "GENERATION_EVENT_TYPES",
    "READ_GENERATIONS",
    "WRITTEN_GENERATION",
    "check_generation_event",
    "generation_cut",
    "generation_header_fields",
    "generation_header_wire",
    "generation_surface_types",
    "is_generation_cut_marker",
]

READ_GENERATIONS: frozenset[int] = frozenset({0, 1, 2, 3, 4})
"""The header versions this library reads (v1 was never released: its rows are v0's)."""

WRITTEN_GENERATION = 0
"""The only generation this library writes."""

_V0_INVENTORY = frozenset(
    {
        "agent-preset/selected",
        "agent/inbox/spliced",
        "approval/asked",
        "approval/decided",
        "approval/policy",
        "assistant/chunk",
        "assistant/message",
        "command/done",
        "command/run",
        "compaction/end",
        "compaction/prune",
        "compaction/start",
        "compaction/summary",
        "feedback/record",
        "goal/change",
        "hook/invoked",
        "hook/result",
        "llm/retry",
        "llm/retry-started",
        "model/selection",
        "permission/preset",
        "plan/mode",
        "request/context",
        "request/header",
        "sandbox/mode",
        "schedule/change",
        "session-log-deepseek/delivery-accepted",
        "session/end-seed",
        "session/title",
        "session/title-llm-request",
        "step/end",
        "step/start",
        "subagent/descriptor",
        "subagent/model-selection-policy",
        "team/member",
        "team/message/delivered",
        "team/message/queued",
        "team/task",
        "todo/write",
        "tool-workflow/agent-end",
        "tool-workflow/agent-start",
        "tool-workflow/run-end",
        "tool-workflow/run-start",
        "tool/call",
        "tool/code-dispatch",
        "tool/code-dispatch-start",
        "tool/result",
        "turn/end",
        "turn/start",
        "user/message",
        "web/deepseek-search-llm-request",
    }
)
"""The 51 event types of the harness's released v0 reader (dsh-v0.1.2-rc.1)."""

_V2_INVENTORY = (_V0_INVENTORY - {"assistant/chunk"}) | {
    "assistant/attempt",
    "feedback/message-put",
    "feedback/message-delete",
}
_V3_INVENTORY = (_V2_INVENTORY - {"tool/code-dispatch", "tool/code-dispatch-start"}) | {
    "system/message",
    "tool/ptc-dispatch",
    "tool/ptc-dispatch-start",
    "deliverables/presented",
    "image/offload",
    "subagent/catalog",
}
_V4_INVENTORY = _V3_INVENTORY | {"developer/message", "workspace/changes"}

GENERATION_EVENT_TYPES: dict[int, frozenset[str]] = {
    2: _V2_INVENTORY,
    3: _V3_INVENTORY,
    4: _V4_INVENTORY,
}
"""The event types each later generation knows (v2: 53, v3: 57, v4: 59)."""

_SURFACE_V0 = frozenset({"user/message", "assistant/message", "tool/result"})
_SURFACE: dict[int, frozenset[str]] = {
    0: _SURFACE_V0,
    1: _SURFACE_V0,
    2: _SURFACE_V0,
    3: _SURFACE_V0 | {"system/message"},
    4: _SURFACE_V0 | {"system/message", "developer/message"},
}

_HEADER_KEYS = (
    "type",
    "version",
    "id",
    "createdAt",
    "cwd",
    "parentSession",
    "isSeeded",
    "origin",
    "delegationDepth",
    "agentPreset",
)
_HEADER_KEY_SET = frozenset(_HEADER_KEYS)
_REQUIRED_HEADER_KEYS = frozenset(
    {"type", "version", "id", "createdAt", "isSeeded", "delegationDepth"}
)


def generation_surface_types(version: int) -> frozenset[str]:
    """The surface event types of generation ``version`` (v3 adds ``system/message``, v4
    ``developer/message``)."""
    return _SURFACE.get(version, _SURFACE_V0)


def generation_header_fields(wire: dict[str, Any]) -> dict[str, Any]:
    """The v2+ physical header ``wire`` (version already checked) as ``SessionHeader`` fields.

    Exactly the keys ``type, version, id, createdAt, isSeeded, delegationDepth`` and optionally
    ``cwd, parentSession, origin, agentPreset``; ``seedLength`` belongs to v0 and v1. Raises
    :class:`HeaderDecodeError` naming the problem.
    """
    version = wire["version"]
    if wire.get("type") != "session":
        raise HeaderDecodeError(f"line 1 must be tagged type 'session', not {wire.get('type')!r}")
    unknown = [key for key in wire if key not in _HEADER_KEY_SET]
    if unknown:
        hint = (
            " (a v0 key: v2 and later mark a fork with isSeeded)" if "seedLength" in unknown else ""
        )
        raise HeaderDecodeError(f"unexpected v{version} header key(s) {unknown}{hint}")
    missing = sorted(_REQUIRED_HEADER_KEYS - wire.keys())
    if missing:
        raise HeaderDecodeError(f"a v{version} header lacks required key(s) {missing}")
    if type(wire["isSeeded"]) is not bool:
        raise HeaderDecodeError(f"isSeeded must be a boolean, not {wire['isSeeded']!r:.40}")
    fields = {key: value for key, value in wire.items() if key != "type"}
    for key in ("cwd", "parentSession", "origin", "agentPreset"):
        if key in fields and fields[key] is None:
            raise HeaderDecodeError(f"{key} is null (optional header fields are omitted)")
    return fields


def generation_header_wire(fields: dict[str, Any]) -> dict[str, Any]:
    """The v2+ physical header object from ``SessionHeader`` wire fields (keys in the harness's
    order; ``isSeeded`` always written, optional fields omitted when ``None``)."""
    wire: dict[str, Any] = {"type": "session"}
    for key in _HEADER_KEYS[1:]:
        value = fields.get(key)
        if value is not None:
            wire[key] = value
    return wire


def is_generation_cut_marker(event: SessionEvent) -> bool:
    """Whether ``event`` is a v2+ inherited-cut marker: ``session/end-seed`` with data exactly
    ``{"inherited": true}``."""
    if event.type != "session/end-seed":
        return False
    data = event.to_wire()["data"]
    return type(data) is dict and len(data) == 1 and data.get("inherited") is True


def generation_cut(events: Sequence[SessionEvent], *, seeded: bool) -> int:
    """The inherited cut of a v2+ log: the seq of its last cut marker (the events before it came
    from the fork parent), 0 for an unseeded log.

    Raises :class:`EventDecodeError` for a seeded log without a marker, an unseeded log with one,
    or a marker at seq 0 (a seeded log inherits at least one event).
    """
    cut: int | None = None
    for event in events:
        if event.type == "session/end-seed" and is_generation_cut_marker(event):
            cut = event.seq
    if not seeded:
        if cut is not None:
            raise EventDecodeError(
                f"seq {cut}: an unseeded log holds an inherited-cut marker "
                "(session/end-seed {inherited: true})"
            )
        return 0
    if cut is None:
        raise EventDecodeError(
            "a seeded log (isSeeded: true) has no inherited-cut marker "
            "(session/end-seed {inherited: true})"
        )
    if cut == 0:
        raise EventDecodeError(
            "seq 0: the inherited-cut marker cannot come first (nothing inherited)"
        )
    return cut


def _replace_problem(op: object, version: int) -> str | None:
    if op == "append":
        return None
    if type(op) is not dict:
        return f"surfaceOp must be 'append' or a replacement, not {op!r:.60}"
    if version >= 3:
        if op.keys() != {"op", "startSeq", "endSeq"}:
            return (
                f"a v{version} replacement is spelled {{op:'replace', startSeq, endSeq}}, not "
                f"{sorted(op.keys())}"
            )
    elif op.keys() != {"op", "start", "end"}:
        return (
            f"a v{version} replacement is spelled {{op:'replace', start, end}}, not "
            f"{sorted(op.keys())}"
        )
    return None


def _is_seq(value: object) -> bool:
    return type(value) is int and 0 <= value <= MAX_SAFE_INTEGER


def _message_of(data: object) -> JsonObject | None:
    if type(data) is not dict:
        return None
    message = data.get("message")
    return message if type(message) is dict else None


def _check_tool_result(event: SessionEvent, version: int) -> str | None:
    message = _message_of(event.to_wire()["data"])
    if message is None:
        return f"a v{version} tool/result carries its result as data.message"
    if version >= 4:
        if message.get("role") != "tool":
            return f"a v4 tool result has role 'tool', not {message.get('role')!r:.40}"
        source = message.get("source")
        call = message.get("toolCallId")
        if type(call) is not str or not call:
            return "a v4 tool result needs a non-empty toolCallId"
        if type(source) is not dict or source.get("kind") != "tool" or source.get("callId") != call:
            return "a v4 tool result's source must be {kind: 'tool', callId} naming its toolCallId"
        content = message.get("content")
        if type(content) is not list or any(
            type(block) is dict and block.get("type") == "tool-result" for block in content
        ):
            return "a v4 tool result's content is a list of blocks without a tool-result wrapper"
    elif message.get("role", "user") != "user":
        return f"a v{version} tool result has role 'user', not {message.get('role')!r:.40}"
    return None


def _check_data(
    event: SessionEvent, version: int, events: Sequence[SessionEvent] | None
) -> str | None:
    kind = event.type
    data = event.to_wire()["data"]
    if kind == "tool/result":
        return _check_tool_result(event, version)
    if kind == "assistant/message" and _message_of(data) is None:
        return f"a v{version} assistant/message carries data.message"
    if kind in ("system/message", "developer/message"):
        message = _message_of(data)
        role = kind.split("/", 1)[0]
        if message is None or message.get("role") != role:
            return f"a {kind} carries a data.message of role {role!r}"
        if kind == "developer/message" and type(data) is dict and "headerSeq" in data:
            header_seq = data["headerSeq"]
            if not _is_seq(header_seq) or header_seq >= event.seq:
                return f"headerSeq must be the seq of an earlier event, not {header_seq!r:.40}"
            if events is not None and events[header_seq].type != "request/header":
                named = events[header_seq].type
                return f"headerSeq {header_seq} names a {named}, not a request/header"
    if kind == "request/header" and version >= 3 and type(data) is dict:
        header = data.get("header")
        if type(header) is dict and "system" in header:
            return f"a v{version} request/header has no system (the prompt is a system/message)"
    return None


def check_generation_event(
    version: int, event: SessionEvent, events: Sequence[SessionEvent] | None = None
) -> None:
    """Check one event of a generation ``version`` (2, 3 or 4) log against that generation's
    rules (see the module); ``events`` is the log before it, when known (to check references).

    Raises :class:`EventDecodeError` naming the problem; a v0 or v1 event is not checked here.
    """
    if version < 2:
        return
    wire = event.to_wire()
    kind = event.type
    inventory = GENERATION_EVENT_TYPES.get(version)
    if inventory is None:
        raise EventDecodeError(f"generation {version} is not one this library reads")
    if kind not in inventory:
        if kind == "assistant/chunk":
            raise EventDecodeError(
                f"assistant/chunk is not a v{version} event (v2 and later embed the stream in "
                "assistant/message; a packed chunk row is not a v2+ row either)"
            )
        if version == 2:
            raise EventDecodeError(
                f"event type {kind!r} is not in the v2 inventory (v2 logs admit no other type, "
                "ignorable or not)"
            )
        if wire.get("ignorable") is not True:
            raise EventDecodeError(
                f"unknown event type {kind!r} is not marked ignorable (a v{version} log admits "
                "unknown types only as ignorable records)"
            )
        return
    surface = generation_surface_types(version)
    if kind in surface:
        op = wire.get("surfaceOp")
        if op is None:
            raise EventDecodeError(f"a v{version} {kind} event must carry surfaceOp")
        problem = _replace_problem(op, version)
        if problem is not None:
            raise EventDecodeError(f"{kind}: {problem}")
        if kind == "assistant/message" and "sourceEventSeqs" in wire:
            raise EventDecodeError(
                f"a v{version} assistant/message carries no sourceEventSeqs (its stream is "
                "embedded)"
            )
    elif "surfaceOp" in wire or "sourceEventSeqs" in wire:
        raise EventDecodeError(
            f"a {kind} event is not a v{version} surface event and cannot carry surfaceOp or "
            "sourceEventSeqs"
        )
    problem = _check_data(event, version, events)
    if problem is not None:
        raise EventDecodeError(f"{kind}: {problem}")
