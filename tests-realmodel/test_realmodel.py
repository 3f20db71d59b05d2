"""``dsh run`` end to end against real OpenAI-compatible servers (issue 33 §7): llama.cpp's
``llama-server`` and ``llama-cpp-python[server]`` serving SmolLM2-135M-Instruct on the CPU.

Run with ``nox -s realmodel`` (not part of the default run: it builds llama.cpp once, about 15
minutes on 2 cores, then reuses the build). A 135M model answers badly but really: these tests
assert what dsh does with what a real server sends (streams, tool calls, refusals, usage, a
dead server), never what the model says.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # conftest's classes, for the annotations only
    from conftest import Dsh, Server

WAIT = 600.0
"""Seconds one wait may take: a safety net against a hang, never a speed bar."""


def _ending(stderr: str) -> tuple[str, Path]:
    (session,) = re.findall(r"^session (\S+)$", stderr, re.MULTILINE)
    (log,) = re.findall(r"^log: (.+)$", stderr, re.MULTILINE)
    return session, Path(log)


def _events(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _of(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e["data"] for e in events if e["type"] == kind]


def _config(server: Server, *lines: str, provider: tuple[str, ...] = ()) -> str:
    return "\n".join(
        ['model = "local"', *lines, "[providers.local]", f'base_url = "{server.base_url}"',
         *provider, ""]
    )  # fmt: skip


def _text(message: dict[str, Any]) -> str:
    return "".join(b.get("text", "") for b in message["content"] if b.get("type") == "text")


def test_a_streamed_answer_its_usage_and_the_servers_window(
    dsh: Dsh, llama_server: Callable[..., Server]
) -> None:
    server = llama_server(ctx=4096)
    dsh.configure(_config(server, provider=("extra_body = { temperature = 0, max_tokens = 40 }",)))
    done = dsh("run", "Say hello.")
    assert done.returncode == 0, done.stderr
    _, log = _ending(done.stderr)
    events = _events(log)
    deltas = [c for c in _of(events, "assistant/chunk") if c["chunk"]["type"] == "text-delta"]
    assert len(deltas) > 1, "the answer did not arrive as a stream"
    (message,) = _of(events, "assistant/message")
    assert _text(message).strip()
    assert done.stdout.strip() == _text(message).strip()
    assert message["usage"]["inputTokens"] > 0
    # the window came from the server (/props n_ctx): no notice, and it shows in the usage line
    assert "reports no context window" not in done.stderr
    assert "of 4,096" in done.stderr, done.stderr
    assert _of(events, "request/context")[-1]["contextWindow"] == 4096


def test_a_bash_tool_call_is_run_and_fed_back(
    dsh: Dsh, python_server: Callable[..., Server]
) -> None:
    """llama-cpp-python's chatml-function-calling format with tool_choice naming bash (the
    per-provider setting): the model's call is grammar-constrained to bash's schema. The call
    runs (confined), its result goes back in the next request, and the step limit ends it."""
    server = python_server()
    dsh.configure(_config(
        server, "max_steps_per_turn = 2",
        provider=('tool_choice = { type = "function", function = { name = "bash" } }',
                  "extra_body = { temperature = 0 }", "context_window = 4096"),
    ))  # fmt: skip
    done = dsh("run", "Run the command ls to list the files here.")
    _, log = _ending(done.stderr)
    events = _events(log)
    calls = [
        block
        for message in _of(events, "assistant/message")
        for block in message["content"]
        if block["type"] == "tool-call"
    ]
    assert calls, f"no tool call: {done.stderr}"
    assert calls[0]["name"] == "bash"
    arguments = calls[0]["arguments"]
    parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
    assert isinstance(parsed, dict), arguments
    results = _of(events, "tool/result")
    assert results[0]["callId"] == calls[0]["id"]
    steps = _of(events, "step/start")
    assert len(steps) == 2, "the result was never sent back"
    (end,) = _of(events, "turn/end")
    assert end["reason"]["error"]["code"] == "MAX_STEPS"
    assert "⏺ bash" in done.stderr  # into a pipe, stdout holds the final answer alone
    # this server streams no usage: its answers have none in the log, and stderr says so
    assert all("usage" not in m for m in _of(events, "assistant/message"))
    assert "tokens: not reported by the server (2 model calls)" in done.stderr


def test_resume_continues_the_same_log(dsh: Dsh, llama_server: Callable[..., Server]) -> None:
    server = llama_server(ctx=4096)
    dsh.configure(_config(server, provider=("extra_body = { temperature = 0, max_tokens = 30 }",)))
    first = dsh("run", "My name is Ada. Say hi.")
    assert first.returncode == 0, first.stderr
    session, log = _ending(first.stderr)
    second = dsh("run", "--resume", session, "What is my name?")
    assert second.returncode == 0, second.stderr
    assert _ending(second.stderr) == (session, log)
    events = _events(log)
    assert [e["turn"] for e in _of(events, "turn/end")] == [1, 2]
    first_usage, second_usage = (m["usage"] for m in _of(events, "assistant/message"))
    # the second request carried the first turn: the server counted it
    assert second_usage["inputTokens"] + second_usage.get("cacheReadTokens", 0) > (
        first_usage["inputTokens"] + first_usage.get("cacheReadTokens", 0)
    )


def _orchard(trees: range) -> str:
    return "Remember these facts about the orchard: " + " ".join(
        f"tree {i} gives {i * 3} apples." for i in trees
    )


ORCHARD_1, ORCHARD_2 = _orchard(range(90)), _orchard(range(90, 125))
"""About 1,000 and 400 tokens: both do not fit a 2,048-token window beside dsh's prompt, and
the first is long enough that a small model's summary of it is shorter."""


