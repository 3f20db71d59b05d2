"""MCP servers' tools as DSH tools: ``McpServers(config)`` starts stdio and streamable-HTTP
servers and registers each server tool as ``mcp__<server>__<tool>`` in a ``ToolRegistry``.

Servers are configured as data (``McpConfig``); secrets come from environment variables
(``{env = "NAME"}``) read at start and kept out of reprs, dumps, statuses and logs. Results map
to text and image blocks; a server's ``isError`` is an error result; a failed or dead server is
reported by ``status()`` and its tools answer with errors naming it, until a call restarts it.
"""

from dsh_tool_mcp._config import (
    ConfigValue,
    EnvRef,
    HttpServer,
    McpConfig,
    ServerConfig,
    StdioServer,
)
from dsh_tool_mcp._content import MCP_TOOL_ERROR, content_blocks, to_tool_result
from dsh_tool_mcp._errors import McpCallError, McpConfigError, McpToolNameError
from dsh_tool_mcp._limits import MAX_STDIO_LINE_BYTES
from dsh_tool_mcp._log import DEFAULT_LOG_MAX_BYTES
from dsh_tool_mcp._names import MAX_TOOL_NAME_LENGTH, mcp_tool_name
from dsh_tool_mcp._servers import McpServers
from dsh_tool_mcp._status import McpServerStatus, ServerState
from dsh_tool_mcp._tool import McpArguments, McpTool

__all__ = [
    "DEFAULT_LOG_MAX_BYTES",
    "MAX_STDIO_LINE_BYTES",
    "MAX_TOOL_NAME_LENGTH",
    "MCP_TOOL_ERROR",
    "ConfigValue",
    "EnvRef",
    "HttpServer",
    "McpArguments",
    "McpCallError",
    "McpConfig",
    "McpConfigError",
    "McpServerStatus",
    "McpServers",
    "McpTool",
    "McpToolNameError",
    "ServerConfig",
    "ServerState",
    "StdioServer",
    "content_blocks",
    "mcp_tool_name",
    "to_tool_result",
]
