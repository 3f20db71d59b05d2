"""A stdio server's process: its own process group, killed whole when the server is closed or
dies; invalid UTF-8 on its stdout neither kills the connection nor stalls later calls; one
stdout line is capped (``MAX_STDIO_LINE_BYTES``): a server writing an endless line loses its
connection at once, dsh's memory stays bounded, and the next call restarts the server."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from dsh_tool_mcp import MAX_STDIO_LINE_BYTES, McpServers

BOUND = 30.0  # far below the configured timeouts (60 s, 600 s)
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


# Generous: the reader may hold the cap plus a chunk, and a bytearray may grow by copying.
RSS_GROWTH_LIMIT = 8 * MAX_STDIO_LINE_BYTES
LIMIT_TEXT = "16 MiB"


def _rss() -> int:
    """This process's resident set size in bytes (VmRSS)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


async def _watched(awaitable: Any) -> tuple[Any, int]:
    """Run ``awaitable`` while sampling VmRSS; its result and the peak growth. Fails (and
    cancels it) when it takes longer than BOUND or the growth passes RSS_GROWTH_LIMIT, so an
    unbounded reader fails the test instead of exhausting the machine."""
    task = asyncio.ensure_future(awaitable)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + BOUND
    base = peak = _rss()
    try:
        while not task.done():
            peak = max(peak, _rss())
            assert peak - base < RSS_GROWTH_LIMIT, f"RSS grew by {peak - base} bytes"
            assert loop.time() < deadline, f"no answer within {BOUND} seconds"
            await asyncio.wait({task}, timeout=0.005)
    finally:
        task.cancel()
    return task.result(), peak - base


def test_the_limit_is_16_mib() -> None:
    assert MAX_STDIO_LINE_BYTES == 16 * 1024 * 1024


async def test_an_endless_stdout_line_fails_the_call_at_once_naming_the_limit(
    open_servers: Any, demo_stdio: Any, call: Any
) -> None:
    servers = await open_servers({"servers": {"demo": demo_stdio(timeout=600)}})
    pid = int((await call("mcp__demo__pid")).text)
    result, growth = await _watched(call("mcp__demo__endless_line"))
    assert result.error is not None, result.text
    assert result.error.code == "MCP_CONNECTION_LOST"
    assert "'demo'" in result.text
    assert LIMIT_TEXT in result.text
    assert str(MAX_STDIO_LINE_BYTES) in result.text
    assert growth < RSS_GROWTH_LIMIT
    status = servers.status()[0]
    assert status.state == "failed"
    assert status.error is not None
    assert LIMIT_TEXT in status.error
    assert await gone(pid), "the server's process outlived its lost connection"
    again = await asyncio.wait_for(call("mcp__demo__echo", {"text": "back"}), BOUND)
    assert again.text == "back"
    assert int((await call("mcp__demo__pid")).text) != pid
    assert servers.status()[0].state == "running"


async def test_an_endless_stdout_line_at_start_fails_the_start_naming_the_limit(
    demo_stdio: Any,
) -> None:
    table = demo_stdio(startup_timeout=600, env={"DEMO_ENDLESS_LINE_AT_START": "1"})
    servers = McpServers({"servers": {"demo": table}})
    try:
        _, growth = await _watched(servers.start())
        status = servers.status()[0]
        assert status.state == "failed"
        assert status.error is not None
        assert LIMIT_TEXT in status.error, status.error
        assert growth < RSS_GROWTH_LIMIT
    finally:
        await asyncio.wait_for(servers.aclose(), BOUND)
