"""What a real local server does to ``dsh run`` (issue 33 §7), in the default run: the same
scenarios ``nox -s realmodel`` runs against llama.cpp, here against conftest's scripted loopback
server so they run everywhere: a streamed answer with a bash call run and fed back, resume, a
context overflow recovered by compaction, a template that demands alternating roles, a server
that is down and comes back within the retry window, and a wrong key.

Every case runs the installed ``dsh`` console script in a real process (a fresh ``DSH_HOME``).
Every wait is on an event with a bound (a safety net, not a speed bar).
"""

from __future__ import annotations

import itertools
import json
import re
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # conftest's classes, for the annotations only
    from conftest import Dsh, LoopbackModel

TIMEOUT = 120.0
"""Seconds one wait may take: a safety net against a hang."""

OVERFLOW = {
    "error": {
        "code": 400,
        "message": "request (9120 tokens) exceeds the available context size (8192 tokens), "
        "try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 9120,
        "n_ctx": 8192,
    }
}
"""llama-server's refusal of a prompt longer than its context (``-c``)."""

ALTERNATE = {
    "error": {
        "code": 500,
        "message": "Conversation roles must alternate user/assistant/user/assistant/...",
        "type": "server_error",
    }
}
"""What llama-server answers when a Gemma-2 style template raises on the roles it was given."""


def _log_of(stderr: str) -> tuple[str, Path]:
    (session,) = re.findall(r"^session (\S+)$", stderr, re.MULTILINE)
    (log,) = re.findall(r"^log: (.+)$", stderr, re.MULTILINE)
    return session, Path(log)


