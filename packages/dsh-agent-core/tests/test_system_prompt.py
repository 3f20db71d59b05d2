"""The built-in system prompt and what replaces or extends it (issue 33 §1), and the
per-provider request settings ``extra_body``, ``headers``, ``timeout`` and ``tool_choice``
(issue 33 §3.9).

Every request goes to a real HTTP server on 127.0.0.1 started by the tests, through
``compose()`` or the ``dsh`` command; the logged request header must still rebuild what was
sent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from dsh_agent_core import (
    BUILTIN_SYSTEM_PROMPT,
    Config,
    ConfigError,
    ProviderModel,
    compose,
    load_config,
)
from dsh_agent_loop import request_from_log
from dsh_compaction import estimate_content
from dsh_llm import ModelRequest, TextBlock, UserMessage, UserSource

DSH = Path(sys.executable).parent / "dsh"


# -- a chat server that keeps what it was sent ---------------------------------------------------


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    chunk = {
        "id": "chatcmpl-system",
        "object": "chat.completion.chunk",
        "created": 1_767_000_000,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(chunk)}\n\n".encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ChatServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # window discovery: nothing is said
        self.send_error(404, "no such endpoint")

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/v1/chat/completions":
            self.send_error(404, "no such endpoint")
            return
        with self.server.lock:
            self.server.requests.append((dict(self.headers.items()), json.loads(body)))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event in (
            _chunk({"role": "assistant", "content": ""}),
            _chunk({"content": "done"}),
            _chunk({}, "stop"),
            b"data: [DONE]\n\n",
        ):
            self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class ChatServer(ThreadingHTTPServer):
    """``requests``: each chat request's headers and JSON body, in order."""

    daemon_threads = True
    requests: list[tuple[dict[str, str], dict[str, Any]]]
    lock: threading.Lock

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}/v1"

    def bodies(self) -> list[dict[str, Any]]:
        with self.lock:
            return [body for _headers, body in self.requests]

    def headers_sent(self) -> list[dict[str, str]]:
        with self.lock:
            return [{k.lower(): v for k, v in headers.items()} for headers, _ in self.requests]


@pytest.fixture
def server() -> Iterator[ChatServer]:
    running = ChatServer(("127.0.0.1", 0), _Handler)
    running.requests, running.lock = [], threading.Lock()
    thread = threading.Thread(target=running.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield running
    finally:
        running.shutdown()
        running.server_close()
        thread.join()


def configured(home: Path, server: ChatServer, top: str = "", provider: str = "") -> Config:
    text = f'{top}\n[providers.local]\nbase_url = "{server.base_url}"\n{provider}\n'
    (home / "config.toml").write_text(text)
    return load_config(env={"DSH_HOME": str(home), "PROVIDER_TOKEN": "s3cret-token"})


def system_of(body: dict[str, Any]) -> str | None:
    first = body["messages"][0]
    return first["content"] if first["role"] == "system" else None


# -- the built-in prompt and its replacements ----------------------------------------------------


def test_the_built_in_prompt_is_tight_and_covers_the_harness() -> None:
    tokens = estimate_content([{"type": "text", "text": BUILTIN_SYSTEM_PROMPT}])
    assert tokens < 800, tokens  # the module docstring and README state the figure
    for needed in (
        "read",
        "edit",
        "bash",
        "run_in_background",
        "job_output",
        "sandbox_permissions",
        "justification",
        "AGENTS.md",
        "skill",
        "DSH_",
        "head and tail",
    ):
        assert needed in BUILTIN_SYSTEM_PROMPT, needed


async def test_a_new_session_sends_the_built_in_prompt_and_logs_it(
    tmp_path: Path, server: ChatServer
) -> None:
    config = configured(tmp_path, server)
    async with compose(config, env=config.environment()) as harness:
        agent = await harness.create("hello", model="local:m", cwd=tmp_path)
        await agent.wait_idle()
        rebuilt = request_from_log(agent.session)
    (body,) = server.bodies()
    assert system_of(body) == BUILTIN_SYSTEM_PROMPT
    assert rebuilt.system == BUILTIN_SYSTEM_PROMPT  # the request rebuilds from the log


@pytest.mark.parametrize(
    ("top", "preset", "expected"),
    [
        ('system = "Only answer in haiku."', None, "Only answer in haiku."),
        ('system_file = "prompts/mine.md"', None, "From the file.\n"),
        (
            'append_system = "Always sign as Bob."',
            None,
            BUILTIN_SYSTEM_PROMPT.rstrip("\n") + "\n\nAlways sign as Bob.",
        ),
        (
            'system = "Mine."\nappend_system = "And more."',
            None,
            "Mine.\n\nAnd more.",
        ),
        (
            'system = "Mine."\n[presets.terse]\nsystem = "Be terse."',
            "terse",
            "Be terse.",
        ),
        ('[presets.tools]\ntools = ["read"]', "tools", BUILTIN_SYSTEM_PROMPT),
    ],
    ids=["system", "system_file", "append_system", "system+append", "preset", "preset-no-system"],
)
async def test_the_prompt_is_replaced_and_extended_as_configured(
    tmp_path: Path, server: ChatServer, top: str, preset: str | None, expected: str
) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "mine.md").write_text("From the file.\n")
    work = tmp_path / "work"
    work.mkdir()  # a relative system_file is the config folder's, not the cwd's
    config = configured(tmp_path, server, top=top)
    async with compose(config, env=config.environment()) as harness:
        agent = await harness.create("hello", model="local:m", cwd=work, preset=preset)
        await agent.wait_idle()
        rebuilt = request_from_log(agent.session)
    (body,) = server.bodies()
    assert system_of(body) == expected
    assert rebuilt.system == expected


