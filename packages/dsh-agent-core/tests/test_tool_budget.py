"""What the built-in tools cost on the wire (issue 33 §3.8): the schemas of the default tool set
stay under a pinned number of characters, and a preset's ``tools`` list sends only those tools.

The requests go to a real OpenAI-compatible HTTP server on 127.0.0.1 started by the tests, so
the size measured is the ``tools`` array of the chat-completions body as ``dsh-model-openai``
sends it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from dsh_agent_core import Config, compose, load_config
from dsh_agent_core._harness import DEFAULT_TOOL_NAMES

TOOL_SCHEMA_BUDGET = 9_650
"""Characters the default tool set's ``tools`` array may take (compact JSON): the measured
8,772 (all twelve built-in tools, default ``workspace-write`` sandbox, background jobs on) plus
about 10%. Before issue 33 §3.8 the same array was 14,697 characters."""


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    chunk = {
        "id": "chatcmpl-budget",
        "object": "chat.completion.chunk",
        "created": 1_767_000_000,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(chunk)}\n\n".encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: RecordingServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.send_error(404, "no such endpoint")

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/v1/chat/completions":
            self.send_error(404, "no such endpoint")
            return
        with self.server.lock:
            self.server.bodies.append(json.loads(body))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        events = [
            _chunk({"role": "assistant", "content": ""}),
            _chunk({"content": "hi"}),
            _chunk({}, "stop"),
            b"data: [DONE]\n\n",
        ]
        for event in events:
            self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class RecordingServer(ThreadingHTTPServer):
    """Answers every chat completion with ``hi``; ``bodies`` holds each request body."""

    daemon_threads = True
    bodies: list[dict[str, Any]]
    lock: threading.Lock

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}/v1"

    def only_tools(self) -> list[dict[str, Any]]:
        with self.lock:
            assert len(self.bodies) == 1
            tools: list[dict[str, Any]] = self.bodies[0].get("tools", [])
            return tools


@pytest.fixture
def server() -> Iterator[RecordingServer]:
    running = RecordingServer(("127.0.0.1", 0), _Handler)
    running.bodies, running.lock = [], threading.Lock()
    thread = threading.Thread(target=running.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield running
    finally:
        running.shutdown()
        running.server_close()
        thread.join()


def configured(home: Path, server: RecordingServer, extra: str = "") -> Config:
    text = f'[providers.local]\nbase_url = "{server.base_url}"\n{extra}'
    (home / "config.toml").write_text(text)
    return load_config(env={"DSH_HOME": str(home)})


def size(tools: list[dict[str, Any]]) -> int:
    return len(json.dumps(tools, ensure_ascii=False, separators=(",", ":")))


async def say_hi(
    config: Config, cwd: Path, preset: str | None = None, *, shows_plans: bool = False
) -> None:
    async with compose(config, shows_plans=shows_plans) as harness:
        agent = await harness.create("Say hi", model="local:m", preset=preset, cwd=cwd)
        await agent.wait_idle()


async def test_the_default_tool_set_stays_under_its_character_budget(
    tmp_path: Path, server: RecordingServer
) -> None:
    """Measured: 8,772 characters (~2,193 tokens at 4 characters a token) for the twelve
    built-in tools; the budget is that plus about 10% (`TOOL_SCHEMA_BUDGET`)."""
    await say_hi(configured(tmp_path, server), tmp_path)
    tools = server.only_tools()
    assert tuple(t["function"]["name"] for t in tools) == DEFAULT_TOOL_NAMES
    assert all(t["function"]["description"] for t in tools)
    assert size(tools) < TOOL_SCHEMA_BUDGET, f"{size(tools)} characters of tool schemas"


async def test_a_preset_listing_read_and_bash_sends_only_those(
    tmp_path: Path, server: RecordingServer
) -> None:
    preset = '[presets.lean]\ntools = ["read", "bash"]\n'
    await say_hi(configured(tmp_path, server, preset), tmp_path, preset="lean")
    tools = server.only_tools()
    assert [t["function"]["name"] for t in tools] == ["bash", "read"]
    assert size(tools) < 3_000


TODO_SCHEMA_BUDGET = 900
"""Characters ``todo_write`` adds where it is offered (``dsh acp``, or ``[todo] enabled``):
measured 821 with the default parallel wording (757 with ``allow_parallel_in_progress =
false``) plus about 10%."""


async def test_todo_write_adds_at_most_its_own_budget_where_plans_are_shown(
    tmp_path: Path, server: RecordingServer
) -> None:
    await say_hi(configured(tmp_path, server), tmp_path, shows_plans=True)
    tools = server.only_tools()
    assert tuple(t["function"]["name"] for t in tools) == (*DEFAULT_TOOL_NAMES, "todo_write")
    assert size(tools[-1:]) < TODO_SCHEMA_BUDGET, f"{size(tools[-1:])} characters"
