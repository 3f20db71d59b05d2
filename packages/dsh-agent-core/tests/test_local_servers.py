"""First-class local servers (issue 33 §2): the keyless built-in providers ``llamacpp``,
``ollama``, ``vllm`` and ``local``; a route naming only its provider (``dsh run --model local``)
runs the one model the server serves; ``dsh models`` says what each provider serves, or why it
cannot.

Every case runs the installed ``dsh`` console script in a real process (a fresh ``DSH_HOME``)
against a tiny OpenAI-compatible server on 127.0.0.1 started by the test; the built-in names
are pointed at it (or at a bound port nobody listens on) by ``base_url``, since their default
ports cannot be used in a test: the defaults themselves are checked through the dump."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from shapes import flat

DSH = Path(sys.executable).parent / "dsh"
TIMEOUT = 120.0
"""Seconds one dsh command may take: a safety net against a hang."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ModelServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path != "/v1/models":
            self.send_error(404)
            return
        with self.server.lock:
            self.server.asked.append(f"GET {self.path}")
        listed = {"object": "list", "data": [{"id": name} for name in self.server.served]}
        body = json.dumps(listed).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        with self.server.lock:
            self.server.asked.append(f"POST {self.path}")
        if self.path != "/v1/chat/completions":  # Ollama's /api/show: not this server
            self.send_error(404)
            return
        with self.server.lock:
            self.server.bodies.append(body)
            self.server.authorization.append(self.headers.get("Authorization"))
        events = [
            {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
            {"choices": [{"index": 0, "delta": {"content": f"served by {body['model']}"}}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        ]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event in [f"data: {json.dumps(e)}\n\n".encode() for e in events] + [
            b"data: [DONE]\n\n"
        ]:
            self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class ModelServer(ThreadingHTTPServer):
    """Serves ``served`` at ``GET /v1/models`` and answers every chat request with ``served by
    <the requested model>``; ``asked``, ``bodies`` and ``authorization`` record the requests."""

    daemon_threads = True
    served: list[str]
    asked: list[str]
    bodies: list[dict[str, Any]]
    authorization: list[str | None]
    lock: threading.Lock

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}/v1"


@pytest.fixture
def server() -> Iterator[ModelServer]:
    running = ModelServer(("127.0.0.1", 0), _Handler)
    running.served, running.asked, running.bodies = ["only-model"], [], []
    running.authorization, running.lock = [], threading.Lock()
    thread = threading.Thread(target=running.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield running
    finally:
        running.shutdown()
        running.server_close()
        thread.join()


@pytest.fixture
def closed_url() -> Iterator[str]:
    """A loopback URL whose port is bound but not listening: connections are refused."""
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{bound.getsockname()[1]}/v1"


def dsh(home: Path, *args: str, extra_env: dict[str, str] | None = None) -> Any:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("DSH_", "OPENAI_", "DEEPSEEK_"))
    }
    env.update(DSH_HOME=str(home), NO_COLOR="1", TERM="dumb", COLUMNS="200", **(extra_env or {}))
    return subprocess.run(
        [str(DSH), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=home,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
    )


def write_config(home: Path, text: str) -> None:
    (home / "config.toml").write_text(text)


def test_builtin_local_servers_need_no_config_and_no_key(tmp_path: Path) -> None:
    result = dsh(tmp_path, "config", "--dump", "--json")
    assert result.returncode == 0, result.stderr
    providers = json.loads(result.stdout)["providers"]
    expected = {
        "llamacpp": "http://127.0.0.1:8080/v1",
        "ollama": "http://127.0.0.1:11434/v1",
        "vllm": "http://127.0.0.1:8000/v1",
        "local": "http://127.0.0.1:8080/v1",
    }
    for name, url in expected.items():
        assert providers[name]["base_url"] == url, name
        assert providers[name]["kind"] == "openai-compatible"
        assert providers[name]["api_key_env"] is None
        assert providers[name]["api_key"] is None  # no key is needed, none is sent


def test_run_model_local_uses_the_one_served_model(tmp_path: Path, server: ModelServer) -> None:
    server.served = ["qwen2.5-coder:7b"]  # an Ollama tag: the model name holds a colon
    write_config(tmp_path, f'[providers.local]\nbase_url = "{server.base_url}"\n')
    result = dsh(tmp_path, "run", "--sandbox", "danger-full-access", "--model", "local", "hi")
    assert result.returncode == 0, result.stderr
    assert "served by qwen2.5-coder:7b" in result.stdout
    assert server.asked[0] == "GET /v1/models"  # asked which model, before the session
    assert server.asked.count("POST /v1/chat/completions") == 1
    assert server.bodies[0]["model"] == "qwen2.5-coder:7b"
    assert server.authorization == [None]  # keyless: no Authorization header
    listed = dsh(tmp_path, "sessions", "list", "--json")
    session_path = json.loads(listed.stdout)[0]["session_path"]
    events = [json.loads(line) for line in Path(session_path).read_text().splitlines()]
    provenance = [
        flat("assistant/message", e["data"])["provenance"]
        for e in events
        if e["type"] == "assistant/message"
    ]
    assert provenance == [{"provider": "local", "model": "qwen2.5-coder:7b"}]


def test_a_named_model_with_colons_is_sent_whole(tmp_path: Path, server: ModelServer) -> None:
    server.served = ["a", "b"]
    write_config(tmp_path, f'[providers.ollama]\nbase_url = "{server.base_url}"\n')
    result = dsh(
        tmp_path, "run", "--sandbox", "danger-full-access", "--model", "ollama:qwen2.5:7b", "hi"
    )
    assert result.returncode == 0, result.stderr
    assert "served by qwen2.5:7b" in result.stdout
    assert [body["model"] for body in server.bodies] == ["qwen2.5:7b"]


def test_the_config_model_and_dsh_model_may_name_only_a_provider(
    tmp_path: Path, server: ModelServer
) -> None:
    server.served = ["only-model"]
    write_config(tmp_path, f'model = "vllm"\n\n[providers.vllm]\nbase_url = "{server.base_url}"\n')
    result = dsh(tmp_path, "run", "--sandbox", "danger-full-access", "hi")
    assert result.returncode == 0, result.stderr
    assert "served by only-model" in result.stdout
    write_config(tmp_path, f'[providers.llamacpp]\nbase_url = "{server.base_url}"\n')
    result = dsh(
        tmp_path,
        "run",
        "--sandbox",
        "danger-full-access",
        "hi",
        extra_env={"DSH_MODEL": "llamacpp"},
    )
    assert result.returncode == 0, result.stderr
    assert "served by only-model" in result.stdout


def test_run_model_local_with_two_served_lists_both(tmp_path: Path, server: ModelServer) -> None:
    server.served = ["llama3.1:8b", "qwen2.5-coder:7b"]
    write_config(tmp_path, f'[providers.local]\nbase_url = "{server.base_url}"\n')
    result = dsh(tmp_path, "run", "--sandbox", "danger-full-access", "--model", "local", "hi")
    assert result.returncode == 1
    assert "serves 2 models (llama3.1:8b, qwen2.5-coder:7b)" in result.stderr
    assert "--model local:llama3.1:8b" in result.stderr
    assert not any(a.startswith("POST") for a in server.asked)  # no request was sent
    listed = dsh(tmp_path, "sessions", "list", "--json")
    assert json.loads(listed.stdout) == []  # refused before any session was created


def test_run_model_local_none_served_or_unreachable_says_how_to_name_one(
    tmp_path: Path, server: ModelServer, closed_url: str
) -> None:
    server.served = []
    write_config(tmp_path, f'[providers.local]\nbase_url = "{server.base_url}"\n')
    result = dsh(tmp_path, "run", "--sandbox", "danger-full-access", "--model", "local", "hi")
    assert result.returncode == 1
    assert f"{server.base_url} serves no model" in result.stderr
    assert "local:MODEL" in result.stderr
    write_config(tmp_path, f'[providers.local]\nbase_url = "{closed_url}"\n')
    result = dsh(tmp_path, "run", "--sandbox", "danger-full-access", "--model", "local", "hi")
    assert result.returncode == 1
    assert "could not be asked which it serves" in result.stderr
    assert f"{closed_url}/models" in result.stderr
    assert "local:MODEL" in result.stderr


def test_dsh_models_one_line_per_provider(
    tmp_path: Path, server: ModelServer, closed_url: str
) -> None:
    server.served = ["qwen2.5-coder:7b", "llama3.1:8b"]
    write_config(
        tmp_path,
        f'[providers.llamacpp]\nbase_url = "{server.base_url}"\n'
        f'[providers.local]\nbase_url = "{server.base_url}"\n'
        f'[providers.ollama]\nbase_url = "{closed_url}"\n'
        f'[providers.vllm]\nbase_url = "{closed_url}"\n'
        f'[providers.gateway]\nbase_url = "{server.base_url}"\napi_key_env = "GATEWAY_KEY"\n',
    )
    result = dsh(tmp_path, "models")
    assert result.returncode == 0, result.stderr  # unreachable ones do not fail the command
    lines = {line.split()[0]: line for line in result.stdout.splitlines()}
    assert set(lines) == {
        "deepseek",
        "gateway",
        "llamacpp",
        "local",
        "ollama",
        "openai",
        "scripted",
        "vllm",
    }
    assert lines["llamacpp"].split(None, 2)[1:] == [
        server.base_url,
        "qwen2.5-coder:7b, llama3.1:8b",
    ]
    assert lines["ollama"].split(None, 2)[1] == closed_url
    assert lines["ollama"].split(None, 2)[2].startswith(f"unreachable: {closed_url}/models")
    assert lines["deepseek"].endswith("key not set (DEEPSEEK_API_KEY)")
    assert lines["gateway"].endswith("key not set (GATEWAY_KEY)")
    assert "scripted" in lines["scripted"].split(None, 1)[1]
    assert "5 of 8 providers did not say what they serve" in result.stderr
    # only the two reachable keyless providers were asked; a missing key asks nothing
    assert server.asked == ["GET /v1/models", "GET /v1/models"]

    as_json = dsh(tmp_path, "models", "--json", extra_env={"GATEWAY_KEY": "k"})
    assert as_json.returncode == 0, as_json.stderr
    rows = {row["provider"]: row for row in json.loads(as_json.stdout)}
    assert rows["gateway"]["status"] == "served"
    assert rows["gateway"]["models"] == ["qwen2.5-coder:7b", "llama3.1:8b"]
    assert rows["vllm"]["status"] == "unreachable"
    assert rows["vllm"]["models"] is None
    assert rows["openai"]["status"] == "key-not-set"
    assert rows["scripted"]["models"] == ["scripted"]


def test_dsh_models_shows_a_servers_controls_never_interprets_them(
    tmp_path: Path, server: ModelServer
) -> None:
    server.served = ["evil\x1b]0;title\x07\nname"]
    write_config(tmp_path, f'[providers.local]\nbase_url = "{server.base_url}"\n')
    result = dsh(tmp_path, "models")
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout
    assert "\x07" not in result.stdout
    local = [line for line in result.stdout.splitlines() if line.startswith("local ")]
    assert len(local) == 1  # the newline in the name did not start a line of its own
    assert "evil" in local[0]
    assert "name" in local[0]


def test_a_bare_route_naming_no_provider_is_refused_naming_where(tmp_path: Path) -> None:
    write_config(tmp_path, 'model = "olama"\n')  # a typo of ollama
    result = dsh(tmp_path, "config", "--dump")
    assert result.returncode == 1
    assert "config.toml: model" in result.stderr
    assert "'olama' is neither provider:model nor a provider's name" in result.stderr
    write_config(tmp_path, "")
    result = dsh(tmp_path, "config", "--dump", extra_env={"DSH_MODEL": "olama"})
    assert result.returncode == 1
    assert "$DSH_MODEL" in result.stderr
    result = dsh(tmp_path, "run", "--sandbox", "danger-full-access", "--model", "olama", "hi")
    assert result.returncode == 1
    assert "no provider 'olama' is configured" in result.stderr
