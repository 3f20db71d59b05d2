"""The demo server over streamable HTTP on 127.0.0.1: calls, headers from environment
variables, a server killed mid-call, and reconnecting after the server restarts."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from dsh_llm import ImageBlock, TextBlock
from dsh_tools import ToolCall, ToolRegistry

ECHO = "mcp__web__echo"


async def test_lists_and_calls_over_http(open_servers: Any, http_demo: Any, call: Any) -> None:
    servers = await open_servers({"servers": {"web": http_demo.table()}})
    [status] = servers.status()
    assert (status.state, status.error) == ("running", None)
    assert "echo" in status.tools
    assert (await call(ECHO, {"text": "over http"})).content == [TextBlock(text="over http")]
    failed = await call("mcp__web__fail", {"reason": "nope"})
    assert failed.is_error
    assert failed.text == "nope"
    [image] = (await call("mcp__web__image")).content
    assert isinstance(image, ImageBlock)
    assert image.mime_type == "image/png"


async def test_headers_come_from_environment_variables_and_stay_out_of_reprs(
    open_servers: Any, http_demo: Any, call: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "Bearer tok-1234567890"
    monkeypatch.setenv("DSH_TEST_MCP_AUTH", secret)
    table = http_demo.table(
        headers={"Authorization": {"env": "DSH_TEST_MCP_AUTH"}, "X-Team": "core"}
    )
    servers = await open_servers({"servers": {"web": table}})
    assert (await call("mcp__web__header", {"name": "Authorization"})).text == secret
    assert (await call("mcp__web__header", {"name": "X-Team"})).text == "core"
    shown = [
        repr(servers),
        repr(servers.config),
        servers.config.model_dump_json(),
        json.dumps([status.model_dump() for status in servers.status()]),
        repr(servers.tools()),
    ]
    for text in shown:
        assert secret not in text


async def test_a_server_killed_mid_call_is_an_error_and_works_again_after_its_restart(
    open_servers: Any,
    http_demo: Any,
    registry: ToolRegistry,
    call: Any,
    tmp_path: Path,
    signal: Any,
) -> None:
    servers = await open_servers({"servers": {"web": http_demo.table()}})
    marker = tmp_path / "block"
    arguments = json.dumps({"marker": str(marker)})
    task = asyncio.create_task(registry.execute(ToolCall("c1", "mcp__web__block", arguments)))
    await signal(marker)
    http_demo.kill()
    result = await task
    assert result.is_error
    assert result.error is not None
    assert result.error.code == "MCP_CONNECTION_LOST"
    assert "MCP server 'web'" in result.text
    assert "tool 'block'" in result.text
    assert servers.status()[0].state == "failed"

    http_demo.start()  # the same port
    assert (await call(ECHO, {"text": "reconnected"})).text == "reconnected"
    assert servers.status()[0].state == "running"


async def test_a_call_after_the_server_restarted_while_idle_reconnects(
    open_servers: Any, http_demo: Any, call: Any
) -> None:
    servers = await open_servers({"servers": {"web": http_demo.table()}})
    first_pid = (await call("mcp__web__pid")).text
    http_demo.kill()
    http_demo.start()
    result = await call("mcp__web__pid")
    assert not result.is_error, result.text
    assert result.text != first_pid
    assert servers.status()[0].state == "running"


async def test_a_server_that_is_not_listening_is_reported_by_name(
    open_servers: Any, http_demo: Any, demo_stdio: Any
) -> None:
    table = http_demo.table()
    http_demo.kill()
    servers = await open_servers({"servers": {"web": table, "demo": demo_stdio()}})
    web, demo = servers.status()
    assert web.state == "failed"
    assert web.error
    assert demo.state == "running"


async def test_a_call_while_the_server_is_down_names_it_and_the_next_one_after_its_return_works(
    open_servers: Any, http_demo: Any, call: Any
) -> None:
    servers = await open_servers({"servers": {"web": http_demo.table()}})
    http_demo.kill()
    down = await call(ECHO, {"text": "anyone?"})
    assert down.is_error
    assert down.error is not None
    assert down.error.code == "MCP_SERVER_UNAVAILABLE"  # refused: reconnecting failed too
    assert "MCP server 'web'" in down.text
    assert servers.status()[0].state == "failed"

    http_demo.start()
    assert (await call(ECHO, {"text": "back"})).text == "back"
