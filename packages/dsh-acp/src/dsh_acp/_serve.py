"""`serve_stdio`: ``dsh acp``'s body, the agent on standard input and output."""

from __future__ import annotations

import logging
from typing import cast

import acp

from dsh_acp._agent import DshAcpAgent
from dsh_agent_core import Config, compose, shutdown_on_signals

__all__ = ["serve_stdio"]

_log = logging.getLogger("dsh_acp")


async def serve_stdio(config: Config, *, model: str | None = None) -> None:
    """Serve one editor on standard input and output until it closes the connection (or
    SIGTERM/SIGHUP): the harness ``config`` composes, sessions of ``model`` (default: the
    config's). When the editor goes away mid-turn, the turn is cancelled and every log is
    closed balanced, as on any other cancel. Standard output carries the protocol only; warnings
    go to standard error. The editor shows the model's task list as the ACP plan, so its
    sessions are offered ``todo_write`` unless the config's ``[todo] enabled = false``."""
    async with shutdown_on_signals(compose(config, shows_plans=True)) as harness:
        agent = DshAcpAgent(harness, model=model)
        try:
            # the SDK's Agent protocol lists every method ACP has; its router answers "method
            # not found" for those an agent does not define
            await acp.run_agent(cast(acp.Agent, agent))
        finally:
            await agent.aclose()
