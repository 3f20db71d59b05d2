"""An MCP ``CallToolResult`` as a ``dsh_tools.ToolResult`` (dsh-llm text and image blocks)."""

from __future__ import annotations

import base64
import binascii
import json
from typing import TYPE_CHECKING

from pydantic import JsonValue

from dsh_llm import ImageBlock, TextBlock, ToolResultContentBlock
from dsh_tools import ToolErrorInfo, ToolResult

if TYPE_CHECKING:  # the SDK is imported when a result is mapped, not with the package
    import mcp.types as types

__all__ = ["MCP_TOOL_ERROR", "content_blocks", "to_tool_result"]

MCP_TOOL_ERROR = ToolErrorInfo(name="McpToolError", code="MCP_TOOL_ERROR")
"""The error info of a result the server itself marked ``isError``."""


def _size(data: str) -> str:
    try:
        return f"{len(base64.b64decode(data, validate=True))} bytes"
    except (binascii.Error, ValueError):
        return "undecodable data"


def _block(item: object) -> ToolResultContentBlock:
    import mcp.types as types

    if isinstance(item, types.TextContent):
        return TextBlock(text=item.text)
    if isinstance(item, types.ImageContent):
        return ImageBlock(data=item.data, mime_type=item.mime_type)
    if isinstance(item, types.AudioContent):
        return TextBlock(text=f"[audio {item.mime_type}, {_size(item.data)}: not shown]")
    if isinstance(item, types.ResourceLink):
        described = f" — {item.description}" if item.description else ""
        return TextBlock(text=f"[resource link {item.name}: {item.uri}]{described}")
    if isinstance(item, types.EmbeddedResource):
        resource = item.resource
        if isinstance(resource, types.TextResourceContents):
            return TextBlock(text=f"[resource {resource.uri}]\n{resource.text}")
        mime = resource.mime_type or "application/octet-stream"
        if mime.startswith("image/"):
            return ImageBlock(data=resource.blob, mime_type=mime)
        return TextBlock(
            text=f"[resource {resource.uri} ({mime}, {_size(resource.blob)}): not shown]"
        )
    kind = getattr(item, "type", type(item).__name__)  # a newer protocol's content type
    return TextBlock(text=f"[MCP content of type {kind!r}: not shown]")


def content_blocks(result: types.CallToolResult) -> list[ToolResultContentBlock]:
    """The blocks the model sees for ``result``.

    Text is text; images (and embedded image resources) are inline image blocks; audio,
    resource links and other embedded resources are one-line text notes. ``structuredContent``
    is shown as compact JSON text when the server sent no content blocks; otherwise the
    content is the server's own rendering of it (the spec asks servers to send both) and is
    not repeated. An empty result is ``(no output)``.
    """
    blocks = [_block(item) for item in result.content]
    if not blocks and result.structured_content is not None:
        blocks.append(TextBlock(text=json.dumps(result.structured_content, ensure_ascii=False)))
    return blocks or [TextBlock(text="(no output)")]


def to_tool_result(server: str, tool: str, result: types.CallToolResult) -> ToolResult:
    """``result`` as a ``ToolResult``.

    ``content`` is ``content_blocks(result)``; an ``isError`` result is an error result
    (``is_error``, error info ``McpToolError`` / ``MCP_TOOL_ERROR``) with the server's own
    content. ``meta`` (for the operator, never the model) is ``{"mcpServer", "mcpTool"}`` plus
    ``"structuredContent"`` when the server sent it.
    """
    meta: dict[str, JsonValue] = {"mcpServer": server, "mcpTool": tool}
    if result.structured_content is not None:
        meta["structuredContent"] = result.structured_content
    blocks = content_blocks(result)
    if result.is_error:
        return ToolResult(content=blocks, is_error=True, error=MCP_TOOL_ERROR, meta=meta)
    return ToolResult(content=blocks, meta=meta)
