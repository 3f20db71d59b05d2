"""`dsh run` offers the configured MCP servers' tools from the first request of a new session
(issue 33 §6: the tool set was built before the servers started, so only `--resume` had them).
The real `dsh` command runs against a loopback OpenAI-compatible server that records each
request and a real MCP SDK server over stdio."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from dsh_agent_core import compose, load_config
from dsh_llm.testing import ScriptedModel, text_response, tool_call_response
from shapes import flat

DSH = Path(sys.executable).parent / "dsh"
TIMEOUT = 120.0
"""Seconds one dsh command may take: a safety net against a hang, not a speed bar."""

SERVER = """
from mcp.server.mcpserver import MCPServer

server = MCPServer("adder", log_level="WARNING")


@server.tool()
def add(a: int, b: int) -> int:
    \"\"\"Add two numbers.\"\"\"
    return a + b


server.run()
"""


def _event(delta: dict[str, Any], finish: str | None = None) -> bytes:
    chunk = {
        "id": "chatcmpl-mcp",
        "object": "chat.completion.chunk",
        "created": 1_767_000_000,
        "model": "test-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(chunk)}\n\n".encode()


def call_answer(name: str, arguments: dict[str, Any]) -> list[bytes]:
    """An answer calling the tool ``name`` with ``arguments``."""
    call = {
        "index": 0,
        "id": "call-1",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return [
        _event({"role": "assistant", "content": ""}),
        _event({"tool_calls": [call]}),
        _event({}, "tool_calls"),
        b"data: [DONE]\n\n",
    ]


def text_answer(text: str) -> list[bytes]:
    """A plain text answer, ending the turn."""
    return [
        _event({"role": "assistant", "content": ""}),
        _event({"content": text}),
        _event({}, "stop"),
        b"data: [DONE]\n\n",
    ]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    answers: list[list[bytes]]
    requests: list[dict[str, Any]]
    lock: threading.Lock


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/v1/chat/completions":
            self.send_error(404, "no such endpoint")
            return
        with self.server.lock:
            self.server.requests.append(json.loads(body))
            answers = self.server.answers
            answer = answers[min(len(self.server.requests), len(answers)) - 1]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event in answer:
            self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


@pytest.fixture
def model_server() -> Iterator[_Server]:
    """The recording server; the n-th request gets the n-th answer (then the last again)."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.answers = [text_answer("nothing scripted")]
    server.requests = []
    server.lock = threading.Lock()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _tool_names(request: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in request.get("tools", [])]


def _tool_message(request: dict[str, Any]) -> dict[str, Any]:
    (message,) = [m for m in request["messages"] if m.get("role") == "tool"]
    return message


def _run(
    tmp_path: Path, server: _Server, *args: str, extra: str = ""
) -> subprocess.CompletedProcess[bytes]:
    assert DSH.exists(), f"the dsh console script is not installed next to {sys.executable}"
    home, cwd = tmp_path / "dsh-home", tmp_path / "project"
    home.mkdir(exist_ok=True)
    cwd.mkdir(exist_ok=True)
    script = tmp_path / "adder_server.py"
    script.write_text(SERVER)
    host, port = server.server_address[:2]
    (home / "config.toml").write_text(
        'model = "local:test-model"\n[providers.local]\n'
        f'base_url = "http://{host!s}:{port}/v1"\napi_key_env = "LOCAL_LLM_KEY"\n'
        '[sandbox]\nmode = "danger-full-access"\n'
        f"[mcp.servers.adder]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(script))}]\n" + extra
    )
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "DSH_HOME": str(home),
        "LANG": "C.UTF-8",
        "LOCAL_LLM_KEY": "sk-mcp-test-not-a-real-key",
    }
    done = subprocess.run(
        [str(DSH), "run", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done


@pytest.mark.parametrize("preset", [None, "adding"], ids=["no-preset", "preset"])
def test_a_new_session_offers_the_mcp_tools_from_its_first_request(
    tmp_path: Path, model_server: _Server, preset: str | None
) -> None:
    model_server.answers = [call_answer("mcp__adder__add", {"a": 2, "b": 40}), text_answer("42")]
    args = ["add 2 and 40"] + (["--preset", preset] if preset is not None else [])
    # a preset offers the server's tool by its name, beside a built-in one
    extra = '[presets.adding]\ntools = ["bash", "mcp__adder__add"]\n'
    _run(tmp_path, model_server, *args, extra=extra if preset else "")
    first, second = model_server.requests
    assert "mcp__adder__add" in _tool_names(first)
    if preset is not None:
        assert sorted(_tool_names(first)) == ["bash", "mcp__adder__add"]
    assert "mcp__adder__add" in _tool_names(second)
    assert _tool_message(second)["content"] == "42"


def test_resume_still_offers_the_mcp_tools(tmp_path: Path, model_server: _Server) -> None:
    model_server.answers = [text_answer("first")]
    first = _run(tmp_path, model_server, "hello")
    (line,) = [x for x in first.stderr.decode().splitlines() if re.fullmatch(r"session \S+", x)]
    model_server.answers = [call_answer("mcp__adder__add", {"a": 1, "b": 1}), text_answer("2")]
    model_server.requests.clear()
    _run(tmp_path, model_server, "add", "--resume", line.removeprefix("session "))
    first, second = model_server.requests
    assert "mcp__adder__add" in _tool_names(first)
    assert _tool_message(second)["content"] == "2"


async def test_a_loop_built_before_the_servers_started_offers_their_tools(tmp_path: Path) -> None:
    """The library's path: ``loop()``/``tool_names()`` before ``start()``, then ``create``."""
    script = tmp_path / "adder_server.py"
    script.write_text(SERVER)
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(
        f"[mcp.servers.adder]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(script))}]\n"
    )
    config = load_config(env={"DSH_HOME": str(home)})
    model = ScriptedModel(
        [tool_call_response(("c1", "mcp__adder__add", {"a": 2, "b": 40})), text_response("42")]
    )
    harness = compose(config, models={"scripted": model})
    try:
        assert "mcp__adder__add" not in harness.tool_names()  # not started yet
        agent = await harness.create("add them", model="scripted:m", cwd=tmp_path)
        await agent.wait_idle()
        assert "mcp__adder__add" in harness.tool_names()
        assert "mcp__adder__add" in [tool.name for tool in model.requests[0].tools]
        (result,) = [
            flat("tool/result", e.to_wire()["data"])
            for e in agent.session.events
            if e.type == "tool/result"
        ]
        assert result["content"] == [{"type": "text", "text": "42"}]
    finally:
        await harness.aclose()
