"""What ``McpServers.status()`` reports for each server."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["McpServerStatus", "ServerState"]

ServerState = Literal["starting", "running", "failed", "closed"]
"""``starting``: connecting; ``running``: connected, tools listed; ``failed``: the start failed
or the connection was lost (``error`` says why; the next call restarts it); ``closed``: not
started yet, or closed by ``McpServers.aclose()``."""


class McpServerStatus(BaseModel):
    """One server's state: ``{name, state, error?, tools}``.

    ``tools`` are the server's own tool names from its latest successful listing (kept while
    it is failed, so an operator sees what is missing). ``error`` is ``None`` unless the state
    is ``failed``; it never contains a resolved secret.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    state: ServerState
    error: str | None = None
    tools: list[str]
