"""The default checkpoint policy: flush at the checkpoints it names (by default all three)."""

from __future__ import annotations

from collections.abc import Iterable

from dsh_agent import Agent, CheckpointPoint, Flush

__all__ = ["ALL_CHECKPOINTS", "FlushPolicy"]

ALL_CHECKPOINTS: frozenset[CheckpointPoint] = frozenset(
    {"before-request", "before-tool", "turn-end"}
)
"""Every checkpoint the loop has."""


class FlushPolicy:
    """Flush at each checkpoint in ``points`` (default: before every model request, before every
    tool body, and at turn end). ``FlushPolicy(points=())`` never flushes: events still reach
    the backend, and become durable when the backend or ``close`` decides."""

    def __init__(self, points: Iterable[CheckpointPoint] = ALL_CHECKPOINTS) -> None:
        chosen = frozenset(points)
        unknown = chosen - ALL_CHECKPOINTS
        if unknown:
            raise ValueError(
                f"unknown checkpoint(s) {sorted(unknown)}; known: {sorted(ALL_CHECKPOINTS)}"
            )
        self.points = chosen

    async def checkpoint(self, point: CheckpointPoint, agent: Agent, flush: Flush) -> None:
        """Flush when ``point`` is one of this policy's points."""
        if point in self.points:
            await flush()

    def __repr__(self) -> str:
        return f"FlushPolicy(points={sorted(self.points)})"
