"""The MCP servers an editor passes with ``session/new`` and ``session/load``.

They are started through dsh-tool-mcp (the agent core's ``Harness.session_mcp_servers``)
beside the configured ones, for that session only: their tools, ``mcp__<server>__<tool>``,
are offered to it alone, and they are stopped when the session ends (the agent closes).
Stdio servers run in the session's folder with the editor's ``env`` added as given; streamable
HTTP servers get the editor's ``headers`` as given. SSE servers are refused (dsh-tool-mcp does
not speak SSE), and so is a server named like a configured one: the editor's request fails with
an error naming the server, and nothing is started. A server that fails to start is treated as
a configured one is (the session runs without its tools) and the editor is told, naming it.
Without the ``[mcp]`` extra no server is started: the session opens without them and the editor
is told why (editors pass their servers by default; a session must still open)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from acp.schema import HttpMcpServer, McpServerStdio, SseMcpServer

from dsh_acp._errors import ClientMcpServerError
from dsh_agent_core import (
    Harness,
    McpServerNameError,
    McpServerTableError,
    SessionMcpServers,
    extra_installed,
)

__all__ = [
    "MAX_CLIENT_MCP_SERVERS",
    "MAX_CLIENT_MCP_SERVER_NAME",
    "client_mcp_tables",
    "client_mcp_unavailable",
    "failure_notice",
    "start_client_mcp_servers",
]

MAX_CLIENT_MCP_SERVERS = 32
"""The most MCP servers an editor may pass for one session."""

MAX_CLIENT_MCP_SERVER_NAME = 100
"""The longest server name an editor may pass (a longer one is refused, never cut)."""


def _name(server: Any) -> str:
    return str(getattr(server, "name", "?"))


def _shown(name: str) -> str:
    limit = MAX_CLIENT_MCP_SERVER_NAME
    return name if len(name) <= limit else name[:limit] + "…"


def client_mcp_unavailable(servers: Sequence[Any] | None) -> str | None:
    """What the editor is told when it passed ``servers`` and the ``[mcp]`` extra is not
    installed (the session opens without them); ``None`` when there is nothing to say."""
    if not servers or extra_installed("mcp"):
        return None
    names = ", ".join(repr(_shown(_name(server))) for server in servers[:8])
    more = f" and {len(servers) - 8} more" if len(servers) > 8 else ""
    return (
        f"The MCP servers this editor passed ({names}{more}) were not started: they need "
        "dsh-agent-core[mcp] (pip install 'dsh-agent-core[mcp]'). The session runs without them."
    )


def client_mcp_tables(servers: Sequence[Any], cwd: str) -> dict[str, dict[str, Any]]:
    """The editor's ``servers`` as dsh-tool-mcp tables by name: a stdio server's ``command``,
    ``args`` and ``env`` (as given) run in ``cwd``; an HTTP server's ``url`` and ``headers``
    (as given). Raises `ClientMcpServerError` naming a server passed twice, one of a
    transport this agent does not speak, and a list over `MAX_CLIENT_MCP_SERVERS`."""
    if len(servers) > MAX_CLIENT_MCP_SERVERS:
        raise ClientMcpServerError(
            _shown(_name(servers[MAX_CLIENT_MCP_SERVERS])),
            f"{len(servers)} MCP servers were passed; at most {MAX_CLIENT_MCP_SERVERS} are taken",
        )
    tables: dict[str, dict[str, Any]] = {}
    for server in servers:
        name = _name(server)
        if len(name) > MAX_CLIENT_MCP_SERVER_NAME:
            raise ClientMcpServerError(
                _shown(name),
                f"MCP server name {_shown(name)!r} is over {MAX_CLIENT_MCP_SERVER_NAME} characters",
            )
        if name in tables:
            raise ClientMcpServerError(name, f"MCP server {name!r} was passed twice")
        if isinstance(server, McpServerStdio):
            tables[name] = {
                "command": server.command,
                "args": list(server.args),
                "env": {variable.name: variable.value for variable in server.env},
                "cwd": cwd,
            }
        elif isinstance(server, HttpMcpServer):
            tables[name] = {
                "url": server.url,
                "headers": {header.name: header.value for header in server.headers},
            }
        else:
            kind = "SSE" if isinstance(server, SseMcpServer) else "this kind of"
            raise ClientMcpServerError(
                name,
                f"MCP server {name!r}: {kind} transport is not supported (stdio and streamable "
                "HTTP are)",
            )
    return tables


async def start_client_mcp_servers(
    harness: Harness, servers: Sequence[Any] | None, cwd: str
) -> SessionMcpServers | None:
    """The editor's ``servers`` started for one session working in ``cwd`` (``None``: none
    passed). Refused before anything starts, with `ClientMcpServerError` naming the server
    (see `client_mcp_tables`, and a name a configured server has); a server that fails to start
    is left to ``failures()``. Without the ``[mcp]`` extra nothing is started (``None``; see
    `client_mcp_unavailable` for what the editor is told)."""
    if not servers or not extra_installed("mcp"):
        return None
    tables = client_mcp_tables(servers, cwd)
    try:
        started = harness.session_mcp_servers(tables)
    except McpServerNameError as error:
        raise ClientMcpServerError(error.server, str(error)) from None
    except McpServerTableError as error:
        raise ClientMcpServerError(error.server or next(iter(tables)), str(error)) from None
    try:
        await started.start()
    except BaseException:
        await started.aclose()
        raise
    return started


def failure_notice(servers: SessionMcpServers) -> str | None:
    """What the editor is told of the servers that did not start (``None``: all did)."""
    failures = servers.failures()
    if not failures:
        return None
    lines = [
        f"MCP server {name!r} did not start ({why[:500]}); this session runs without its tools."
        for name, why in failures
    ]
    return "\n".join(lines)
