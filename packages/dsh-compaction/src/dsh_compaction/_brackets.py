"""What a session's log says about compaction right now, folded once per event: the open turn,
the latest unmatched ``compaction/start``, the newest ``session/end-seed``.

The durable ``compaction/start`` is the only lock. An unmatched start is *stale* (a crash remnant,
ignored) when a ``session/end-seed`` follows it or when it was logged before this process took
the session over (``lifecycle_start``: the log's length when the agent started or resumed);
otherwise it is *live* and another compaction is refused as busy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dsh_session import Session

__all__ = ["BracketState", "OpenBracket"]


_FOLDED = frozenset(
    {
        "turn/start",
        "turn/end",
        "assistant/message",
        "session/end-seed",
        "compaction/start",
        "compaction/end",
    }
)


@dataclass(frozen=True, slots=True)
class OpenBracket:
    """An unmatched ``compaction/start``: its ``seq``, ``compaction_id`` and owner ``turn``."""

    seq: int
    compaction_id: str
    turn: int | None


class BracketState:
    """The fold of one session (see the module docs); :meth:`catch_up` before reading."""

    __slots__ = (
        "consumed",
        "end_seed",
        "lifecycle_start",
        "open_bracket",
        "open_turn",
        "overflow_retries",
    )

    def __init__(self) -> None:
        self.consumed = 0
        self.open_turn: int | None = None
        self.open_bracket: OpenBracket | None = None
        self.end_seed = -1
        self.lifecycle_start = 0
        self.overflow_retries = 0

    def catch_up(self, session: Session) -> BracketState:
        """Fold the events logged since the last call; returns ``self``."""
        events = session.events
        while self.consumed < len(events):
            event = events[self.consumed]
            kind = event.type
            if kind not in _FOLDED:  # most events (chunks above all) say nothing about this
                self.consumed += 1
                continue
            data: Any = event.data
            if kind == "turn/start" and isinstance(data, dict):
                turn = data.get("turn")
                self.open_turn = turn if type(turn) is int else None
                self.overflow_retries = 0
            elif kind == "turn/end":
                self.open_turn = None
                self.overflow_retries = 0
            elif kind == "assistant/message" and isinstance(data, dict):
                if not data.get("interrupted"):
                    self.overflow_retries = 0
            elif kind == "session/end-seed":  # a seed's open bracket ends with the seed
                self.end_seed = event.seq
                self.open_bracket = None
            elif kind == "compaction/start" and isinstance(data, dict):
                turn = data.get("turn")
                self.open_bracket = OpenBracket(
                    event.seq, str(data.get("compactionId")), turn if type(turn) is int else None
                )
            elif kind == "compaction/end" and isinstance(data, dict):
                opened = self.open_bracket
                if opened is not None and data.get("compactionId") == opened.compaction_id:
                    self.open_bracket = None
            self.consumed += 1
        return self

    def live_bracket(self) -> OpenBracket | None:
        """The unmatched start that still holds the lock, if any (stale ones are ignored)."""
        opened = self.open_bracket
        if opened is None or opened.seq < self.lifecycle_start or opened.seq < self.end_seed:
            return None
        return opened
