"""Registration: names that are too long or collide are refused, registration is all or
nothing, and the disposer withdraws every tool."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from dsh_tool_mcp import McpServers, McpToolNameError
from dsh_tools import DuplicateToolError, ToolDefinition, ToolExecution, ToolRegistry


async def test_a_name_over_64_characters_is_refused_naming_server_and_tool(
    open_servers: Any, demo_stdio: Any, registry: ToolRegistry
) -> None:
    server = "s" * 52  # mcp__ + 52 + __ + "echo" = 63; "weather" makes 66
    servers = await open_servers({"servers": {server: demo_stdio()}}, register=False)
    with pytest.raises(McpToolNameError) as caught:
        servers.register(registry)
    error = caught.value
    assert error.server == server
    assert len(error.name) > 64
    assert error.tool in str(error)
    assert server in str(error)
    assert len(registry) == 0  # all or nothing


async def test_two_tools_with_one_name_are_refused_naming_both(
    open_servers: Any, demo_stdio: Any, registry: ToolRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEMO_COLLIDING_TOOLS", "1")
    table = demo_stdio(env={"DEMO_COLLIDING_TOOLS": "1"})
    servers = await open_servers({"servers": {"demo": table}}, register=False)
    with pytest.raises(McpToolNameError) as caught:
        servers.register(registry)
    error = caught.value
    assert error.name == "mcp__demo__get_item"
    assert error.other is not None
    assert {error.tool, error.other[1]} == {"get.item", "get_item"}
    assert "'get.item'" in str(error)
    assert "'get_item'" in str(error)
    assert len(registry) == 0


class NoArgs(BaseModel):
    pass


class Taken(ToolDefinition[NoArgs]):
    """A tool already registered under the name an MCP tool would take."""

    name = "mcp__demo__echo"
    description = "Already here."
    parameters = NoArgs

    async def execute(self, args: NoArgs, execution: ToolExecution) -> str:
        return "taken"


async def test_a_name_the_registry_has_registers_nothing_and_the_disposer_withdraws_all(
    demo_stdio: Any, registry: ToolRegistry
) -> None:
    taken = Taken()
    async with McpServers({"servers": {"demo": demo_stdio()}}) as servers:
        withdraw_taken = registry.register(taken)
        with pytest.raises(DuplicateToolError):
            servers.register(registry)
        assert registry.names() == ["mcp__demo__echo"]
        withdraw_taken()

        disposer = servers.register(registry)
        assert len(registry) == len(servers.status()[0].tools)
        disposer()
        assert len(registry) == 0
