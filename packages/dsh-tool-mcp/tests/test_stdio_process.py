"""A stdio server's process: its own process group, killed whole when the server is closed or
dies; invalid UTF-8 on its stdout neither kills the connection nor stalls later calls."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from dsh_tool_mcp import McpServers

BOUND = 30.0  # far below the configured timeout of 60 s
GONE_WITHIN = 30.0  # a safety net for the bounded wait on a process's end


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


async def gone(pid: int) -> bool:
    """Wait (bounded) until ``pid`` is no longer running."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + GONE_WITHIN
    while _alive(pid):
        if loop.time() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


@pytest.mark.parametrize("detach", [False, True], ids=["keeps-pipes", "detached"])
async def test_closing_kills_the_servers_child_processes(
    demo_stdio: Any, call: Any, registry: Any, detach: bool
) -> None:
    servers = McpServers({"servers": {"demo": demo_stdio(timeout=60)}})
    try:
        await servers.start()
        servers.register(registry)
        server_pid = int((await call("mcp__demo__pid")).text)
        result = await asyncio.wait_for(call("mcp__demo__spawn", {"detach": detach}), BOUND)
        child = int(result.text)
        assert _alive(child)
    finally:
        await asyncio.wait_for(servers.aclose(), BOUND)
    assert await gone(server_pid)
    assert await gone(child), f"the server's child {child} outlived close"


async def test_a_server_that_dies_takes_its_children_and_the_call_answers_at_once(
    open_servers: Any, demo_stdio: Any, call: Any
) -> None:
    servers = await open_servers({"servers": {"demo": demo_stdio(timeout=60)}})
    child = int((await call("mcp__demo__spawn", {"detach": False})).text)  # holds stdout open
    crashed = await asyncio.wait_for(call("mcp__demo__die"), BOUND)
    assert crashed.error is not None
    assert crashed.error.code == "MCP_CONNECTION_LOST"
    assert servers.status()[0].state == "failed"
    assert await gone(child)
    again = await asyncio.wait_for(call("mcp__demo__echo", {"text": "back"}), BOUND)
    assert again.text == "back"


async def test_invalid_utf8_on_stdout_keeps_the_connection_and_later_calls_answer(
    open_servers: Any, demo_stdio: Any, call: Any
) -> None:
    servers = await open_servers({"servers": {"demo": demo_stdio(timeout=60)}})
    pid = (await call("mcp__demo__pid")).text
    result = await asyncio.wait_for(call("mcp__demo__garble", {"text": "after"}), BOUND)
    assert not result.is_error, result.text
    assert result.text == "after"
    assert servers.status()[0].state == "running"
    again = await asyncio.wait_for(call("mcp__demo__echo", {"text": "still"}), BOUND)
    assert again.text == "still"
    assert (await asyncio.wait_for(call("mcp__demo__pid"), BOUND)).text == pid
    assert json.loads((await call("mcp__demo__count")).text) == 1
    assert servers.status()[0].state == "running"


async def test_the_server_process_is_the_leader_of_its_own_group(
    open_servers: Any, demo_stdio: Any, call: Any
) -> None:
    await open_servers({"servers": {"demo": demo_stdio()}})
    pid = int((await call("mcp__demo__pid")).text)
    assert os.getpgid(pid) == pid
    assert os.getpgid(pid) != os.getpgid(0)
