"""The errors of dsh-tool-mcp: bad configuration, unusable tool names, and failed calls."""

from __future__ import annotations

from dsh_tools import ToolError

__all__ = ["McpCallError", "McpConfigError", "McpToolNameError"]


class McpConfigError(Exception):
    """A server's configuration is unusable; ``server`` and ``key`` say where.

    ``server`` is the configured server name (``None`` when the configuration as a whole is
    wrong), ``key`` the offending key (``"headers.Authorization"``, ``"args"``; ``None`` when
    the server's table as a whole is wrong) and ``problem`` what is wrong. Raised by
    ``McpConfig`` validation, and recorded as a server's status error when an environment
    variable named by ``{env = "NAME"}`` is missing at start. Never carries a secret value.
    """

    def __init__(self, server: str | None, key: str | None, problem: str) -> None:
        self.server = server
        self.key = key
        self.problem = problem
        where = "MCP configuration" if server is None else f"MCP server {server!r}"
        if key is not None:
            where += f", key {key!r}"
        super().__init__(f"{where}: {problem}")


class McpToolNameError(Exception):
    """A server tool cannot be offered under a valid, unique ``mcp__<server>__<tool>`` name.

    Raised by ``McpServers.tools()`` / ``register()`` when the name would be longer than 64
    characters or when two server tools map to the same name (``other`` names the second
    ``(server, tool)`` pair).
    """

    def __init__(
        self,
        server: str,
        tool: str,
        name: str,
        problem: str,
        *,
        other: tuple[str, str] | None = None,
    ) -> None:
        self.server = server
        self.tool = tool
        self.name = name
        self.other = other
        self.problem = problem
        super().__init__(f"tool {tool!r} of MCP server {server!r} (as {name!r}): {problem}")


class McpCallError(ToolError):
    """A call to an MCP tool failed outside the tool itself; the model reads it as an error.

    ``code`` is one of ``MCP_SERVER_UNAVAILABLE`` (the server is not running and could not be
    restarted), ``MCP_SERVER_CLOSED`` (the servers were closed), ``MCP_CONNECTION_LOST`` (the
    server died or hung up during the call), ``MCP_TIMEOUT`` (no answer within the server's
    ``timeout``) and ``MCP_PROTOCOL_ERROR`` (the server answered with a protocol error or a
    malformed result). The message names the server and the tool.
    """

    def __init__(self, server: str, tool: str, problem: str, *, code: str) -> None:
        self.server = server
        self.tool = tool
        self.problem = problem
        super().__init__(f"MCP server {server!r}, tool {tool!r}: {problem}", code=code)
