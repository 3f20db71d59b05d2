"""Fork seeds: a child log that starts with a balanced prefix of its parent.

The seed is the parent's events ``0..boundary`` followed by a ``session/end-seed
{inherited: true}`` marker (its time copies the boundary event's). ``inherited_event_count`` is
``boundary + 1``: the marker is the child's own. A boundary inside an open turn is refused
(``OPEN_TURN``), as are seqs the log does not hold (``INVALID_BOUNDARY``).
"""

from __future__ import annotations

from collections.abc import Sequence

from dsh_session._codec import make_event
from dsh_session._errors import SessionForkError
from dsh_session._events import (
    SessionEvent,
)
from dsh_session._json import MAX_SAFE_INTEGER


def open_turn_at(events: Sequence[SessionEvent], boundary: int) -> int | None:
    """The turn open right after event ``boundary`` (``None``: the prefix is balanced); the
    scan stops at the nearest ``turn/start`` or ``turn/end``, so it reads one turn at most."""
    for index in range(boundary, -1, -1):
        kind = events[index].type
        if kind == "turn/end":
            return None
        if kind == "turn/start":
            return events[index].to_wire()["data"]["turn"]  # type: ignore[no-any-return]
    return None


def fork_seed(
    events: Sequence[SessionEvent], boundary: int | None = None
) -> tuple[list[SessionEvent], int]:
    """``(seed events, inherited_event_count)`` for a child forked at ``boundary`` (inclusive;
    default: the last event). An empty parent gives an empty, unseeded child: ``([], 0)``.

    Raises :class:`SessionForkError` with code ``INVALID_BOUNDARY`` or ``OPEN_TURN``.
    """
    if boundary is None:
        if not events:
            return [], 0
        boundary = len(events) - 1
    if (
        type(boundary) is not int
        or not 0 <= boundary < min(len(events), MAX_SAFE_INTEGER)
        or events[boundary].seq != boundary
    ):
        raise SessionForkError(
            f"fork boundary {boundary!r} is not a seq of the parent log ({len(events)} events)",
            code="INVALID_BOUNDARY",
            boundary=boundary,
        )
    turn = open_turn_at(events, boundary)
    if turn is not None:
        raise SessionForkError(
            f"fork boundary {boundary} is inside open turn {turn}; fork at a balanced point "
            "(at or after the turn's turn/end, or before its turn/start)",
            code="OPEN_TURN",
            boundary=boundary,
        )
    marker = make_event(
        "session/end-seed", boundary + 1, events[boundary].time, {"inherited": True}
    )
    return [*events[: boundary + 1], marker], boundary + 1
