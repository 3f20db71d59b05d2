"""``McpTool``: one server tool as a ``dsh_tools.ToolDefinition``, its schema passed through."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from dsh_llm import ToolSchema
from dsh_tools import ToolDefinition, ToolExecution, ToolResult

if TYPE_CHECKING:
    import mcp.types as types

    from dsh_tool_mcp._connection import ServerConnection

__all__ = ["McpArguments", "McpTool"]


class McpArguments(BaseModel):
    """The registry-side parameters of every MCP tool: any JSON object.

    The registry only checks that the arguments are a JSON object; the server validates them
    against its own ``inputSchema`` (which is what the model is shown) and answers a mismatch
    with an error result.
    """

    model_config = ConfigDict(extra="allow")


def _thaw(value: Any) -> Any:
    """Plain JSON (dicts and lists) from the registry's deep-frozen arguments."""
    if isinstance(value, Mapping):
        return {key: _thaw(item) for key, item in value.items()}
    if isinstance(value, tuple | list):
        return [_thaw(item) for item in value]
    return value


class McpTool(ToolDefinition[McpArguments]):
    """Tool ``tool`` of MCP server ``server``, offered as ``name`` (``mcp__<server>__<tool>``).

    ``schema()`` sends the server's ``inputSchema`` unchanged as the parameters; the
    description is the server's (its title, or a generic sentence, when it has none). The body
    calls the server and maps the answer with ``to_tool_result``; connection failures,
    timeouts and protocol errors are ``McpCallError`` results naming server and tool.
    """

    parameters = McpArguments

    def __init__(self, name: str, connection: ServerConnection, tool: types.Tool) -> None:
        self.name = name
        self.server = connection.name
        self.tool = tool.name
        self.input_schema: dict[str, Any] = dict(tool.input_schema)
        self.description = (
            tool.description
            or tool.title
            or f"Tool {tool.name!r} of the MCP server {self.server!r}."
        )
        self._connection = connection

    def schema(self) -> ToolSchema:
        """Name, description and the server's JSON Schema, as the server gave it."""
        return ToolSchema(
            name=self.name, description=self.description, parameters=self.input_schema
        )

    async def execute(self, args: McpArguments, execution: ToolExecution) -> ToolResult:
        """Call the server's tool with the call's arguments exactly as the model sent them."""
        return await self._connection.call(self.tool, _thaw(execution.arguments))
