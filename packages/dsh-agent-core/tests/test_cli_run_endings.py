"""How ``dsh run`` ends and what it shows on the way (issue 33, 3.4, 3.5, 3.10 and 4): a reader
that closes the pipe early, Ctrl-C and SIGTERM mid-stream, a stream cut off and retried, and the
usage line after each turn (with ``sessions show`` and ``sessions list --json`` totals).

Every case runs the installed ``dsh`` console script in a real process (a fresh ``DSH_HOME``)
against a tiny OpenAI-compatible server on 127.0.0.1 started by the test. Every wait is on an
event with a bound (a safety net, not a speed bar).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

DSH = Path(sys.executable).parent / "dsh"
TIMEOUT = 120.0
"""Seconds one dsh command or one wait may take: a safety net against a hang."""

CUT = "cut"
"""In a script: drop the connection here (the chunked body never ends: a transport failure)."""
HANG = "hang"
"""In a script: say so (``server.streaming``) and send nothing more until released."""
GATE = "gate"
"""In a script: wait for ``server.gate`` (the test closed its end of the pipe) first."""


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    chunk = {
        "id": "chatcmpl-endings",
        "object": "chat.completion.chunk",
        "created": 1_767_000_000,
        "model": "test-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(chunk)}\n\n".encode()


def _usage(usage: dict[str, Any]) -> bytes:
    chunk = {"id": "chatcmpl-endings", "object": "chat.completion.chunk", "choices": []}
    return f"data: {json.dumps(chunk | {'usage': usage})}\n\n".encode()


def text_answer(*parts: str, usage: dict[str, Any] | None = None) -> list[Any]:
    """A text answer in ``parts`` (one delta each), ending the turn."""
    events: list[Any] = [_chunk({"role": "assistant", "content": ""})]
    events += [_chunk({"content": part}) for part in parts]
    events.append(_chunk({}, "stop"))
    if usage is not None:
        events.append(_usage(usage))
    return [*events, b"data: [DONE]\n\n"]


def bash_call(command: str) -> list[Any]:
    call = {
        "index": 0,
        "id": "call-1",
        "type": "function",
        "function": {"name": "bash", "arguments": json.dumps({"command": command})},
    }
    return [
        _chunk({"role": "assistant", "content": "running it"}),
        _chunk({"tool_calls": [call]}),
        _chunk({}, "tool_calls"),
        b"data: [DONE]\n\n",
    ]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/v1/chat/completions":
            self.send_error(404, "no such endpoint")
            return
        with self.server.lock:
            scripts = self.server.scripts
            script = scripts[min(self.server.answered, len(scripts) - 1)]
            self.server.answered += 1
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event in script:
            if event == GATE:
                assert self.server.gate.wait(TIMEOUT)
                continue
            if event == HANG:
                self.wfile.flush()
                self.server.streaming.set()
                self.server.release.wait(TIMEOUT)
                self.close_connection = True
                return
            if event == CUT:
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    scripts: list[list[Any]]
    answered: int
    lock: threading.Lock
    gate: threading.Event
    streaming: threading.Event
    release: threading.Event


@pytest.fixture
def server() -> Iterator[_Server]:
    """The model; set ``scripts`` (the n-th request gets the n-th, then the last again)."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.scripts = [text_answer("nothing scripted")]
    server.answered = 0
    server.lock = threading.Lock()
    server.gate, server.streaming, server.release = (threading.Event() for _ in range(3))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server
    finally:
        server.gate.set()
        server.release.set()
        server.shutdown()
        server.server_close()
        thread.join()


