"""Crash-repair closers: the events that balance an open tail turn left by a crash (a synthetic
``tool/result`` for each call without one, then ``step/end`` and ``turn/end{interrupted}``).

Pure and deterministic: the same log gives the same closers (seqs continue the log, times repeat
the last event's time), and a balanced log gives none, so closers are idempotent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from dsh_session._codec import make_event
from dsh_session._events import (
    SessionEvent,
)
from dsh_session._json import (
    JsonObject,
)

TOOL_OUTCOME_UNKNOWN = "TOOL_OUTCOME_UNKNOWN"
"""Closer code: the call was recorded as started (``tool/call``) but has no durable result."""
TOOL_NOT_STARTED = "TOOL_NOT_STARTED"
"""Closer code: the model asked for the call but it was never recorded as started."""

OUTCOME_UNKNOWN_TEXT = (
    "The tool call was interrupted after it was recorded, but no result was durably recorded. "
    "Its outcome is unknown. Decide whether to retry from the tool semantics: retry only if the "
    "operation is read-only or idempotent; if it may have side effects, first verify external "
    "state or ask the user. Do not retry blindly."
)
"""The text of a ``TOOL_OUTCOME_UNKNOWN`` closer result (the TypeScript harness's wording)."""
NOT_STARTED_TEXT = (
    "The tool call was interrupted before the Harness recorded it as started. "
    "Retry it if it is still needed."
)
"""The text of a ``TOOL_NOT_STARTED`` closer result (the TypeScript harness's wording)."""

ResultShape = Literal["message", "flat"]


def _tool_calls(data: JsonObject) -> list[Any]:
    message = data.get("message")
    content = message.get("content") if isinstance(message, dict) else data.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool-call"]


def _result_call_id(data: JsonObject) -> object:
    message = data.get("message")
    if isinstance(message, dict):
        source = message.get("source")
        return source.get("callId") if isinstance(source, dict) else None
    return data.get("callId")


def _result_data(
    shape: ResultShape, turn: object, step: object, call_id: str, seq: int, started: bool
) -> JsonObject:
    text = OUTCOME_UNKNOWN_TEXT if started else NOT_STARTED_TEXT
    error = (
        {"name": "ToolOutcomeUnknownError", "code": TOOL_OUTCOME_UNKNOWN}
        if started
        else {"name": "ToolNotStartedError", "code": TOOL_NOT_STARTED}
    )
    blocks = [{"type": "text", "text": text}]
    if shape == "flat":
        return {
            "turn": turn,
            "step": step,
            "callId": call_id,
            "content": blocks,
            "isError": True,
            "error": error,
        }
    message = {
        "id": f"interrupted-tool-result-{call_id}-{seq}",
        "role": "user",
        "source": {"kind": "tool", "callId": call_id},
        "content": [
            {"type": "tool-result", "toolCallId": call_id, "isError": True, "content": blocks}
        ],
    }
    return {"turn": turn, "step": step, "message": message, "error": error}


def interrupted_turn_closers(
    events: Sequence[SessionEvent], *, shape: ResultShape = "message"
) -> list[SessionEvent]:
    """The synthetic events that balance an open tail turn, or ``[]`` if no turn is open.

    In order: one ``tool/result`` per pending call (in the order the calls were asked for;
    ``TOOL_OUTCOME_UNKNOWN`` citing the ``tool/call`` seq when the call was recorded as started,
    else ``TOOL_NOT_STARTED``), a ``step/end`` if a step is open, and ``turn/end
    {reason:{kind:'interrupted'}}``. Seqs continue the log; every time is the last event's time.
    ``shape`` picks the tool/result data shape: ``"message"`` (``{turn, step, message, error}``,
    what the TypeScript harness writes, with message id ``interrupted-tool-result-<callId>-<seq>``)
    or ``"flat"`` (``{turn, step, callId, content, isError, error}``).
    """
    open_turn: Any = None
    open_step: Any = None
    pending: dict[str, list[Any]] = {}  # callId -> [step, tool/call seq or None], asked order
    for event in events:
        kind = event.type
        if kind not in (
            "turn/start",
            "turn/end",
            "step/start",
            "step/end",
            "assistant/message",
            "tool/call",
            "tool/result",
        ):
            continue
        data = event.to_wire()["data"]
        if kind == "turn/start":
            open_turn, open_step = data["turn"], None
            pending.clear()
        elif kind == "turn/end":
            open_turn = open_step = None
            pending.clear()
        elif kind == "step/start":
            open_step = data["step"]
        elif kind == "step/end":
            open_step = None
            pending.clear()
        elif kind == "assistant/message":
            for block in _tool_calls(data):
                if isinstance(block.get("id"), str):
                    pending[block["id"]] = [data["step"], None]
        elif kind == "tool/call":
            entry = pending.get(data["callId"])
            if entry is not None:
                entry[1] = event.seq
        else:
            pending.pop(str(_result_call_id(data)), None)
    if open_turn is None or not events:
        return []
    seq = events[-1].seq + 1
    time = events[-1].time
    closers: list[SessionEvent] = []
    for call_id, (step, call_seq) in pending.items():
        closers.append(
            make_event(
                "tool/result",
                seq,
                time,
                _result_data(shape, open_turn, step, call_id, seq, call_seq is not None),
                source_event_seqs=None if call_seq is None else [call_seq],
                surface_op="append",
            )
        )
        seq += 1
    if open_step is not None:
        closers.append(make_event("step/end", seq, time, {"turn": open_turn, "step": open_step}))
        seq += 1
    closers.append(
        make_event("turn/end", seq, time, {"turn": open_turn, "reason": {"kind": "interrupted"}})
    )
    return closers