def _events(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _roles(body: dict[str, Any]) -> list[str]:
    return [message["role"] for message in body["messages"]]


def test_a_bash_call_is_run_and_fed_back_and_the_session_resumes(
    dsh: Dsh, model_server: LoopbackModel
) -> None:
    dsh.configure(model_server)
    model_server.scripts = [
        model_server.bash_call("echo tool-output-$((6*7))", description="print 42"),
        model_server.text_answer("The tool said ", "42."),
        model_server.text_answer("Still here."),
    ]
    first = dsh("run", "run the tool")
    assert first.returncode == 0, first.stderr.decode()
    assert first.stdout.decode().endswith("The tool said 42.\n"), first.stdout.decode()
    fed_back = model_server.bodies[1]["messages"]
    (result,) = [m for m in fed_back if m["role"] == "tool"]
    assert result["tool_call_id"] == "call-1"
    assert "tool-output-42" in result["content"]
    session, log = _log_of(first.stderr.decode())

    second = dsh("run", "--resume", session, "and now?")
    assert second.returncode == 0, second.stderr.decode()
    assert second.stdout.decode() == "Still here.\n"
    resumed = model_server.bodies[2]["messages"]
    assert "tool-output-42" in json.dumps(resumed), "the resumed request lost the tool result"
    assert resumed[-1]["role"] == "user"
    assert "and now?" in json.dumps(resumed[-1])
    assert _log_of(second.stderr.decode())[1] == log


def test_an_overflow_is_recovered_by_compaction(dsh: Dsh, model_server: LoopbackModel) -> None:
    """The server refuses the second turn's request for its size; dsh classifies the refusal,
    learns the window the refusal states, compacts the session (one summary request) and sends
    the turn again, smaller."""
    dsh.configure(model_server, "context_window = 200000\n")
    early = "EARLY-DETAIL " * 400
    model_server.scripts = [
        model_server.text_answer("noted"),
        model_server.HttpError(400, OVERFLOW),
        model_server.text_answer("SUMMARY: the user shared early details."),
        model_server.text_answer("Answered after compaction."),
    ]
    first = dsh("run", early)
    assert first.returncode == 0, first.stderr.decode()
    session, log = _log_of(first.stderr.decode())

    second = dsh("run", "--resume", session, "what next?")
    stderr = second.stderr.decode()
    assert second.returncode == 0, stderr
    assert second.stdout.decode() == "Answered after compaction.\n", stderr
    assert model_server.answered == 4
    summary_request, retried = model_server.bodies[2], model_server.bodies[3]
    assert "EARLY-DETAIL" in json.dumps(summary_request["messages"])
    retried_text = json.dumps(retried["messages"])
    assert "SUMMARY: the user shared early details." in retried_text
    assert "EARLY-DETAIL EARLY-DETAIL" not in retried_text, "the retried request was not compacted"
    assert "what next?" in retried_text
    events = _events(log)
    types = [event.get("type") for event in events]
    assert "compaction/summary" in types, types
    # the configured window said 200,000; the server's refusal said 8,192, and that one wins
    # from then on (sizing the summary request too)
    windows = [e["data"].get("contextWindow") for e in events if e["type"] == "request/context"]
    assert windows[-1] == 8192, windows


def test_a_template_that_demands_alternating_roles_is_satisfied(
    dsh: Dsh, model_server: LoopbackModel
) -> None:
    """Like a Gemma-2 chat template: after the system message, roles must go user, assistant,
    user, ... (tool results count with the user's side). dsh's runtime context and prompt are
    one user message on the wire, on the first turn and on a resumed one."""

    def strict(body: dict[str, Any]) -> LoopbackModel.HttpError | None:
        roles = [r if r != "tool" else "user" for r in _roles(body) if r != "system"]
        if any(a == b for a, b in itertools.pairwise(roles)) or roles[:1] != ["user"]:
            return model_server.HttpError(500, ALTERNATE)
        return None

    dsh.configure(model_server)
    model_server.judge = strict
    model_server.scripts = [model_server.text_answer("one"), model_server.text_answer("two")]
    first = dsh("run", "hello")
    assert first.returncode == 0, first.stderr.decode()
    session, _ = _log_of(first.stderr.decode())
    second = dsh("run", "--resume", session, "again")
    assert second.returncode == 0, second.stderr.decode()
    assert second.stdout.decode() == "two\n"
    assert _roles(model_server.bodies[-1])[-3:] == ["user", "assistant", "user"]


def test_a_server_back_within_the_retry_window_answers(
    dsh: Dsh, start_model_server: Callable[[int], LoopbackModel]
) -> None:
    """Nothing listens on the port at first (connection refused: retried); once the log shows
    the first retry, a server starts on that port and the same turn gets its answer."""
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    port = holder.getsockname()[1]
    holder.close()  # the port is free: connections are refused until the server starts
    dsh.configure(f"http://127.0.0.1:{port}/v1")
    process = dsh.popen("run", "are you up?", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    logs = dsh.home
    deadline = time.monotonic() + TIMEOUT
    retried = False
    while not retried and time.monotonic() < deadline and process.poll() is None:
        for log in logs.rglob("*.jsonl") if logs.exists() else []:
            retried = retried or any(e.get("type") == "llm/retry" for e in _events(log))
        time.sleep(0.05)
    assert retried, "dsh never logged a retry"
    server = start_model_server(port)
    server.scripts = [server.text_answer("back up")]
    stdout, stderr = process.communicate(timeout=TIMEOUT)
    assert process.returncode == 0, stderr.decode()
    assert stdout.decode() == "back up\n"
    assert "retrying in" in stderr.decode()


def test_a_wrong_key_is_refused_naming_the_provider_and_its_variable(
    dsh: Dsh, model_server: LoopbackModel
) -> None:
    dsh.configure(model_server)
    model_server.api_key = "sk-the-right-one"
    done = dsh("run", "hello")
    stderr = done.stderr.decode()
    assert done.returncode != 0
    assert "Traceback" not in stderr
    assert "401" in stderr or "Invalid API Key" in stderr, stderr
    assert "LOCAL_LLM_KEY" in stderr, stderr
    assert model_server.answered == 0
    _, log = _log_of(stderr)
    assert "hello" in log.read_text(), "the prompt was lost"
    assert done.stdout.decode() == ""


def test_a_wrong_key_when_asking_which_model_is_served_names_the_variable(
    dsh: Dsh, model_server: LoopbackModel
) -> None:
    """``model = "local"`` names no model: dsh asks the server (GET /v1/models), which refuses
    the key; the error says where the key came from, not only that a model is missing."""
    dsh.configure(model_server)
    config = dsh.home / "config.toml"
    config.write_text(config.read_text().replace('model = "local:test-model"', 'model = "local"'))
    model_server.api_key = "sk-the-right-one"
    done = dsh("run", "hello")
    stderr = done.stderr.decode()
    assert done.returncode == 1, stderr
    assert "HTTP 401" in stderr, stderr
    assert "provider 'local' sends the key in $LOCAL_LLM_KEY" in stderr, stderr
    assert "sk-loopback-test" not in stderr
    model_server.api_key = None
    served = dsh("run", "hello")
    assert served.returncode == 0, served.stderr.decode()


def test_a_refused_key_sent_in_a_header_names_that_header_and_its_variable(
    dsh: Dsh, model_server: LoopbackModel
) -> None:
    model_server.api_key = "sk-the-right-one"
    dsh.home.mkdir(parents=True, exist_ok=True)
    (dsh.home / "config.toml").write_text(
        'model = "local:test-model"\n[sandbox]\nmode = "danger-full-access"\n'
        f'[providers.local]\nbase_url = "{model_server.base_url}"\n'
        'headers = { Authorization = { env = "GATEWAY_TOKEN" } }\n'
    )
    dsh.extra_env["GATEWAY_TOKEN"] = "Bearer sk-wrong"
    done = dsh("run", "hello")
    stderr = done.stderr.decode()
    assert done.returncode == 1, stderr
    assert "HTTP 401" in stderr
    assert "provider 'local' sends the Authorization header from $GATEWAY_TOKEN" in stderr
    assert "sk-wrong" not in stderr