@dataclass
class Dsh:
    home: Path
    cwd: Path

    def env(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.cwd.parent),
            "DSH_HOME": str(self.home),
            "LANG": "C.UTF-8",
            "NO_COLOR": "1",
            "TERM": "dumb",
            "COLUMNS": "200",
            "LOCAL_LLM_KEY": "sk-endings-test",
        }

    def popen(self, *args: str, **options: Any) -> subprocess.Popen[bytes]:
        return subprocess.Popen([str(DSH), *args], cwd=self.cwd, env=self.env(), **options)

    def __call__(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [str(DSH), *args],
            cwd=self.cwd,
            env=self.env(),
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
        )

    def configure(self, server: _Server, extra: str = "") -> None:
        host, port = server.server_address[:2]
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "config.toml").write_text(
            'model = "local:test-model"\n'
            '[sandbox]\nmode = "danger-full-access"\n'
            f'[providers.local]\nbase_url = "http://{host!s}:{port}/v1"\n'
            'api_key_env = "LOCAL_LLM_KEY"\n' + extra
        )


@pytest.fixture
def dsh(tmp_path: Path) -> Dsh:
    assert DSH.exists(), f"the dsh console script is not installed next to {sys.executable}"
    cwd = tmp_path / "project"
    cwd.mkdir()
    return Dsh(home=tmp_path / "dsh-home", cwd=cwd)


def _ending(stderr: str) -> tuple[str, Path]:
    """The session id and log path the run printed, and that it said how to resume."""
    (session,) = re.findall(r"^session (\S+)$", stderr, re.MULTILINE)
    (log,) = re.findall(r"^log: (.+)$", stderr, re.MULTILINE)
    assert f"resume: dsh run --resume {session} PROMPT" in stderr, stderr
    return session, Path(log)


