"""The demo server over stdio: listing, calls and their results, crashes, cancellation,
timeouts, environment secrets and failed starts."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh_llm import ImageBlock, TextBlock
from dsh_tool_mcp import McpServers
from dsh_tools import ToolCall, ToolRegistry

ECHO = "mcp__demo__echo"


async def test_lists_the_tools_and_passes_their_schemas_through_unchanged(
    open_servers: Any, demo_stdio: Any, registry: ToolRegistry
) -> None:
    servers = await open_servers({"servers": {"demo": demo_stdio()}})
    [status] = servers.status()
    assert (status.name, status.state, status.error) == ("demo", "running", None)
    assert {"echo", "fail", "image", "weather", "block", "die"} <= set(status.tools)
    assert set(registry.names()) == {f"mcp__demo__{tool}" for tool in status.tools}
    schema = next(schema for schema in registry.schemas() if schema.name == ECHO)
    # The SDK's own schema, as the server sent it (not a pydantic schema of ours).
    assert schema.parameters == {
        "properties": {"text": {"title": "Text", "type": "string"}},
        "required": ["text"],
        "title": "echoArguments",
        "type": "object",
    }
    assert schema.description == "Repeat the text."


async def test_a_call_returns_the_servers_text(
    open_servers: Any, demo_stdio: Any, call: Any
) -> None:
    await open_servers({"servers": {"demo": demo_stdio()}})
    result = await call(ECHO, {"text": "hello"})
    assert not result.is_error, result.text
    assert result.content == [TextBlock(text="hello")]
    assert result.meta == {
        "mcpServer": "demo",
        "mcpTool": "echo",
        "structuredContent": {"result": "hello"},
    }


async def test_an_mcp_error_result_is_an_error_result_for_the_model(
    open_servers: Any, demo_stdio: Any, call: Any
) -> None:
    await open_servers({"servers": {"demo": demo_stdio()}})
    result = await call("mcp__demo__fail", {"reason": "the disk is full"})
    assert result.is_error
    assert result.error is not None
    assert (result.error.name, result.error.code) == ("McpToolError", "MCP_TOOL_ERROR")
    assert result.text == "the disk is full"
    # Arguments the server's schema refuses are the server's error result too.
    refused = await call(ECHO, {"text": 3})
    assert refused.is_error
    assert "text" in refused.text


async def test_an_image_result_is_an_image_block(
    open_servers: Any, demo_stdio: Any, call: Any
) -> None:
    await open_servers({"servers": {"demo": demo_stdio()}})
    result = await call("mcp__demo__image")
    assert not result.is_error, result.text
    [block] = result.content
    assert isinstance(block, ImageBlock)
    assert block.mime_type == "image/png"
    assert block.data is not None
    assert base64.b64decode(block.data) == b"\x89PNG\r\n\x1a\n" + b"\x00" * 8


async def test_structured_content_is_shown_once_and_kept_in_meta(
    open_servers: Any, demo_stdio: Any, call: Any
) -> None:
    await open_servers({"servers": {"demo": demo_stdio()}})
    weather = await call("mcp__demo__weather", {"city": "Oslo"})
    assert not weather.is_error, weather.text
    [block] = weather.content  # the server's JSON text; not repeated
    assert isinstance(block, TextBlock)
    assert json.loads(block.text) == {"city": "Oslo", "celsius": 21.5}
    assert isinstance(weather.meta, dict)
    assert weather.meta["structuredContent"] == {"city": "Oslo", "celsius": 21.5}

    only = await call("mcp__demo__structured_only", {"city": "Bergen"})
    assert not only.is_error, only.text
    assert only.content == [TextBlock(text='{"city": "Bergen", "rain": true}')]
    assert isinstance(only.meta, dict)
    assert only.meta["structuredContent"] == {"city": "Bergen", "rain": True}


async def test_a_server_that_dies_mid_call_is_an_error_then_restarts_on_the_next_call(
    open_servers: Any, demo_stdio: Any, call: Any
) -> None:
    servers = await open_servers({"servers": {"demo": demo_stdio()}})
    first_pid = json.loads((await call("mcp__demo__pid")).text)

    crashed = await call("mcp__demo__die")
    assert crashed.is_error
    assert crashed.error is not None
    assert crashed.error.code == "MCP_CONNECTION_LOST"
    assert "MCP server 'demo'" in crashed.text
    assert "tool 'die'" in crashed.text
    [status] = servers.status()
    assert status.state == "failed"
    assert status.error

    again = await call(ECHO, {"text": "back"})
    assert again.text == "back"
    assert servers.status()[0].state == "running"
    assert json.loads((await call("mcp__demo__pid")).text) != first_pid


async def test_cancelling_a_call_cancels_the_request_and_keeps_the_session(
    open_servers: Any,
    demo_stdio: Any,
    registry: ToolRegistry,
    call: Any,
    tmp_path: Path,
    signal: Any,
) -> None:
    servers = await open_servers({"servers": {"demo": demo_stdio()}})
    pid = (await call("mcp__demo__pid")).text
    marker = tmp_path / "block"
    arguments = json.dumps({"marker": str(marker)})
    task = asyncio.create_task(registry.execute(ToolCall("c1", "mcp__demo__block", arguments)))
    assert await signal(marker) == "started"
    task.cancel()
    result = await task  # the registry answers a cancelled call with a result
    assert result.is_error
    assert result.error is not None
    assert result.error.code == "ABORTED"
    assert await signal(Path(f"{marker}.cancelled")) == "cancelled"  # the server was told

    assert servers.status()[0].state == "running"
    assert (await call(ECHO, {"text": "still here"})).text == "still here"
    assert (await call("mcp__demo__pid")).text == pid  # the same process, no restart


async def test_a_call_over_the_servers_timeout_is_an_error_naming_server_tool_and_seconds(
    open_servers: Any, demo_stdio: Any, call: Any, tmp_path: Path
) -> None:
    servers = await open_servers({"servers": {"demo": demo_stdio(timeout=0.05)}})
    marker = tmp_path / "block"
    result = await call("mcp__demo__block", {"marker": str(marker)})  # blocks until cancelled
    assert result.is_error
    assert result.error is not None
    assert result.error.code == "MCP_TIMEOUT"
    assert "MCP server 'demo'" in result.text
    assert "tool 'block'" in result.text
    assert "0.05 seconds" in result.text
    assert servers.status()[0].state == "running"  # a timeout is not a dead server


async def test_env_values_come_from_environment_variables_and_stay_out_of_reprs(
    open_servers: Any, demo_stdio: Any, call: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "s3cr3t-value-from-env"
    monkeypatch.setenv("DSH_TEST_MCP_SECRET", secret)
    config = {
        "servers": {
            "demo": demo_stdio(
                env={"DEMO_TOKEN": {"env": "DSH_TEST_MCP_SECRET"}, "DEMO_PLAIN": "plain"}
            )
        }
    }
    servers = await open_servers(config)
    assert (await call("mcp__demo__env", {"name": "DEMO_TOKEN"})).text == secret
    assert (await call("mcp__demo__env", {"name": "DEMO_PLAIN"})).text == "plain"
    # Only the SDK's minimal environment is inherited, plus what the config lists.
    monkeypatch.setenv("DSH_TEST_MCP_OTHER", "x")
    shown = [
        repr(servers),
        repr(servers.config),
        servers.config.model_dump_json(),
        json.dumps([status.model_dump() for status in servers.status()]),
        repr(servers.tools()),
        repr([tool.schema() for tool in servers.tools()]),
    ]
    for text in shown:
        assert secret not in text


async def test_a_missing_variable_fails_that_server_by_name_until_it_is_set(
    open_servers: Any, demo_stdio: Any, call: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DSH_TEST_MCP_LATER", raising=False)
    config = {
        "servers": {
            "ok": demo_stdio(),
            "later": demo_stdio(env={"DEMO_TOKEN": {"env": "DSH_TEST_MCP_LATER"}}),
        }
    }
    servers = await open_servers(config, register=False)
    ok, later = servers.status()
    assert ok.state == "running"
    assert later.state == "failed"
    assert later.error is not None
    assert "'later'" in later.error
    assert "env.DEMO_TOKEN" in later.error
    assert "DSH_TEST_MCP_LATER" in later.error
    assert later.tools == []

    # Variables are read at each start: once it is set, a new start succeeds.
    monkeypatch.setenv("DSH_TEST_MCP_LATER", "now-set")
    await servers.start()
    assert servers.status()[1].state == "running"


async def test_a_server_that_cannot_start_is_reported_and_the_others_keep_working(
    open_servers: Any, demo_stdio: Any, call: Any, registry: ToolRegistry
) -> None:
    config = {
        "servers": {
            "missing": {"command": "/nonexistent/dsh-mcp-server"},
            "quits": {"command": sys.executable, "args": ["-c", "import sys; sys.exit(2)"]},
            "demo": demo_stdio(),
        }
    }
    servers = await open_servers(config)
    missing, quits, demo = servers.status()
    assert (missing.state, quits.state, demo.state) == ("failed", "failed", "running")
    assert missing.error is not None
    assert "FileNotFoundError" in missing.error or "No such file" in missing.error
    assert quits.error
    assert not any(name.startswith(("mcp__missing__", "mcp__quits__")) for name in registry.names())
    assert (await call(ECHO, {"text": "fine"})).text == "fine"


async def test_a_dead_server_that_cannot_restart_answers_with_an_error_naming_it(
    open_servers: Any, demo_stdio: Any, call: Any, tmp_path: Path
) -> None:
    # The server script is removed after the start: its restart then fails.
    script = tmp_path / "demo_copy.py"
    shutil.copyfile(demo_stdio()["args"][0], script)
    table = {"command": sys.executable, "args": [str(script), "stdio"]}
    servers = await open_servers({"servers": {"demo": table}})
    assert (await call(ECHO, {"text": "x"})).text == "x"
    script.unlink()
    crashed = await call("mcp__demo__die")
    assert crashed.error is not None
    assert crashed.error.code == "MCP_CONNECTION_LOST"

    result = await call(ECHO, {"text": "x"})
    assert result.is_error
    assert result.error is not None
    assert result.error.code == "MCP_SERVER_UNAVAILABLE"
    assert "MCP server 'demo'" in result.text
    assert servers.status()[0].state == "failed"


async def test_closing_stops_the_servers_and_refuses_later_calls(
    open_servers: Any, demo_stdio: Any, call: Any
) -> None:
    servers = await open_servers({"servers": {"demo": demo_stdio()}})
    pid = int((await call("mcp__demo__pid")).text)
    await servers.aclose()
    assert servers.status()[0].state == "closed"
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    result = await call(ECHO, {"text": "x"})
    assert result.error is not None
    assert result.error.code == "MCP_SERVER_CLOSED"
    assert "MCP server 'demo'" in result.text


async def test_async_with_starts_and_closes(demo_stdio: Any) -> None:
    async with McpServers({"servers": {"demo": demo_stdio()}}) as servers:
        assert servers.status()[0].state == "running"
    assert servers.status()[0].state == "closed"
