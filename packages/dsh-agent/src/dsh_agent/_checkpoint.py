"""When the session log must be durable: the ``CheckpointPolicy`` protocol."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from dsh_agent._agent import Agent

__all__ = ["CheckpointPoint", "CheckpointPolicy", "Flush"]

CheckpointPoint = Literal["before-request", "before-tool", "turn-end"]
"""The loop's checkpoints: before every model request, before every tool body (after its
``tool/call`` is logged), and after ``turn/end``."""

Flush = Callable[[], Awaitable[None]]
"""Makes every event logged so far durable (raises when it cannot)."""


@runtime_checkable
class CheckpointPolicy(Protocol):
    """Decides, at each checkpoint, whether to ``await flush()``.

    A policy that raises (or whose flush raises) fails closed: before a request the model is
    not called, before a tool its body does not run, and the turn ends with an error.
    """

    async def checkpoint(self, point: CheckpointPoint, agent: Agent, flush: Flush) -> None:
        """Called at ``point`` of ``agent``'s turn."""
        ...
