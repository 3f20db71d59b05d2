"""Limits of dsh-tool-mcp that users may rely on (no SDK import: the package stays light)."""

from __future__ import annotations

__all__ = ["MAX_STDIO_LINE_BYTES"]

MAX_STDIO_LINE_BYTES = 16 * 1024 * 1024
"""The longest stdout line (one JSON-RPC message, without its newline) a stdio server may
write: 16 MiB. A longer line ends the connection: the server's process group is killed, the
call waiting on it answers at once with ``MCP_CONNECTION_LOST`` naming the limit, and the
next call restarts the server. The reader never holds more than this plus one read's chunk."""