@pytest.mark.parametrize("kind", ["missing", "fifo", "directory", "not-utf8"])
def test_a_bad_system_file_is_a_config_error_naming_it(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "prompt.md"
    if kind == "fifo":
        os.mkfifo(target)  # never opened for a writer: reading it must not block
    elif kind == "directory":
        target.mkdir()
    elif kind == "not-utf8":
        target.write_bytes(b"\xff\xfe bad")
    (tmp_path / "config.toml").write_text('system_file = "prompt.md"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(env={"DSH_HOME": str(tmp_path)})
    message = str(caught.value)
    assert "system_file" in message
    assert str(target) in message
    assert str(tmp_path / "config.toml") in message


def test_system_and_system_file_together_are_refused(tmp_path: Path) -> None:
    (tmp_path / "p.md").write_text("x")
    (tmp_path / "config.toml").write_text('system = "a"\nsystem_file = "p.md"\n')
    with pytest.raises(ConfigError, match=r"system_file.*set one of them"):
        load_config(env={"DSH_HOME": str(tmp_path)})


# -- through the dsh command ---------------------------------------------------------------------


def _dsh(home: Path, cwd: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[bytes]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(cwd),
        "DSH_HOME": str(home),
        "LANG": "C.UTF-8",
        "COLUMNS": "200",
        **extra,
    }
    return subprocess.run(
        [str(DSH), *args], cwd=cwd, env=env, capture_output=True, timeout=120, check=False
    )


def test_dsh_run_sends_the_built_in_prompt(tmp_path: Path, server: ChatServer) -> None:
    (tmp_path / "home").mkdir()
    configured(tmp_path / "home", server)
    done = _dsh(tmp_path / "home", tmp_path, "run", "--model", "local:m", "hello")
    assert done.returncode == 0, done.stderr
    (body,) = server.bodies()
    assert system_of(body) == BUILTIN_SYSTEM_PROMPT


@pytest.mark.parametrize(
    ("top", "source"),
    [
        ("", "built-in"),
        ('system = "Mine."', "system"),
        ('system_file = "p.md"', "system_file"),
    ],
)
def test_config_dump_shows_the_prompt_and_its_source(
    tmp_path: Path, server: ChatServer, top: str, source: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "p.md").write_text("From a file.")
    configured(home, server, top=top + '\nappend_system = "Extra."\n[presets.p]\nsystem = "P."')
    done = _dsh(home, tmp_path, "config", "--dump", "--json")
    assert done.returncode == 0, done.stderr
    dumped = json.loads(done.stdout)
    prompt = dumped["system_prompt"]
    assert prompt["source"] == source
    assert prompt["appended"] is True
    assert prompt["text"].endswith("\n\nExtra.")
    assert prompt["tokens"] > 0
    assert dumped["presets"]["p"]["system_source"] == "preset"
    if source == "system_file":
        assert dumped["system_file"] == str(home / "p.md")
    toml = _dsh(home, tmp_path, "config", "--dump")
    assert toml.returncode == 0, toml.stderr
    text = toml.stdout.decode()
    shown = text[text.index("# [system_prompt]\n") :].splitlines()
    assert f'# source = "{source}"' in shown  # worked out: a comment, never read back
    assert "system_prompt" not in tomllib.loads(text)


def test_dsh_config_dump_names_a_bad_system_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('system_file = "nowhere.md"\n')
    done = _dsh(home, tmp_path, "config", "--dump")
    assert done.returncode != 0
    assert b"system_file" in done.stderr
    assert str(home / "nowhere.md").encode() in done.stderr


# -- per-provider request settings ---------------------------------------------------------------


PROVIDER = """\
extra_body = { top_k = 20, chat_template_kwargs = { enable_thinking = false } }
headers = { X-Team = "blue", Authorization-Extra = { env = "PROVIDER_TOKEN" } }
timeout = 900
tool_choice = "required"
"""


async def test_a_providers_settings_go_with_every_request(
    tmp_path: Path, server: ChatServer
) -> None:
    config = configured(tmp_path, server, provider=PROVIDER)
    provider = config.provider("local")
    assert provider is not None
    assert provider.timeout == 900
    async with compose(config, env=config.environment()) as harness:
        agent = await harness.create("hello", model="local:m", cwd=tmp_path)
        await agent.wait_idle()
        model = harness.models["local"]
        assert isinstance(model, ProviderModel)
        # a request without tools (a compaction summary) carries no tool_choice
        no_tools = ModelRequest(
            provider="local",
            model="m",
            messages=[UserMessage(content=[TextBlock(text="summarise")], source=UserSource())],
        )
        async for _chunk in model.stream(no_tools):
            pass
    (with_tools, without) = server.bodies()
    (sent, sent_plain) = server.headers_sent()
    assert with_tools["tools"]
    assert with_tools["tool_choice"] == "required"
    assert "tool_choice" not in without
    for body in (with_tools, without):
        assert body["top_k"] == 20
        assert body["chat_template_kwargs"] == {"enable_thinking": False}
    for headers in (sent, sent_plain):
        assert headers["x-team"] == "blue"
        assert headers["authorization-extra"] == "s3cret-token"


def test_dsh_run_sends_a_tool_choice_table(tmp_path: Path, server: ChatServer) -> None:
    (tmp_path / "home").mkdir()
    choice = 'tool_choice = { type = "function", function = { name = "bash" } }\n'
    configured(tmp_path / "home", server, provider=choice)
    done = _dsh(tmp_path / "home", tmp_path, "run", "--model", "local:m", "hello")
    assert done.returncode == 0, done.stderr
    (body,) = server.bodies()
    assert body["tool_choice"] == {"type": "function", "function": {"name": "bash"}}


def test_a_missing_header_variable_fails_the_request_naming_it(
    tmp_path: Path, server: ChatServer
) -> None:
    (tmp_path / "home").mkdir()
    configured(tmp_path / "home", server, provider='headers = { X-Key = { env = "NOT_SET_HERE" } }')
    done = _dsh(tmp_path / "home", tmp_path, "run", "--model", "local:m", "hello")
    assert done.returncode != 0
    assert b"NOT_SET_HERE" in done.stdout + done.stderr
    assert server.bodies() == []  # nothing was sent without it


def test_header_secrets_are_never_in_the_dump(tmp_path: Path, server: ChatServer) -> None:
    home = tmp_path / "home"
    home.mkdir()
    configured(home, server, provider='headers = { X-Literal = "abc123", X-Env = { env = "TOK" } }')
    done = _dsh(home, tmp_path, "config", "--dump", "--json", TOK="from-the-env")
    assert done.returncode == 0, done.stderr
    assert b"abc123" not in done.stdout
    assert b"from-the-env" not in done.stdout
    headers = json.loads(done.stdout)["providers"]["local"]["headers"]
    assert headers == {"X-Literal": "***", "X-Env": {"env": "TOK"}}


@pytest.mark.parametrize(
    ("provider", "key", "says"),
    [
        ("timeout = 0", "providers.local.timeout", "greater than 0"),
        ("timeout = -5", "providers.local.timeout", "greater than 0"),
        ('tool_choice = "always"', "providers.local.tool_choice", ""),
        ('tool_choice = { function = { name = "bash" } }', "providers.local.tool_choice", "type"),
        ("extra_body = { messages = [] }", "providers.local.extra_body", "messages"),
        ('extra_body = { tool_choice = "auto" }', "providers.local.extra_body", "tool_choice"),
        ("extra_body = { when = 1979-05-27 }", "providers.local.extra_body", "when"),
        ('headers = { "bad header" = "x" }', "providers.local.headers", "bad header"),
        ('headers = { X-A = "two\\nlines" }', "providers.local.headers", "X-A"),
        ('headers = { X-A = { env = "1BAD" } }', "providers.local.headers", ""),
        ("headers = { X-A = 5 }", "providers.local.headers", ""),
        ("extra_body = 5", "providers.local.extra_body", ""),
    ],
)
def test_bad_provider_settings_are_refused_naming_the_key(
    tmp_path: Path, provider: str, key: str, says: str
) -> None:
    (tmp_path / "config.toml").write_text(
        f'[providers.local]\nbase_url = "http://127.0.0.1:9/v1"\n{provider}\n'
    )
    with pytest.raises(ConfigError) as caught:
        load_config(env={"DSH_HOME": str(tmp_path)})
    assert key in caught.value.key
    assert says in caught.value.reason


# -- the TOML dump reads back (issue 33 §3.6) ----------------------------------------------------


ODD_KEYS = """\
system = "Tabs\\tand \\"quotes\\" and \\u00e9\\n"
[providers.local]
base_url = "http://127.0.0.1:9/v1"
context_windows = { "llama3.1:8b" = 8192, "qwen2.5-coder" = 131072, "a b" = 5, "" = 7, "é" = 9 }
headers = { "X-Dotted.Name" = "v" }
[providers.local.extra_body]
"options.num_ctx" = 4096
nested = { "k:v" = [1, 2], list = [{ a = 1 }] }
mixed = [1, { "a.b" = 1 }]
deep = [[{ b = 2 }]]
[providers."my.server:8080"]
base_url = "http://127.0.0.1:9/v1"
[models."local:qwen2.5-coder"]
prices = { input = 1.5, output = 2 }
[models."local:a b"]
prices = { input = 0, output = 0 }
[mcp.servers."git.hub:tools"]
command = "true"
env = { "WEIRD.VAR" = { env = "HOME" } }
[presets."two words"]
system = "P."
tools = ["read", "grep"]
[hooks]
dialect = "claude-code"
[[hooks.PreToolUse]]
matcher = "Bash|Write"
hooks = [{ type = "command", command = "echo 'hi'" }]
"""


def _without_none(value: Any) -> Any:
    """``value`` as TOML can hold it: ``None`` has no TOML form (the dump comments it out)."""
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(item) for item in value if item is not None]
    return value


def test_config_dump_is_toml_that_loads_back_to_the_same_configuration(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(ODD_KEYS)
    as_toml = _dsh(home, tmp_path, "config", "--dump")
    assert as_toml.returncode == 0, as_toml.stderr
    read_back = tomllib.loads(as_toml.stdout.decode())
    env = {"DSH_HOME": str(home)}
    config = load_config(env=env)
    assert read_back == _without_none(config.as_written())
    windows = read_back["providers"]["local"]["context_windows"]
    assert windows == {"llama3.1:8b": 8192, "qwen2.5-coder": 131072, "a b": 5, "": 7, "é": 9}
    assert "local:qwen2.5-coder" in read_back["models"]
    assert "git.hub:tools" in read_back["mcp"]["servers"]
    assert "my.server:8080" in read_back["providers"]
    (tmp_path / "dump.toml").write_bytes(as_toml.stdout)
    reloaded = load_config(path=tmp_path / "dump.toml", env=env)
    # the same configuration, but for the literal header value, which is never written
    assert reloaded.providers["local"].headers == {}
    assert config.providers["local"].headers == {"X-Dotted.Name": "v"}
    same = reloaded.model_copy(update={"source": config.source})
    local = config.providers["local"].model_copy(update={"headers": {}})
    assert same == config.model_copy(update={"providers": {**config.providers, "local": local}})
    done = _dsh(tmp_path / "home", tmp_path, "demo")
    assert done.returncode == 0, done.stderr
    assert b"DSH_SHELL=1" in done.stdout + done.stderr  # the demo ran its tool call
    assert b"context window" not in done.stderr, done.stderr
