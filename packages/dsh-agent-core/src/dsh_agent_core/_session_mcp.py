"""MCP servers one session brings: an editor passes them to ``dsh acp`` with ``session/new`` or
``session/load``. They are started through dsh-tool-mcp beside the configured ones, their tools
(``mcp__<server>__<tool>``) are offered to that session only (``Harness.create(tools=...)``),
and they are stopped when the session ends. A server that fails to start is treated as a
configured one is: reported, never raised, the session runs without its tools."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dsh_agent_core._errors import DshError
from dsh_agent_core._extras import McpSection, require_extra

if TYPE_CHECKING:
    from dsh_tool_mcp import McpServers, McpServerStatus
    from dsh_tools import ToolDefinition

__all__ = ["McpServerNameError", "McpServerTableError", "SessionMcpServers", "session_mcp_servers"]


class McpServerNameError(DshError):
    """An MCP server a session brings is named like a configured one (``[mcp.servers]``), or
    so that its tools would share a configured server's ``mcp__<server>__`` prefix: ``server``
    names it. Nothing is started; rename the session's server (or the configured one)."""

    def __init__(self, server: str, configured: str) -> None:
        same = server == configured
        clash = (
            "is the name of a configured MCP server"
            if same
            else f"gives its tools the prefix of the configured MCP server {configured!r}"
        )
        super().__init__(
            f"MCP server {server!r} {clash} ([mcp.servers] in the dsh config); "
            "give the session's server another name"
        )
        self.server = server
        self.configured = configured


class McpServerTableError(DshError):
    """dsh-tool-mcp refuses the table of an MCP server a session brings: ``server`` names it
    (``None``: the servers as a whole), the message says which key and why."""

    def __init__(self, server: str | None, message: str) -> None:
        super().__init__(message)
        self.server = server


class SessionMcpServers:
    """The MCP servers of one session (`session_mcp_servers`): ``start()`` starts them all
    (concurrently; a failure goes to ``failures()``), ``tools()`` are their tools for
    ``Harness.create(tools=...)``, ``aclose()`` stops them (each stdio server's process group
    killed). What stdio servers write on stderr goes to the process's standard error (for
    ``dsh acp``: the editor's log of the agent)."""

    def __init__(self, servers: McpServers, names: Sequence[str]) -> None:
        self._servers = servers
        self.names: tuple[str, ...] = tuple(names)
        """The servers' names, in the order given."""

    async def start(self) -> None:
        """Start every server and list its tools; a server that fails is reported by
        `failures`, never raised."""
        await self._servers.start()

    def status(self) -> list[McpServerStatus]:
        """Each server's ``{name, state, error?, tools}``."""
        return self._servers.status()

    def failures(self) -> list[tuple[str, str]]:
        """``(server, why)`` for each server that is not running."""
        return [
            (status.name, status.error or status.state)
            for status in self._servers.status()
            if status.state != "running"
        ]

    def tools(self) -> list[ToolDefinition[Any]]:
        """The running servers' tools as ``mcp__<server>__<tool>``. Raises `DshError` for a
        tool name over the limit or offered twice, naming the server and the tool."""
        from dsh_tool_mcp import McpToolNameError

        try:
            return list(self._servers.tools())
        except McpToolNameError as error:
            raise DshError(str(error)) from None

    async def aclose(self) -> None:
        """Stop every server; calls made afterwards are error results."""
        await self._servers.aclose()


def session_mcp_servers(
    configured: McpSection, servers: Mapping[str, Mapping[str, Any]]
) -> SessionMcpServers:
    """``servers`` (name → dsh-tool-mcp table) as one session's MCP servers, not started.
    Refused before anything starts: a name of ``configured`` or one sharing its tool prefix
    (`McpServerNameError`), a table dsh-tool-mcp refuses (`McpServerTableError` naming the
    server and the key), no ``[mcp]`` extra (`MissingExtraError`)."""
    if not servers:
        raise ValueError("no servers given")
    require_extra("mcp", f'MCP server "{next(iter(servers))}"')
    from dsh_tool_mcp import McpConfig, McpConfigError, McpServers, mcp_tool_name

    prefixes = {mcp_tool_name(name, ""): name for name in configured.servers}
    for name in servers:
        clash = prefixes.get(mcp_tool_name(name, "")) if isinstance(name, str) else None
        if clash is not None:
            raise McpServerNameError(name, clash)
    try:
        config = McpConfig.model_validate({"servers": {k: dict(v) for k, v in servers.items()}})
    except McpConfigError as error:  # names the server and the key
        raise McpServerTableError(error.server, str(error)) from None
    return SessionMcpServers(McpServers(config), list(config.servers))