def test_an_overflow_is_classified_and_recovered_by_compaction(
    dsh: Dsh, llama_server: Callable[..., Server]
) -> None:
    """A window configured far larger than the server's -c: the second turn overflows for
    real, dsh takes the window the refusal states, compacts, and the turn goes on."""
    # a repeat penalty keeps the 135M model from looping until its summary is cut off (a
    # summary cut at max_tokens is refused, as upstream refuses it)
    server = llama_server("--repeat-penalty", "1.5", ctx=2048)
    limits = ("context_window = 100000", "extra_body = { max_tokens = 60 }")
    dsh.configure(_config(server, provider=limits))
    first = dsh("run", ORCHARD_1)
    assert first.returncode == 0, first.stderr
    session, log = _ending(first.stderr)
    second = dsh("run", "--resume", session, ORCHARD_2)
    assert second.returncode == 0, second.stderr
    events = _events(log)
    overflows = [
        c for c in _of(events, "assistant/chunk")
        if c["chunk"]["type"] == "finish"
        and c["chunk"]["reason"].get("error", {}).get("code") == "CONTEXT_WINDOW_EXCEEDED"
    ]  # fmt: skip
    assert overflows, "the server never refused: the test did not overflow"
    assert "exceeds the available context size" in overflows[0]["chunk"]["reason"]["error"][
        "message"]  # fmt: skip
    assert _of(events, "compaction/summary"), "no compaction"
    assert _of(events, "request/context")[-1]["contextWindow"] == 2048
    (_, end) = _of(events, "turn/end")
    assert end["reason"]["kind"] in ("completed", "max-tokens"), end


def test_a_template_that_demands_alternating_roles(
    dsh: Dsh, llama_server: Callable[..., Server], gemma2_template: Path
) -> None:
    """Gemma-2's template raises unless roles alternate user/assistant (and has no system
    role: llama.cpp folds the system prompt into the first user message). dsh's runtime
    context and prompt go as one user message, on a new turn and a resumed one."""
    server = llama_server("--chat-template-file", str(gemma2_template), ctx=4096)
    dsh.configure(_config(server, provider=("extra_body = { temperature = 0, max_tokens = 20 }",)))
    first = dsh("run", "Say one word.")
    assert first.returncode == 0, first.stderr
    assert "must alternate" not in first.stderr
    session, log = _ending(first.stderr)
    second = dsh("run", "--resume", session, "Another word.")
    assert second.returncode == 0, second.stderr
    assert "must alternate" not in second.stderr
    ends = [e["reason"]["kind"] for e in _of(_events(log), "turn/end")]
    assert len(ends) == 2
    assert set(ends) <= {"completed", "max-tokens"}, ends


