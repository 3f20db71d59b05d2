"""``McpServers``: every configured MCP server, started together, offered as tools."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TextIO

from dsh_tool_mcp._config import McpConfig
from dsh_tool_mcp._errors import McpToolNameError
from dsh_tool_mcp._log import DEFAULT_LOG_MAX_BYTES, RotatingLogFile, TextSink, TextStreamSink
from dsh_tool_mcp._names import MAX_TOOL_NAME_LENGTH, mcp_tool_name
from dsh_tool_mcp._status import McpServerStatus
from dsh_tool_mcp._tool import McpTool
from dsh_tools import Disposer, ToolRegistry

if TYPE_CHECKING:
    from dsh_tool_mcp._connection import ServerConnection

__all__ = ["McpServers"]


class McpServers:
    """The MCP servers of one configuration.

    ``config`` is an ``McpConfig`` or the mapping it validates (``{"servers": {name: table}}``;
    a bad one raises ``McpConfigError``). ``environ`` is where ``{env = "NAME"}`` values are
    read at each start (default ``os.environ``).

    What stdio servers write on stderr goes, line by line as ``[<server>] <line>``, to
    ``log_file`` when given — a file rotated to ``<log_file>.1`` (replacing an older one)
    before it would grow past ``log_max_bytes`` (default ``DEFAULT_LOG_MAX_BYTES``, 10 MiB;
    at least 64 KiB), so it never holds more than twice that — or else to the text stream
    ``errlog`` (default ``sys.stderr``; never closed here). Giving both, or a cap under
    64 KiB, raises ``ValueError``.

    ``await start()`` (or ``async with``) starts every server concurrently and lists its tools;
    a server that fails is reported by ``status()``, never raised, so the agent keeps running.
    ``register(registry)`` then offers each listed tool as ``mcp__<server>__<tool>``.
    ``await aclose()`` stops them all (each stdio server's process group included).
    """

    def __init__(
        self,
        config: McpConfig | Mapping[str, Any],
        *,
        environ: Mapping[str, str] | None = None,
        errlog: TextIO | None = None,
        log_file: str | os.PathLike[str] | None = None,
        log_max_bytes: int = DEFAULT_LOG_MAX_BYTES,
    ) -> None:
        self.config = config if isinstance(config, McpConfig) else McpConfig.model_validate(config)
        if errlog is not None and log_file is not None:
            raise ValueError("give errlog (a text stream) or log_file (a path), not both")
        self._log: TextSink = (
            TextStreamSink(errlog)
            if log_file is None
            else RotatingLogFile(log_file, max_bytes=log_max_bytes)
        )
        self._connections: dict[str, ServerConnection] = {}
        if not self.config.servers:
            return  # no server: the MCP SDK is never imported (the dsh command starts faster)
        from dsh_tool_mcp._connection import ServerConnection

        self._connections = {
            name: ServerConnection(name, server, environ=environ, log=self._log)
            for name, server in self.config.servers.items()
        }

    async def start(self) -> None:
        """Start every server (concurrently) and list its tools; failures go to ``status()``.

        Calling it again starts the servers that are not running (failed ones) and leaves the
        running ones alone.
        """
        await asyncio.gather(*(connection.start() for connection in self._connections.values()))

    async def aclose(self) -> None:
        """Stop every server (each stdio server's whole process group is killed) and close the
        log file; calls made afterwards are ``MCP_SERVER_CLOSED`` error results."""
        try:
            await asyncio.gather(
                *(connection.aclose() for connection in self._connections.values())
            )
        finally:
            self._log.close()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def status(self) -> list[McpServerStatus]:
        """Each server's ``{name, state, error?, tools}``, in configuration order."""
        return [connection.status() for connection in self._connections.values()]

    def tools(self) -> list[McpTool]:
        """One ``McpTool`` per tool each server listed (servers that never started have none).

        Raises ``McpToolNameError`` for a name over 64 characters or two tools with one name.
        """
        tools: list[McpTool] = []
        owners: dict[str, tuple[str, str]] = {}
        for connection in self._connections.values():
            for tool in connection.tools:
                name = mcp_tool_name(connection.name, tool.name)
                if len(name) > MAX_TOOL_NAME_LENGTH:
                    raise McpToolNameError(
                        connection.name,
                        tool.name,
                        name,
                        f"the name is {len(name)} characters, over the limit of "
                        f"{MAX_TOOL_NAME_LENGTH}; use a shorter server name",
                    )
                if name in owners:
                    other = owners[name]
                    raise McpToolNameError(
                        connection.name,
                        tool.name,
                        name,
                        f"the name is also that of tool {other[1]!r} of MCP server {other[0]!r}",
                        other=other,
                    )
                owners[name] = (connection.name, tool.name)
                tools.append(McpTool(name, connection, tool))
        return tools

    def register(self, registry: ToolRegistry) -> Disposer:
        """Register ``tools()`` in ``registry``; the disposer withdraws them all.

        Call it after ``start()``: the tools are those listed then (a server that comes up
        later, or changes its tools, needs a fresh ``register``). All or nothing: a name
        error, or a name the registry already has (``dsh_tools.DuplicateToolError``),
        registers none.
        """
        disposers: list[Disposer] = []
        try:
            for tool in self.tools():
                disposers.append(registry.register(tool))
        except BaseException:
            for disposer in disposers:
                disposer.dispose()
            raise

        def withdraw() -> None:
            for disposer in disposers:
                disposer.dispose()

        return Disposer(withdraw)

    def __repr__(self) -> str:
        return f"<McpServers {list(self._connections)!r}>"
