"""The agent seam's own error: what an agent (or whatever starts agents) raises once closed."""

from __future__ import annotations

__all__ = ["AgentClosedError"]


class AgentClosedError(Exception):
    """A call on something closed: an agent that takes no more messages, a loop or a harness
    that starts no more agents. Implementations raise a subclass of it (with their own facts),
    so a caller catches one error whatever closed."""
