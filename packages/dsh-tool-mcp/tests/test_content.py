"""MCP content as dsh-llm tool-result blocks, for the content kinds the demo server does not
send (audio, resource links, embedded resources)."""

from __future__ import annotations

import base64

import mcp.types as types

from dsh_llm import ImageBlock, TextBlock
from dsh_tool_mcp import MCP_TOOL_ERROR, content_blocks, to_tool_result

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()
WAV = base64.b64encode(b"abc").decode()


def test_every_content_kind_becomes_a_text_or_image_block() -> None:
    result = types.CallToolResult(
        content=[
            types.TextContent(type="text", text="hello"),
            types.ImageContent(type="image", data=PNG, mime_type="image/png"),
            types.AudioContent(
                type="audio", data=base64.b64encode(b"abc").decode(), mime_type="audio/wav"
            ),
            types.ResourceLink(type="resource_link", name="notes", uri="file:///notes.md"),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(uri="file:///a.txt", text="contents"),
            ),
            types.EmbeddedResource(
                type="resource",
                resource=types.BlobResourceContents(
                    uri="file:///pic.png", blob=PNG, mime_type="image/png"
                ),
            ),
            types.EmbeddedResource(
                type="resource",
                resource=types.BlobResourceContents(uri="file:///x.bin", blob=PNG),
            ),
        ]
    )
    assert content_blocks(result) == [
        TextBlock(text="hello"),
        ImageBlock(data=PNG, mime_type="image/png"),
        TextBlock(text="[audio audio/wav, 3 bytes: not shown]"),
        TextBlock(text="[resource link notes: file:///notes.md]"),
        TextBlock(text="[resource file:///a.txt]\ncontents"),
        ImageBlock(data=PNG, mime_type="image/png"),
        TextBlock(text="[resource file:///x.bin (application/octet-stream, 8 bytes): not shown]"),
    ]


def test_an_empty_result_says_so() -> None:
    assert content_blocks(types.CallToolResult(content=[])) == [TextBlock(text="(no output)")]


def test_an_is_error_result_is_an_error_result_with_the_servers_content() -> None:
    result = to_tool_result(
        "demo",
        "fail",
        types.CallToolResult(content=[types.TextContent(type="text", text="no")], is_error=True),
    )
    assert result.is_error
    assert result.error == MCP_TOOL_ERROR
    assert result.text == "no"
    assert result.meta == {"mcpServer": "demo", "mcpTool": "fail"}
