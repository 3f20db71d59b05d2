"""Real MCP servers for the dsh-tool-mcp tests (no mocks): the demo server script run over
stdio with ``sys.executable``, or as a streamable-HTTP server on 127.0.0.1 in a subprocess."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from dsh_tool_mcp import McpServers
from dsh_tools import ToolCall, ToolRegistry, ToolResult

# Properties must not fail on a slow or loaded machine: no per-example deadline.
settings.register_profile("dsh", deadline=None)
settings.load_profile("dsh")

DEMO = Path(__file__).with_name("mcp_demo_server.py")
WAIT_LIMIT = 120.0  # a safety net against hangs, never a timing assertion


def stdio_server(**extra: Any) -> dict[str, Any]:
    """The config table of the demo server over stdio."""
    return {"command": sys.executable, "args": [str(DEMO), "stdio"], **extra}


def _read_if_written(path: Path) -> str | None:
    return path.read_text() if path.exists() else None


async def wait_for_file(path: Path) -> str:
    """Wait until the server signals through ``path``; returns its text."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_LIMIT
    text = _read_if_written(path)
    while text is None:
        if loop.time() > deadline:
            raise AssertionError(f"the server never wrote {path}")
        await asyncio.sleep(0.01)
        text = _read_if_written(path)
    return text


class HttpDemo:
    """The demo server as a streamable-HTTP server in a subprocess; ``kill()`` and
    ``start()`` again restart it on the same port."""

    def __init__(self) -> None:
        self.port = 0
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        process = subprocess.Popen(
            [sys.executable, str(DEMO), "http", str(self.port)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert process.stdout is not None
        self.port = int(process.stdout.readline())
        self.process = process

    def kill(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            process.kill()
            process.wait()
            assert process.stdout is not None
            process.stdout.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def table(self, **extra: Any) -> dict[str, Any]:
        return {"url": self.url, **extra}


@pytest.fixture
def http_demo() -> Iterator[HttpDemo]:
    demo = HttpDemo()
    demo.start()
    try:
        yield demo
    finally:
        demo.kill()


Call = Callable[..., Awaitable[ToolResult]]


@pytest.fixture
def registry() -> ToolRegistry:
    return ToolRegistry()


@pytest.fixture
def call(registry: ToolRegistry) -> Call:
    """``await call(name, arguments)`` through the registry, as an agent loop would."""
    counter = 0

    async def run(name: str, arguments: Any = None) -> ToolResult:
        nonlocal counter
        counter += 1
        text = json.dumps(arguments or {})
        return await registry.execute(ToolCall(f"call-{counter}", name, text))

    return run


class Opener:
    """``await open_servers(config, **options)``: started servers, registered in the test's
    registry; every one is closed after the test."""

    def __init__(self, registry: ToolRegistry) -> None:
        self.registry = registry
        self.opened: list[McpServers] = []

    async def __call__(self, config: Any, *, register: bool = True, **options: Any) -> McpServers:
        servers = McpServers(config, **options)
        self.opened.append(servers)
        await servers.start()
        if register:
            servers.register(self.registry)
        return servers

    async def aclose(self) -> None:
        for servers in self.opened:
            await servers.aclose()


@pytest.fixture
async def open_servers(registry: ToolRegistry) -> AsyncIterator[Opener]:
    opener = Opener(registry)
    try:
        yield opener
    finally:
        await opener.aclose()


@pytest.fixture
def demo_stdio() -> Callable[..., dict[str, Any]]:
    """``demo_stdio(**extra)``: the config table of the demo server over stdio."""
    return stdio_server


@pytest.fixture
def signal() -> Callable[[Path], Awaitable[str]]:
    """``await signal(path)``: wait until the server writes ``path``."""
    return wait_for_file
