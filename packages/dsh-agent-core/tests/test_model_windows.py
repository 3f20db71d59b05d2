"""Every routed model's context window without configuration (issue 33 §2): the built-in
providers' catalog, an OpenAI-compatible server asked once (vLLM's ``max_model_len``,
llama.cpp's ``/props``), and when nothing says it one notice per session naming the key to
set; the keyless demo says nothing of it. Prices: ``[models."provider:model"] prices``.

The servers are real HTTP servers on 127.0.0.1 started by the tests."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from dsh_agent_core import Config, ConfigError, compose, load_config
from dsh_compaction import SUMMARY_INSTRUCTION

DSH = Path(sys.executable).parent / "dsh"


def configured(home: Path, text: str = "") -> Config:
    (home / "config.toml").write_text(text)
    return load_config(env={"DSH_HOME": str(home)})


# -- an OpenAI-compatible server that may say its window ----------------------------------------


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    chunk = {
        "id": "chatcmpl-window",
        "object": "chat.completion.chunk",
        "created": 1_767_000_000,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(chunk)}\n\n".encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: WindowServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _json(self, answer: Any) -> None:
        if answer is None:
            self.send_error(404, "no such endpoint")
            return
        body = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        with self.server.lock:
            self.server.asked.append(f"GET {self.path}")
        self._json(self.server.routes.get(self.path))

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with self.server.lock:
            self.server.asked.append(f"POST {self.path}")
        if self.path != "/v1/chat/completions":
            self._json(self.server.routes.get(self.path))
            return
        last = json.loads(body)["messages"][-1]
        text = json.dumps(last.get("content"))
        summary = SUMMARY_INSTRUCTION.splitlines()[0][:40] in text
        reply = "- the user asked long questions; all answered" if summary else "long " * 300
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        events = [
            _chunk({"role": "assistant", "content": ""}),
            _chunk({"content": reply}),
            _chunk({}, "stop"),
            b"data: [DONE]\n\n",
        ]
        for event in events:
            self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class WindowServer(ThreadingHTTPServer):
    """``routes``: the JSON answer of each other path (a missing one answers 404); ``asked``:
    every request but the chat completions' bodies, as ``METHOD path``."""

    daemon_threads = True
    routes: dict[str, Any]
    asked: list[str]
    lock: threading.Lock

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}/v1"

    def window_queries(self) -> list[str]:
        with self.lock:
            return [a for a in self.asked if not a.endswith("/chat/completions")]


