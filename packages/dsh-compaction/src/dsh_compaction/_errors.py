"""The errors of compaction: one class, ``CompactionError``, with a code that says what failed."""

from __future__ import annotations

from typing import Literal

__all__ = ["COMPACTION_ERROR_CODES", "CompactionError", "CompactionErrorCode", "MeterError"]

CompactionErrorCode = Literal[
    "busy",
    "no-open-turn",
    "range",
    "config",
    "summary",
    "changed",
    "commit",
    "persistence",
    "still-above",
]
"""What went wrong:

- ``busy``: another compaction of the session is in progress (a live ``compaction/start``), or a
  manual compaction found the agent running or a turn open;
- ``no-open-turn``: an automatic compaction (or a prune) outside a turn;
- ``range``: the range to compact is not on the surface, reversed, or cuts a tool call from its
  result;
- ``config``: the policy cannot be applied to the routed model (no context window, a retained
  tail not below the threshold);
- ``summary``: the summary call failed, or gave nothing usable, or nothing smaller;
- ``changed``: the surface moved while the summary was written;
- ``commit``: the checkpoint could not be logged whole (the bracket may be left open);
- ``persistence``: compaction finished but the log could not be made durable;
- ``still-above``: every allowed attempt ran and the context is still above the threshold.
"""

COMPACTION_ERROR_CODES: frozenset[str] = frozenset(CompactionErrorCode.__args__)  # type: ignore[attr-defined]
"""Every :data:`CompactionErrorCode`."""


class CompactionError(Exception):
    """A compaction that did not happen (or not wholly); ``code`` says why, ``session_id`` names
    the session, ``failure_code`` carries the model's failure code for a ``summary`` error."""

    def __init__(
        self,
        session_id: str,
        code: CompactionErrorCode,
        message: str,
        *,
        failure_code: str | None = None,
    ) -> None:
        super().__init__(f"session {session_id!r}: compaction {code}: {message}")
        self.session_id = session_id
        self.code: CompactionErrorCode = code
        self.message = message
        self.failure_code = failure_code


class MeterError(Exception):
    """The meter cannot fold an event (a step opened twice, a replace naming no priced node, an
    answer citing foreign chunks). Nothing of that event is counted, so every later measurement
    of the session raises the same error, naming the same ``seq``."""

    def __init__(self, session_id: str, seq: int, message: str) -> None:
        super().__init__(f"session {session_id!r}: token meter cannot fold seq {seq}: {message}")
        self.session_id = session_id
        self.seq = seq
        self.message = message
