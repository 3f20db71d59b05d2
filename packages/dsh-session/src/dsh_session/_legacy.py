"""Logs from before two TypeScript harness record changes, projected at load.

The harness changed four durable records without a format version bump (its bug-fix note of
2026-08-04, "load sessions from the pre-react-loop format"), and still loads logs that hold the
old ones by projecting each into its current equivalent when it reads them. It later renamed
its compaction events (2026-08-13, commit ``aacab0cafd``: ``compact/*`` became
``compaction/*``) with no read alias; logs written before hold the old names, and are read here
as the harness would read them had it kept an alias. A :class:`Session` restored from stored
events projects both, so such a log derives and resumes; the stored artifact is never rewritten
(a backend's read returns the events as stored, and a resume only appends current-shape events
after them).

- ``steering/message`` ``{turn, content, source}`` becomes the identified ``user/message``
  ``{content, source, id, role: "user"}`` (``id`` is ``legacy-message:<session id>:<seq>``);
  ``{turn, message}`` becomes the ``user/message`` whose data is ``message``.
- ``turn/start`` ``{turn, trigger}`` loses ``trigger``.
- ``turn/end`` reasons: coarse ``{kind: "aborted"}`` becomes ``aborted`` with the cause
  ``{kind: "legacy"}`` (the record does not say who stopped the turn), ``{kind: "disposed"}``
  becomes ``aborted`` with the cause ``{kind: "disposed"}``, and the two old failure payloads
  ``{kind: "error", step, failure: {message, code, ...}}`` and
  ``{kind: "error", step, message, code?}`` become ``{kind: "error", error: {message, code}}``
  (``code`` ``UNKNOWN`` when absent).
- ``compact/start``, ``compact/summary``, ``compact/end`` and ``compact/prune`` become
  ``compaction/start``, ``compaction/summary``, ``compaction/end`` and ``compaction/prune``:
  only the type changes (seq, time, data and every other envelope key are kept); the data must
  be a JSON object, as every record of these types the harness wrote has.

Recognition is by exact shape, as the harness does it: a record that has the old shape but not
exactly (an extra key, a turn that is not a positive safe integer, a trigger without a kind)
is refused with :class:`SessionValidationError` code ``LEGACY`` naming the seq, never guessed
into validity, and a current-looking record is left to the usual checks.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dsh_session._codec import wrap_wire
from dsh_session._errors import EventDecodeError, SessionValidationError
from dsh_session._events import OpaqueEvent, SessionEvent, TurnEndEvent, TurnStartEvent
from dsh_session._json import MAX_SAFE_INTEGER, JsonObject
from dsh_session._vocabulary import LEGACY_EVENT_TYPES

PROJECTED_EVENT_TYPES: frozenset[str] = LEGACY_EVENT_TYPES | {"turn/start", "turn/end"}
"""The types whose stored records :func:`project_stored_event` may change."""

_RENAMED: dict[str, str] = {
    f"compact/{name}": f"compaction/{name}" for name in ("start", "summary", "end", "prune")
}
"""The compaction types renamed on 2026-08-13, old name to current name."""

_FAILURE_OPTIONAL: dict[str, type | tuple[type, ...]] = {
    "status": (int, float),
    "providerRetryAfterMs": (int, float),
    "requestId": str,
}


_PLAIN_ENDS = frozenset({"completed", "blocked", "max-tokens", "interrupted"})


def may_need_projection(event: object) -> bool:
    """A cheap test a restore runs on every event: ``False`` means :func:`project_stored_event`
    would return the event itself (a current ``turn/start``, a plain current ``turn/end``, any
    other type); ``True`` means it must be asked."""
    kind = type(event)
    if kind is TurnStartEvent:
        return "trigger" in event.to_wire()["data"]  # type: ignore[attr-defined]
    if kind is TurnEndEvent:
        data = event.to_wire()["data"]  # type: ignore[attr-defined]
        reason = data.get("reason")
        return not (
            len(data) == 2
            and type(reason) is dict
            and len(reason) == 1
            and reason.get("kind") in _PLAIN_ENDS
        )
    if kind is OpaqueEvent:
        return event.type in LEGACY_EVENT_TYPES  # type: ignore[attr-defined]
    return False


def legacy_message_id(session_id: str, seq: int) -> str:
    """The id the harness gives a message stored before messages had ids:
    ``legacy-message:<session id>:<seq>``."""
    return f"legacy-message:{session_id}:{seq}"


def _safe_int(value: object, minimum: int = -MAX_SAFE_INTEGER) -> bool:
    return type(value) is int and minimum <= value <= MAX_SAFE_INTEGER


def _era(event_type: str) -> str:
    return "pre-rename" if event_type in _RENAMED else "pre-react-loop"


def _malformed(event: SessionEvent, what: str, problem: str) -> SessionValidationError:
    return SessionValidationError(
        f"malformed {_era(event.type)} {what}: {problem}", code="LEGACY", seq=event.seq
    )


def legacy_append_refusal(event_type: str) -> str:
    """Why a legacy type (one of ``LEGACY_EVENT_TYPES``) cannot be appended, naming the form to
    append instead."""
    current = _RENAMED.get(event_type)
    if current is not None:
        return (
            f"event type {event_type!r} is only read from logs written before the harness "
            f"renamed its compaction events (a restore projects it); append {current!r} instead"
        )
    return (
        f"event type {event_type!r} is only read from pre-react-loop logs (a restore projects "
        "it); append its current form instead"
    )


def _steering(event: SessionEvent, session_id: str) -> JsonObject:
    data = event.to_wire()["data"]
    if type(data) is not dict:
        raise _malformed(event, "steering/message", "data must be an object")
    keys = data.keys()
    if not _safe_int(data.get("turn")):
        raise _malformed(event, "steering/message", "data.turn must be a safe integer")
    if keys == {"turn", "message"} and type(data["message"]) is dict:
        message: JsonObject = data["message"]
        return message
    if keys != {"turn", "content", "source"}:
        raise _malformed(
            event,
            "steering/message",
            f"data must be {{turn, content, source}} or {{turn, message}}, not {sorted(keys)}",
        )
    projected = {key: value for key, value in data.items() if key != "turn"}
    projected["id"] = legacy_message_id(session_id, event.seq)
    projected["role"] = "user"
    return projected


def _turn_start(event: SessionEvent) -> JsonObject | None:
    data = event.to_wire()["data"]
    if "trigger" not in data:
        return None
    trigger = data["trigger"]
    if not _safe_int(data.get("turn"), 1) or data.keys() != {"turn", "trigger"}:
        raise _malformed(
            event, "turn/start", "data must be exactly {turn, trigger} with a positive turn"
        )
    if type(trigger) is not dict or type(trigger.get("kind")) is not str or not trigger["kind"]:
        raise _malformed(event, "turn/start", "trigger must be an object with a non-empty kind")
    return {"turn": data["turn"]}


def _failure(reason: JsonObject) -> JsonObject | None:
    """The ``failure`` of ``{kind: 'error', step, failure}`` when it has exactly its shape."""
    failure = reason.get("failure")
    if reason.keys() != {"kind", "step", "failure"} or type(failure) is not dict:
        return None
    if type(failure.get("message")) is not str or type(failure.get("code")) is not str:
        return None
    for key in failure.keys() - {"message", "code"}:
        kind = _FAILURE_OPTIONAL.get(key)
        value = failure[key]
        if kind is None or type(value) is bool or not isinstance(value, kind):
            return None
    return failure


def _error_reason(event: SessionEvent, reason: JsonObject) -> JsonObject | None:
    if "error" in reason:
        return None  # the current shape
    if not _safe_int(reason.get("step"), 0):
        raise _malformed(event, "turn/end", "an old error reason needs a non-negative step")
    failure = _failure(reason)
    if failure is not None:
        return {"kind": "error", "error": failure}
    code = reason.get("code")
    expected = {"kind", "step", "message"} if code is None else {"kind", "step", "message", "code"}
    if (
        reason.keys() != expected
        or type(reason.get("message")) is not str
        or (code is not None and type(code) is not str)
    ):
        raise _malformed(
            event,
            "turn/end",
            "an old error reason is {kind, step, failure{message, code, status?, "
            "providerRetryAfterMs?, requestId?}} or {kind, step, message, code?}",
        )
    return {
        "kind": "error",
        "error": {"message": reason["message"], "code": "UNKNOWN" if code is None else code},
    }


def _turn_end(event: SessionEvent) -> JsonObject | None:
    data = event.to_wire()["data"]
    reason = data.get("reason")
    if not _safe_int(data.get("turn"), 1) or data.keys() != {"turn", "reason"}:
        raise _malformed(
            event, "turn/end", "data must be exactly {turn, reason} with a positive turn"
        )
    if type(reason) is not dict or type(reason.get("kind")) is not str:
        raise _malformed(event, "turn/end", "reason must be an object with a string kind")
    kind = reason["kind"]
    current: JsonObject
    if kind in ("completed", "blocked", "max-tokens", "interrupted"):
        if reason.keys() != {"kind"}:
            raise _malformed(event, "turn/end", f"a {kind!r} reason has no other key")
        return None
    if kind == "aborted":
        if "reason" in reason:
            return None  # the current shape: the cause is named
        if reason.keys() != {"kind"}:
            raise _malformed(event, "turn/end", "a coarse 'aborted' reason has no other key")
        current = {"kind": "aborted", "reason": {"kind": "legacy"}}
    elif kind == "disposed":
        if reason.keys() != {"kind"}:
            raise _malformed(event, "turn/end", "a 'disposed' reason has no other key")
        current = {"kind": "aborted", "reason": {"kind": "disposed"}}
    elif kind == "error":
        projected = _error_reason(event, reason)
        if projected is None:
            return None
        current = projected
    else:
        return None
    return {**data, "reason": current}


def _renamed(event: SessionEvent, current: str) -> SessionEvent:
    wire = dict(event.to_wire())
    if type(wire.get("data")) is not dict:
        raise _malformed(event, event.type, "data must be an object")
    wire["type"] = current
    return _wrap(event, wire)


def project_stored_event(event: SessionEvent, session_id: str) -> SessionEvent:
    """The event a stored old record (pre-react-loop, or a ``compact/*`` one from before the
    rename) stands for in the current format, or ``event`` itself when it needs no projection
    (see the module docs for the mapping).

    ``session_id`` names the session (the imported message id contains it). Raises
    :class:`SessionValidationError` (code ``LEGACY``, naming the seq) for a record with an old
    shape that does not match it exactly.
    """
    kind = event.type
    data: Any
    wire: JsonObject
    if kind == "turn/start":
        data = _turn_start(event)
    elif kind == "turn/end":
        data = _turn_end(event)
    elif kind in _RENAMED:
        return _renamed(event, _RENAMED[kind])
    elif kind == "steering/message":
        wire = dict(event.to_wire())
        wire["type"] = "user/message"
        wire["data"] = _steering(event, session_id)
        return _wrap(event, wire)
    else:
        return event
    if data is None:
        return event
    wire = dict(event.to_wire())
    wire["data"] = data
    return _wrap(event, wire)


def _wrap(event: SessionEvent, wire: JsonObject) -> SessionEvent:
    try:
        return wrap_wire(wire)
    except EventDecodeError as exc:
        raise SessionValidationError(
            f"{_era(event.type)} {event.type} projects to a malformed event: {exc.reason}",
            code="LEGACY",
            seq=event.seq,
        ) from exc


def project_stored_events(events: Iterable[SessionEvent], session_id: str) -> list[SessionEvent]:
    """:func:`project_stored_event` over a stored log, in order (a new list)."""
    return [
        project_stored_event(event, session_id) if may_need_projection(event) else event
        for event in events
    ]