@pytest.fixture
def server() -> Iterator[WindowServer]:
    running = WindowServer(("127.0.0.1", 0), _Handler)
    running.routes, running.asked, running.lock = {}, [], threading.Lock()
    thread = threading.Thread(target=running.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield running
    finally:
        running.shutdown()
        running.server_close()
        thread.join()


def local(home: Path, server: WindowServer, extra: str = "") -> Config:
    return configured(home, f'[providers.local]\nbase_url = "{server.base_url}"\n{extra}')


VLLM = {"/v1/models": {"object": "list", "data": [{"id": "m", "max_model_len": 4000}]}}
LLAMA_CPP = {
    "/v1/models": {"data": [{"id": "m", "meta": {"n_ctx_train": 131072}}]},
    "/props": {"default_generation_settings": {"n_ctx": 4000}},
}


# -- the window from the server -----------------------------------------------------------------


@pytest.mark.parametrize("routes", [VLLM, LLAMA_CPP], ids=["vllm", "llama.cpp"])
async def test_compaction_knows_a_servers_window_without_configuration(
    tmp_path: Path, server: WindowServer, routes: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    server.routes = routes
    async with compose(local(tmp_path, server)) as harness:
        agent = await harness.create("a question " * 60, model="local:m", cwd=tmp_path)
        await agent.wait_idle()
        assert harness.compactor.context_window("local", "m") == 4000
        for turn in range(4):
            agent.followup(f"question {turn} " + "detail " * 60)
            await agent.wait_idle()
        kinds = [event.type for event in agent.session.events]
    assert "compaction/summary" in kinds  # compacted at 80% of the served window
    assert not [r for r in caplog.records if "no context window" in r.getMessage()]
    assert server.window_queries().count("GET /v1/models") == 1  # asked once, not per step


async def test_a_configured_window_wins_and_the_server_is_not_asked(
    tmp_path: Path, server: WindowServer
) -> None:
    server.routes = VLLM
    config = local(tmp_path, server, 'context_windows = { "m" = 9000 }\n')
    async with compose(config) as harness:
        agent = await harness.create("hello", model="local:m", cwd=tmp_path)
        await agent.wait_idle()
        assert harness.compactor.context_window("local", "m") == 9000
    assert server.window_queries() == []


async def test_a_server_that_says_nothing_gets_one_notice_per_session_naming_the_key(
    tmp_path: Path, server: WindowServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.routes = {}  # every window query answers 404
    notices: list[str] = []
    with caplog.at_level(logging.WARNING):
        async with compose(local(tmp_path, server)) as harness:
            for _session in range(2):
                agent = await harness.create("hello", model="local:m", cwd=tmp_path)
                await agent.wait_idle()
                for turn in range(3):
                    agent.followup(f"question {turn}")
                    await agent.wait_idle()
                notices.append(agent.id)
    said = [r.getMessage() for r in caplog.records if "no context window" in r.getMessage()]
    assert len(said) == 2, said  # one per session, never one per turn
    for session_id, notice in zip(notices, said, strict=True):
        assert session_id in notice
        assert '[providers.local] context_windows = { "m" = TOKENS }' in notice
        assert str(tmp_path / "config.toml") in notice
    # the server was asked once for the model in all (three queries), not per session or step
    assert server.window_queries() == ["GET /v1/models", "GET /props", "POST /api/show"]


# -- the catalog --------------------------------------------------------------------------------


async def test_a_builtin_model_reports_the_catalog_window_without_asking_anything(
    tmp_path: Path,
) -> None:
    config = configured(tmp_path)
    # no DEEPSEEK_API_KEY: asking the server would be impossible, the catalog needs none
    async with compose(config, env={}) as harness:
        deepseek = harness.models["deepseek"]
        assert harness.compactor.context_window("deepseek", "deepseek-v4-flash") == 1_000_000
        assert await deepseek.discover_context_window("deepseek-v4-flash") == 1_000_000  # type: ignore[attr-defined]
        assert deepseek.max_output("deepseek-v4-pro") == 384_000  # type: ignore[attr-defined]
        assert harness.compactor.context_window("openai", "gpt-6.2-sol") == 1_050_000
        assert harness.compactor.context_window("deepseek", "no-such-model") is None


async def test_the_catalog_belongs_to_the_base_url_not_the_name(
    tmp_path: Path, server: WindowServer
) -> None:
    server.routes = VLLM
    config = configured(
        tmp_path,
        f'[providers.deepseek]\nbase_url = "{server.base_url}"\n\n'
        '[providers.mirror]\nbase_url = "https://api.deepseek.com/"\n',
    )
    async with compose(config, env={"DEEPSEEK_API_KEY": "k"}) as harness:
        # a built-in name pointed elsewhere: that server's own window, asked for
        assert harness.compactor.context_window("deepseek", "m") is None
        assert await harness.models["deepseek"].discover_context_window("m") == 4000  # type: ignore[attr-defined]
        assert harness.compactor.context_window("deepseek", "m") == 4000
        assert harness.compactor.context_window("deepseek", "deepseek-flash") is None
        # any name at DeepSeek's base URL: DeepSeek's catalog
        assert harness.compactor.context_window("mirror", "deepseek-flash") == 1_000_000


def test_prices_come_from_the_catalog_unless_the_models_table_sets_them(tmp_path: Path) -> None:
    facts = configured(tmp_path).model_facts("deepseek", "deepseek-flash")
    assert (facts.context_window, facts.max_output, facts.checked) == (
        1_000_000,
        384_000,
        "2026-12-04",
    )
    assert facts.prices is not None
    assert facts.prices_from == "catalog"
    assert (facts.prices.input, facts.prices.cached_input, facts.prices.output) == (0.3, 0.006, 1.2)
    config = configured(
        tmp_path,
        '[models."deepseek:deepseek-flash"]\nprices = { input = 0.15, cached_input = 0.003, '
        "output = 0.6 }\n\n"
        '[models."local:m"]\nprices = { input = 1, output = 2 }\n',
    )
    facts = config.model_facts("deepseek", "deepseek-flash")
    assert facts.prices is not None
    assert facts.prices.input == 0.15
    assert facts.prices_from == 'models."deepseek:deepseek-flash".prices'
    assert facts.context_window_from == "catalog"
    local_facts = config.model_facts("local", "m")
    assert local_facts.prices is not None
    assert local_facts.prices.cached_input is None
    assert local_facts.context_window is None


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('[models."no-route"]\nprices = { input = 1, output = 2 }\n', "models.no-route"),
        ('[models."a:b"]\nprices = { input = -1, output = 2 }\n', "models.a:b.prices.input"),
        ('[models."a:b"]\nprices = { input = 1 }\n', "models.a:b.prices.output"),
        ('[models."a:b"]\ncolor = 1\n', "models.a:b.color"),
    ],
)
def test_a_bad_models_table_is_refused_naming_the_key(tmp_path: Path, text: str, key: str) -> None:
    with pytest.raises(ConfigError) as refused:
        configured(tmp_path, text)
    assert key in str(refused.value)
    assert str(tmp_path / "config.toml") in str(refused.value)


# -- the dsh command ----------------------------------------------------------------------------


def _dsh(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(cwd),
        "DSH_HOME": str(home),
        "LANG": "C.UTF-8",
        "COLUMNS": "200",
    }
    return subprocess.run(
        [str(DSH), *args], cwd=cwd, env=env, capture_output=True, timeout=120, check=False
    )


def test_the_keyless_demo_prints_no_window_notice(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    done = _dsh(tmp_path / "home", tmp_path, "demo")
    assert done.returncode == 0, done.stderr
    assert b"DSH_SHELL=1" in done.stdout + done.stderr  # the demo ran its tool call
    assert b"context window" not in done.stderr, done.stderr


def test_config_dump_shows_each_known_models_window_output_and_prices(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "config.toml").write_text(
        '[models."deepseek:deepseek-v4-pro"]\nprices = { input = 1, output = 3 }\n'
    )
    done = _dsh(tmp_path / "home", tmp_path, "config", "--dump", "--json")
    assert done.returncode == 0, done.stderr
    models = json.loads(done.stdout)["models"]
    flash = models["deepseek:deepseek-v4-flash"]
    assert (flash["context_window"], flash["max_output"]) == (1_000_000, 384_000)
    assert "catalog of 2026-12-04" in flash["source"]
    pro = models["deepseek:deepseek-v4-pro"]
    assert pro["prices"].startswith("input 1, cached_input ?, output 3")
    assert 'prices: models."deepseek:deepseek-v4-pro".prices' in pro["source"]
    toml = _dsh(tmp_path / "home", tmp_path, "config", "--dump")
    assert b'[models."openai:gpt-6.2-sol"]' in toml.stdout
