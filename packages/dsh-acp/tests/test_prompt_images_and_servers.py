"""What an editor sends beyond text, read as untrusted input: image blocks (type, base64, first
bytes, size, and only for a model that reads images) and the MCP servers it passes (each
transport's table, a name passed twice, SSE, too many)."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from acp import image_block, text_block
from acp.schema import EnvVariable, HttpHeader, HttpMcpServer, McpServerStdio, SseMcpServer

from dsh_acp import (
    MAX_CLIENT_MCP_SERVER_NAME,
    MAX_CLIENT_MCP_SERVERS,
    MAX_IMAGE_BYTES,
    ClientMcpServerError,
    ImagesNotTakenError,
    PromptContentError,
    client_mcp_tables,
    client_mcp_unavailable,
    prompt_message,
)
from dsh_llm import ImageBlock, TextBlock

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8


def _png(data: bytes = PNG, mime: str = "image/png") -> object:
    return image_block(base64.b64encode(data).decode(), mime)


def test_text_and_images_keep_their_order() -> None:
    message = prompt_message(
        [text_block("Look"), _png(), text_block("and say")], route="p:m", images=True
    )
    assert [type(block) for block in message.content] == [TextBlock, ImageBlock, TextBlock]
    image = message.content[1]
    assert isinstance(image, ImageBlock)
    assert image.mime_type == "image/png"
    assert base64.b64decode(image.data or "") == PNG


def test_an_image_alone_is_a_prompt() -> None:
    message = prompt_message([_png()], route="p:m", images=True)
    assert len(message.content) == 1


def test_an_image_for_a_text_model_is_refused_naming_it() -> None:
    with pytest.raises(ImagesNotTakenError) as refused:
        prompt_message([text_block("Look"), _png()], route="local:text-only", images=False)
    assert refused.value.route == "local:text-only"
    assert "local:text-only" in str(refused.value)


@pytest.mark.parametrize(
    ("block", "says"),
    [
        (_png(mime="image/svg+xml"), "image/svg+xml"),
        (image_block("not base64!", "image/png"), "base64"),
        (_png(b"GIF89a" + b"\x00" * 8), "does not hold image/png"),
        (_png(b"\xff\xd8\xff" + b"\x00" * (MAX_IMAGE_BYTES + 1), "image/jpeg"), "over"),
    ],
)
def test_a_bad_image_is_refused_saying_why(block: object, says: str) -> None:
    with pytest.raises(PromptContentError) as refused:
        prompt_message([block], route="p:m", images=True)  # type: ignore[list-item]
    assert says in str(refused.value)


def test_each_transport_becomes_its_table_as_given() -> None:
    stdio = McpServerStdio(
        name="files", command="/usr/bin/server", args=["--x"],
        env=[EnvVariable(name="TOKEN", value="t 1")],
    )  # fmt: skip
    http = HttpMcpServer(
        name="web", url="https://example.invalid/mcp", type="http",
        headers=[HttpHeader(name="Authorization", value="Bearer abc")],
    )  # fmt: skip
    tables = client_mcp_tables([stdio, http], "/work/project")
    assert tables == {
        "files": {"command": "/usr/bin/server", "args": ["--x"], "env": {"TOKEN": "t 1"},
                  "cwd": "/work/project"},
        "web": {"url": "https://example.invalid/mcp", "headers": {"Authorization": "Bearer abc"}},
    }  # fmt: skip


def test_sse_a_name_twice_and_too_many_are_refused_naming_the_server() -> None:
    sse = SseMcpServer(name="feed", url="http://127.0.0.1:9/sse", headers=[], type="sse")
    with pytest.raises(ClientMcpServerError) as refused:
        client_mcp_tables([sse], "/p")
    assert refused.value.server == "feed"
    one = McpServerStdio(name="twin", command="/bin/x", args=[], env=[])
    with pytest.raises(ClientMcpServerError) as twice:
        client_mcp_tables([one, one], "/p")
    assert twice.value.server == "twin"
    many = [
        McpServerStdio(name=f"s{i}", command="/bin/x", args=[], env=[])
        for i in range(MAX_CLIENT_MCP_SERVERS + 1)
    ]
    with pytest.raises(ClientMcpServerError) as too_many:
        client_mcp_tables(many, "/p")
    assert str(MAX_CLIENT_MCP_SERVERS) in str(too_many.value)


def test_a_server_name_over_the_bound_is_refused_not_cut() -> None:
    long = "s" * (MAX_CLIENT_MCP_SERVER_NAME + 1)
    twin = long + "t"  # cut to the bound, the two would read as one server passed twice
    stdio = [McpServerStdio(name=n, command="x", args=[], env=[]) for n in (long, twin)]
    with pytest.raises(ClientMcpServerError) as refused:
        client_mcp_tables(stdio, "/work")
    assert "over 100 characters" in str(refused.value)
    assert "passed twice" not in str(refused.value)


async def test_without_the_mcp_extra_the_session_opens_and_the_editor_is_told(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Editors pass their servers by default: without dsh-agent-core[mcp] nothing is started,
    no session is refused, and the notice names the servers and the extra."""
    import dsh_acp._client_mcp as client_mcp

    monkeypatch.setattr(client_mcp, "extra_installed", lambda extra: extra != "mcp")
    servers = [McpServerStdio(name="zed-context", command="x", args=[], env=[])]
    notice = client_mcp_unavailable(servers)
    assert notice is not None
    assert "'zed-context'" in notice
    assert "dsh-agent-core[mcp]" in notice
    assert "the config's" not in notice
    harness: Any = None  # never reached: nothing is started without the extra
    assert await client_mcp.start_client_mcp_servers(harness, servers, "/work") is None
    assert client_mcp_unavailable([]) is None
