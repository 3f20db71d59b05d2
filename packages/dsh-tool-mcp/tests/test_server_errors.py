"""A JSON-RPC error answer is the server refusing the call, whatever its code: the connection
stays up and the same server process answers the next call (no restart). Only the transport's
state says a connection was lost, and only our own clock says a call timed out."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from dsh_tools import ToolResult

BOUND = 30.0  # far below the configured timeout of 60 s: the answer came, nothing waited it out

CODES = [
    -32000,  # JSON-RPC's generic server error (the SDK's "connection closed" code too)
    -32001,  # the SDK's "request timeout" code, sent here by the server at once
    -32050,
    -32099,
    -32603,  # internal error
    -32602,  # invalid params
    -32601,  # method not found
    7,  # the server's own code
    -1,
]


@pytest.fixture(params=["stdio", "http"])
def table(request: pytest.FixtureRequest, demo_stdio: Any) -> dict[str, Any]:
    if request.param == "stdio":
        return dict(demo_stdio(timeout=60))
    return dict(request.getfixturevalue("http_demo").table(timeout=60))


async def answered(call: Any, name: str, arguments: Any = None) -> ToolResult:
    result: ToolResult = await asyncio.wait_for(call(name, arguments), BOUND)
    return result


@pytest.mark.parametrize("code", CODES)
async def test_an_error_answer_of_any_code_is_a_refusal_and_keeps_the_connection(
    open_servers: Any, table: dict[str, Any], call: Any, code: int
) -> None:
    servers = await open_servers({"servers": {"demo": table}})
    pid = (await answered(call, "mcp__demo__pid")).text
    assert (await answered(call, "mcp__demo__count")).text == "1"

    message = f"no quota left ({code})"
    refused = await answered(call, "mcp__demo__refuse", {"code": code, "message": message})
    assert refused.is_error
    assert refused.error is not None
    assert refused.error.code == "MCP_PROTOCOL_ERROR"
    assert f"the server refused the call: MCP error {code}: {message}" in refused.text
    assert "MCP server 'demo'" in refused.text
    assert "tool 'refuse'" in refused.text
    assert "timed out" not in refused.text
    assert "connection" not in refused.text
    assert servers.status()[0].state == "running"

    # The same process, its state intact: it was not restarted.
    assert (await answered(call, "mcp__demo__count")).text == "2"
    assert (await answered(call, "mcp__demo__pid")).text == pid
    assert servers.status()[0].state == "running"


async def test_a_refusal_does_not_disturb_a_call_in_flight(
    open_servers: Any, demo_stdio: Any, call: Any, tmp_path: Any, signal: Any
) -> None:
    await open_servers({"servers": {"demo": demo_stdio(timeout=60)}})
    marker = tmp_path / "block"
    blocked = asyncio.create_task(call("mcp__demo__block", {"marker": str(marker)}))
    await signal(marker)
    refused = await answered(call, "mcp__demo__refuse", {"code": -32000, "message": "busy"})
    assert refused.error is not None
    assert refused.error.code == "MCP_PROTOCOL_ERROR"
    assert not blocked.done()  # the connection it runs on is still up
    blocked.cancel()
    result = await blocked
    assert result.error is not None
    assert result.error.code == "ABORTED"
    assert json.loads((await answered(call, "mcp__demo__count")).text) == 1
