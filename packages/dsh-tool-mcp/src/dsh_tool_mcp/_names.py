"""How a server tool is named for the model: ``mcp__<server>__<tool>``."""

from __future__ import annotations

import re

__all__ = ["MAX_TOOL_NAME_LENGTH", "mcp_tool_name", "server_prefix"]

MAX_TOOL_NAME_LENGTH = 64
"""The longest tool name the registry (and the providers) accept."""

_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_-]")


def _clean(part: str) -> str:
    return _NOT_ALLOWED.sub("_", part)


def mcp_tool_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>``, each character outside ``[A-Za-z0-9_-]`` replaced by ``_``.

    The result is not checked for length here; ``McpServers`` refuses names over 64
    characters (``McpToolNameError``).
    """
    return f"mcp__{_clean(server)}__{_clean(tool)}"


def server_prefix(server: str) -> str:
    """The prefix every tool of ``server`` shares (``mcp__<server>__``)."""
    return f"mcp__{_clean(server)}__"