def _events(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _turn_ends(log: Path) -> list[dict[str, Any]]:
    return [e for e in _events(log) if e.get("type") == "turn/end"]


# -- 3.5: a reader that closes the pipe early ----------------------------------------------------


def test_a_closed_stdout_never_stops_the_turn_or_its_log(dsh: Dsh, server: _Server) -> None:
    """``dsh run … | head -c 40``: the reader has its 40 bytes and goes; the answer written
    after that is discarded, the turn completes and logs ``turn/end``, dsh exits 0 quietly."""
    dsh.configure(server)
    long_answer = "word " * 4000
    server.scripts = [bash_call("echo from-the-tool"), [GATE, *text_answer(long_answer)]]
    process = dsh.popen("run", "go", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None
    assert process.stderr is not None
    head = process.stdout.read(40)  # the first step's text and tool call
    process.stdout.close()  # as `head -c 40` exits
    server.gate.set()  # now the final answer is written into the closed pipe
    stderr = process.stderr.read().decode()
    process.stderr.close()
    assert process.wait(TIMEOUT) == 0, stderr
    assert head.startswith(b"running it"), head
    assert "Broken pipe" not in stderr
    assert "Traceback" not in stderr
    assert "error" not in stderr
    _, log = _ending(stderr)
    (end,) = _turn_ends(log)
    assert end["data"]["reason"]["kind"] == "completed"


def test_sessions_list_into_a_closed_pipe_is_quiet(dsh: Dsh, server: _Server) -> None:
    """``dsh sessions list | head -1`` (and ``--json``, ``show``): no ``Broken pipe`` error."""
    dsh.configure(server)
    server.scripts = [text_answer("hello " * 2000)]
    for _ in range(3):
        assert dsh("run", "hi").returncode == 0
    (session,) = {_ending(dsh("run", "hi").stderr.decode())[0]}
    for args in (
        ["sessions", "list"],
        ["sessions", "list", "--json"],
        ["sessions", "show", session],
        ["sessions", "show", "--raw", session],
    ):
        pipeline = subprocess.run(
            ["bash", "-o", "pipefail", "-c", f'"{DSH}" "$@" | head -c 1 >/dev/null', "-", *args],
            cwd=dsh.cwd,
            env=dsh.env(),
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
        )
        assert pipeline.returncode == 0, (args, pipeline.stderr)
        assert pipeline.stderr == b"", (args, pipeline.stderr)


# -- 3.10: Ctrl-C and SIGTERM print how the session ends -----------------------------------------


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_mid_stream_still_prints_the_session_and_its_log(
    dsh: Dsh, server: _Server, signum: int, status: int
) -> None:
    dsh.configure(server)
    server.scripts = [[_chunk({"role": "assistant", "content": "partial answer"}), HANG]]
    process = dsh.popen("run", "go", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert server.streaming.wait(TIMEOUT), "the model was never asked"
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(TIMEOUT)
    text = stderr.decode()
    assert process.returncode == status, text
    assert "Traceback" not in text
    _, log = _ending(text)
    (end,) = _turn_ends(log)
    assert end["data"]["reason"]["kind"] == "aborted"


# -- 3.4: a stream cut off mid-answer and retried ------------------------------------------------


def test_a_cut_off_attempt_never_reaches_a_pipe(dsh: Dsh, server: _Server) -> None:
    """Into a pipe, stdout holds the retried answer alone; stderr says an attempt was dropped."""
    dsh.configure(server)
    cut = [_chunk({"role": "assistant", "content": ""}), _chunk({"content": "ABANDONED half"}), CUT]
    server.scripts = [cut, text_answer("The whole ", "answer.")]
    done = dsh("run", "go")
    stdout, stderr = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, stderr
    assert server.answered == 2
    assert stdout == "The whole answer.\n", stdout
    assert "ABANDONED" not in stdout
    assert "an answer cut off after 14 characters was dropped; retrying" in stderr, stderr
    assert "retrying in" in stderr


# -- 4: usage shown ------------------------------------------------------------------------------

USAGE = {
    "prompt_tokens": 1200,
    "completion_tokens": 30,
    "prompt_tokens_details": {"cached_tokens": 1000},
    "completion_tokens_details": {"reasoning_tokens": 10},
}
PRICED = (
    "context_window = 8192\n"
    '[models."local:test-model"]\nprices = { input = 1.0, cached_input = 0.1, output = 2.0 }\n'
)


def test_each_turn_prints_its_usage_and_cost(dsh: Dsh, server: _Server) -> None:
    """200 fresh at $1/M + 1000 cached at $0.1/M + 30 out at $2/M = $0.00036."""
    dsh.configure(server, PRICED)
    server.scripts = [text_answer("Hi.", usage=USAGE)]
    done = dsh("run", "go")
    stderr = done.stderr.decode()
    assert done.returncode == 0, stderr
    line = (
        "tokens in 1,200 (cached 1,000), out 30 (reasoning 10)"
        " · context 1,230 of 8,192 (15%) · cost $0.0004"
    )
    assert line in stderr.splitlines(), stderr
    session, _ = _ending(stderr)

    show = dsh("sessions", "show", session)
    assert show.returncode == 0, show.stderr
    last = show.stdout.decode().rstrip("\n").splitlines()[-1]
    assert last == (
        "totals: tokens in 1,200 (cached 1,000), out 30 (reasoning 10) · cost $0.0004"
    ), last

    listed = dsh("sessions", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    (row,) = json.loads(listed.stdout)
    assert row["totals"] == {
        "calls": 1,
        "unreported": 0,
        "input_tokens": 200,
        "cache_read_tokens": 1000,
        "cache_write_tokens": 0,
        "output_tokens": 30,
        "reasoning_tokens": 10,
        "cost_usd": 0.00036,
    }


def test_an_unpriced_model_shows_tokens_without_a_cost(dsh: Dsh, server: _Server) -> None:
    dsh.configure(server, PRICED)
    server.scripts = [text_answer("Hi.", usage=USAGE)]
    done = dsh("run", "--model", "local:other-model", "go")
    stderr = done.stderr.decode()
    assert done.returncode == 0, stderr
    (line,) = [x for x in stderr.splitlines() if x.startswith("tokens in ")]
    assert line.startswith("tokens in 1,200 (cached 1,000), out 30 (reasoning 10)"), line
    assert "cost" not in line
    listed = json.loads(dsh("sessions", "list", "--json").stdout)
    assert listed[0]["totals"]["cost_usd"] is None
