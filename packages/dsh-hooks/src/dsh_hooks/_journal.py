"""What the hooks read from a live session and what they write to it.

Reading: the open turn (folded once per event, so a tool hook costs the same at any history
length) and the last assistant text of a turn. Writing: the log-only pair
``hook/invoked {turn, point, dialect, handlerId, matcher?}`` →
``hook/result {turn, point, handlerId, decision, exitCode?, stderrSummary?, durationMs}``,
appended only inside an open turn (``session.append``, as every plugin writes its events).
Nothing here touches persistence: the loop's subscription carries the events to the log.
"""

from __future__ import annotations

import weakref
from typing import Any

from dsh_hooks._output import HookOutput
from dsh_session import Session, message_parts

__all__ = ["TurnTracker", "append_hook_pair", "last_assistant_text"]


class _Fold:
    __slots__ = ("consumed", "open_turn")

    def __init__(self) -> None:
        self.consumed = 0
        self.open_turn: int | None = None


class TurnTracker:
    """The open turn of each session it is asked about, folded incrementally."""

    def __init__(self) -> None:
        self._folds: weakref.WeakKeyDictionary[Session, _Fold] = weakref.WeakKeyDictionary()

    def open_turn(self, session: Session) -> int | None:
        """The number of the turn ``session`` has open, ``None`` between turns."""
        fold = self._folds.get(session)
        if fold is None:
            fold = self._folds[session] = _Fold()
        events = session.events
        while fold.consumed < len(events):
            event = events[fold.consumed]
            fold.consumed += 1
            if event.type == "turn/start":
                data: Any = event.data
                turn = data.get("turn") if isinstance(data, dict) else None
                fold.open_turn = turn if type(turn) is int else None
            elif event.type == "turn/end":
                fold.open_turn = None
        return fold.open_turn


def last_assistant_text(session: Session) -> str | None:
    """The text of the newest ``assistant/message`` of the open turn, if it has one."""
    events = session.events
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if event.type == "turn/start":
            return None
        if event.type == "assistant/message":
            parts = message_parts(event.type, event.data)  # either message shape
            if parts is None:
                return None
            content = parts.content
            return "".join(
                block.get("text", "")
                for block in content
                if isinstance(block, dict) and block.get("type") == "text"
            )
    return None


def _summary(text: str, limit: int) -> str | None:
    text = text.strip()
    if not text:
        return None
    return text if len(text) <= limit else text[:limit] + "…"


def append_hook_pair(
    session: Session,
    *,
    turn: int,
    point: str,
    dialect: str,
    handler_id: str,
    matcher: str | None,
    output: HookOutput,
    duration_ms: int,
    stderr_limit: int,
) -> None:
    """Append ``hook/invoked`` and ``hook/result`` for one finished hook run.

    Both go in after the run, together: a hook runs while the loop may be logging (a tool's
    chunks), and a lone ``hook/invoked`` must never be left behind by a cancelled run.
    ``stderrSummary`` is the stderr (or the error of a hook that failed) trimmed and capped.
    """
    invoked: dict[str, Any] = {
        "turn": turn,
        "point": point,
        "dialect": dialect,
        "handlerId": handler_id,
    }
    if matcher is not None:
        invoked["matcher"] = matcher
    session.append("hook/invoked", invoked)
    result: dict[str, Any] = {
        "turn": turn,
        "point": point,
        "handlerId": handler_id,
        "decision": output.logged_decision,
    }
    if output.exit_code is not None:
        result["exitCode"] = output.exit_code
    summary = _summary(output.stderr or output.error or "", stderr_limit)
    if summary is not None:
        result["stderrSummary"] = summary
    result["durationMs"] = duration_ms
    session.append("hook/result", result)