def test_a_server_killed_mid_stream_and_one_restarted_within_the_retry_window(
    dsh: Dsh, llama_server: Callable[..., Server]
) -> None:
    """SIGKILL the server while it streams: the attempt is a transport failure and is retried;
    a server started again on the same port within the retry window answers the retry."""
    server = llama_server(ctx=4096)
    dsh.configure(_config(server, provider=("extra_body = { temperature = 0, max_tokens = 400 }",)))
    process = dsh.popen("run", "Write a long story about a robot.", stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE)  # fmt: skip
    log = None
    deadline = time.monotonic() + WAIT
    while log is None and time.monotonic() < deadline:  # wait for streamed text in the log
        for candidate in dsh.home.rglob("session.jsonl"):
            chunks = _of(_events(candidate), "assistant/chunk")
            if sum(c["chunk"]["type"] == "text-delta" for c in chunks) >= 3:
                log = candidate
        time.sleep(0.05)
    assert log is not None, "no streamed text before the deadline"
    server.kill()
    deadline = time.monotonic() + WAIT
    while not _of(_events(log), "llm/retry") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _of(_events(log), "llm/retry"), "the cut stream was not retried"
    restarted = llama_server(ctx=4096, port=server.port)
    assert restarted.port == server.port
    stdout, stderr = process.communicate(timeout=WAIT)
    text = stderr.decode()
    assert process.returncode == 0, text
    assert "was dropped; retrying" in text or "retrying in" in text, text
    events = _events(log)
    (message,) = _of(events, "assistant/message")
    assert stdout.decode().strip() == _text(message).strip()


def test_a_wrong_key_is_refused_naming_where_the_key_came_from(
    dsh: Dsh, llama_server: Callable[..., Server]
) -> None:
    server = llama_server("--api-key", "sk-the-right-key", ctx=2048)
    dsh.configure(_config(server, provider=('api_key_env = "LOCAL_KEY"',)))
    dsh.env_extra["LOCAL_KEY"] = "sk-a-wrong-key"
    done = dsh("run", "hello")
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert "HTTP 401" in done.stderr, done.stderr
    assert "$LOCAL_KEY" in done.stderr, done.stderr
    assert "sk-a-wrong-key" not in done.stderr
    # `model = "local"` names no model: dsh asked the server which it serves, was refused, and
    # said so before any session existed


def test_a_wrong_key_mid_session_is_refused_and_the_prompt_kept(
    dsh: Dsh, llama_server: Callable[..., Server]
) -> None:
    server = llama_server("--api-key", "sk-the-right-key", ctx=2048)
    asked = urllib.request.Request(
        f"{server.base_url}/models", headers={"Authorization": "Bearer sk-the-right-key"}
    )
    with urllib.request.urlopen(asked, timeout=60) as answer:
        model = json.load(answer)["data"][0]["id"]
    dsh.configure(_config(server, provider=('api_key_env = "LOCAL_KEY"',)).replace(
        'model = "local"', f'model = "local:{model}"'))  # fmt: skip
    dsh.env_extra["LOCAL_KEY"] = "sk-a-wrong-key"
    done = dsh("run", "hello there")
    assert done.returncode == 1, done.stderr
    assert "HTTP 401" in done.stderr, done.stderr
    assert "provider 'local' sends the key in $LOCAL_KEY" in done.stderr, done.stderr
    _, log = _ending(done.stderr)
    assert "hello there" in log.read_text()


def test_an_answer_into_head_ends_quietly(dsh: Dsh, llama_server: Callable[..., Server]) -> None:
    server = llama_server(ctx=4096)
    dsh.configure(_config(server, provider=("extra_body = { temperature = 0, max_tokens = 200 }",)))
    dsh_path = Path(sys.executable).parent / "dsh"
    pipeline = subprocess.run(
        ["bash", "-o", "pipefail", "-c", f'"{dsh_path}" run "Count from 1 to 50." | head -c 5'],
        cwd=dsh.cwd, env=dsh.env(), capture_output=True, text=True, timeout=WAIT, check=False,
    )  # fmt: skip
    assert pipeline.returncode == 0, pipeline.stderr
    assert len(pipeline.stdout) <= 5
    assert "Broken pipe" not in pipeline.stderr
    assert "Traceback" not in pipeline.stderr
    _, log = _ending(pipeline.stderr)
    assert _of(_events(log), "turn/end")[-1]["reason"]["kind"] in ("completed", "max-tokens")
