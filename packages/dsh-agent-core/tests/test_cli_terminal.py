"""What reaches the terminal from a model, a tool, a hook or a log shows its control characters
and never lets the terminal interpret them (issue 32, 1.6).

Every case runs the installed ``dsh`` console script in a real process (a fresh ``DSH_HOME``);
the model is a tiny OpenAI-compatible server on 127.0.0.1 started by the test. Each surface
gets every class of control: C0 (an OSC title sequence, a screen clear, bell, backspace,
vertical tab, form feed, carriage return, NUL where the channel can carry one), DEL, C1 (NEL,
CSI as one code point) and the bidirectional overrides.
"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
import threading
import tomllib
import tty
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

DSH = Path(sys.executable).parent / "dsh"
TIMEOUT = 120.0
"""Seconds one dsh command may take: a safety net against a hang, not a speed bar."""

TITLE_SEQUENCE = "\x1b]0;pwned\x1b\\"
"""OSC 0: sets the terminal's title."""
CONTROLS = {
    "\x07": r"\x07",
    "\x08": r"\x08",
    "\x0b": r"\x0b",
    "\x0c": r"\x0c",
    "\r": r"\r",
    "\x1b": r"\x1b",
    "\x7f": r"\x7f",
    "\x85": r"\x85",
    "\x9b": r"\x9b",
    "\u202e": r"\u202e",
    "\u2066": r"\u2066",
}
"""Each control class (but NUL, which argv cannot carry) and the form it must be shown in."""
PAYLOAD = f"<{TITLE_SEQUENCE}\x1b[2J" + "".join(f"{c}|" for c in CONTROLS) + ">"
"""Every control, each followed by ``|`` (its visible form is then ``<escape>|``)."""
SHOWN = TITLE_SEQUENCE.replace("\x1b", r"\x1b")
"""The title sequence as it must appear: ``\\x1b]0;pwned\\x1b\\``."""
RAW = frozenset([*CONTROLS, "\x00", "\x1b", "\x9d", "\x90"])
SECRET = "sk-terminal-test-not-a-real-key"


def assert_shown(output: bytes, *, every: bool = True) -> str:
    """``output`` holds no control a terminal would interpret (newline and tab aside) and, with
    ``every``, shows each class: the title sequence and every ``<escape>|``."""
    text = output.decode("utf-8")
    raw = sorted({hex(ord(c)) for c in text if c in RAW or (ord(c) < 0x20 and c not in "\n\t")})
    assert not raw, (raw, text)
    if every:
        assert SHOWN in text, text
        missing = [shown for shown in CONTROLS.values() if f"{shown}|" not in text]
        assert not missing, (missing, text)
    return text


# -- the model: an OpenAI-compatible server on loopback ------------------------------------------


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    chunk = {
        "id": "chatcmpl-terminal",
        "object": "chat.completion.chunk",
        "created": 1_767_000_000,
        "model": "test-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(chunk)}\n\n".encode()


def tool_call_answer(
    arguments: dict[str, Any], *, text: str = "", reasoning: str = ""
) -> list[bytes]:
    """An answer that may think and say something, then calls ``bash`` with ``arguments``."""
    call = {
        "index": 0,
        "id": "call-1",
        "type": "function",
        "function": {"name": "bash", "arguments": json.dumps(arguments)},
    }
    deltas = [{"role": "assistant", "content": ""}]
    if reasoning:
        deltas.append({"reasoning_content": reasoning})
    if text:
        deltas.append({"content": text})
    events = [_chunk(d) for d in deltas]
    return [*events, _chunk({"tool_calls": [call]}), _chunk({}, "tool_calls"), b"data: [DONE]\n\n"]


def text_answer(text: str) -> list[bytes]:
    """A plain text answer, ending the turn."""
    return [
        _chunk({"role": "assistant", "content": ""}),
        _chunk({"content": text}),
        _chunk({}, "stop"),
        b"data: [DONE]\n\n",
    ]


@dataclass(frozen=True)
class Refusal:
    """An HTTP error answer (not retried when 400) whose message is ``message``."""

    status: int
    message: str


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/v1/chat/completions":  # a window query (Ollama's /api/show)
            self.send_error(404, "no such endpoint")
            return
        with self.server.lock:
            answers = self.server.answers
            answer = answers[min(self.server.answered, len(answers) - 1)]
            self.server.answered += 1
        if isinstance(answer, Refusal):
            body = json.dumps({"error": {"message": answer.message}}).encode()
            self.send_response(answer.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event in answer:
            self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    answers: list[list[bytes] | Refusal]
    answered: int
    lock: threading.Lock


@pytest.fixture
def model_server() -> Iterator[_Server]:
    """The server; set ``answers`` (the n-th request gets the n-th, then the last again)."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.answers = [text_answer("nothing scripted")]
    server.answered = 0
    server.lock = threading.Lock()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


# -- the dsh command -----------------------------------------------------------------------------


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
            "TERM": "xterm-256color",  # a terminal that would interpret what it is sent
            "COLUMNS": "200",
            "LOCAL_LLM_KEY": SECRET,
        }

    def __call__(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [str(DSH), *args],
            cwd=self.cwd,
            env=self.env(),
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
        )

    def ok(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        done = self(*args)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done

    def configure(self, server: _Server, extra: str = "") -> None:
        host, port = server.server_address[:2]
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "config.toml").write_text(
            'model = "local:test-model"\n[providers.local]\n'
            f'base_url = "http://{host!s}:{port}/v1"\napi_key_env = "LOCAL_LLM_KEY"\n' + extra
        )


@pytest.fixture
def dsh(tmp_path: Path) -> Dsh:
    assert DSH.exists(), f"the dsh console script is not installed next to {sys.executable}"
    cwd = tmp_path / "project"
    cwd.mkdir()
    return Dsh(home=tmp_path / "dsh-home", cwd=cwd)


FULL_ACCESS = '[sandbox]\nmode = "danger-full-access"\n'
PRINTF = "printf '\\033]0;pwned\\033\\\\\\033[2J\\007|\\010|\\013|\\014|\\r|\\177|\\302\\205|'"
"""A command printing (from octal escapes) controls of each class in the tool's output."""


def _session_of(done: subprocess.CompletedProcess[bytes]) -> str:
    (line,) = [x for x in done.stderr.decode().splitlines() if re.fullmatch(r"session \S+", x)]
    return line.removeprefix("session ")


def test_run_shows_controls_of_model_text_reasoning_tool_calls_and_tool_output(
    dsh: Dsh, model_server: _Server
) -> None:
    command = f"{PRINTF}; : '{PAYLOAD}'"
    model_server.answers = [
        tool_call_answer(
            {"command": command, "description": "Print"}, text=PAYLOAD, reasoning=PAYLOAD + "\x00"
        ),
        text_answer("done " + PAYLOAD),
    ]
    dsh.configure(model_server, FULL_ACCESS)
    done = dsh.ok("run", f"T{PAYLOAD}", "--sandbox", "danger-full-access")
    assert_shown(done.stdout)  # into a pipe: the final answer alone
    stderr = assert_shown(done.stderr, every=False)  # the steps that called tools
    assert r"\x00" in stderr  # the reasoning's NUL
    assert f"bash: {PRINTF}; : '<{SHOWN}" in stderr  # the tool call line
    assert rf"⎿ {SHOWN}\x1b[2J\x07|\x08|\x0b|\x0c|\r|\x7f|\x85|" in stderr  # its output


def test_sessions_show_list_and_status_show_the_logged_controls(
    dsh: Dsh, model_server: _Server
) -> None:
    model_server.answers = [
        tool_call_answer(
            {"command": f"{PRINTF}; : '{PAYLOAD}'", "description": "Print"},
            text=PAYLOAD,
            reasoning=PAYLOAD,
        ),
        text_answer("done " + PAYLOAD),
    ]
    dsh.configure(model_server, FULL_ACCESS)
    title = "T" + TITLE_SEQUENCE + "\x9b\u202e\x7f"  # a first word: the fallback title keeps it
    session_id = _session_of(dsh.ok("run", f"{title} {PAYLOAD}"))
    transcript = assert_shown(dsh.ok("sessions", "show", session_id).stdout)
    assert f"user: T{SHOWN}" in transcript
    assert "assistant: <" + SHOWN in transcript
    assert rf"⎿ {SHOWN}\x1b[2J\x07|" in transcript
    shown_title = rf"T{SHOWN}\x9b\u202e\x7f"
    for args in (["sessions", "list"], ["sessions", "status", session_id]):
        table = assert_shown(dsh.ok(*args).stdout, every=False)
        assert shown_title in table, table
    for args in (["sessions", "list", "--json"], ["sessions", "status", session_id, "--json"]):
        output = dsh.ok(*args).stdout
        assert_shown(output, every=False)
        rows = json.loads(output)
        row = rows[0] if isinstance(rows, list) else rows
        assert row["title"].startswith(title)  # JSON escapes: the value itself is intact
    raw = dsh.ok("sessions", "show", "--raw", session_id).stdout  # the one exception: the log
    assert b"\x1b" not in raw  # JSON escapes C0 itself
    assert any(json.loads(line).get("type") == "session/title" for line in raw.splitlines())


def test_a_provider_error_carrying_controls_is_shown_not_interpreted(
    dsh: Dsh, model_server: _Server
) -> None:
    model_server.answers = [Refusal(400, PAYLOAD)]
    dsh.configure(model_server)
    done = dsh("run", "hello")
    assert done.returncode == 1
    stderr = assert_shown(done.stderr, every=False)
    assert "error BAD_REQUEST: " in stderr
    assert SHOWN in stderr
    assert r"\x9b|" in stderr
    assert r"\u202e|" in stderr
    transcript = assert_shown(dsh.ok("sessions", "show", _session_of(done)).stdout, every=False)
    assert SHOWN in transcript


def test_an_error_line_shows_the_controls_of_what_it_names(dsh: Dsh) -> None:
    name = "s" + PAYLOAD.replace("\x85", "")  # \x85 would split the one-line error
    for args in (
        ["sessions", "show", name],
        ["sessions", "export", name],
        ["run", "--resume", name, "x"],
    ):
        done = dsh(*args)
        assert done.returncode == 1, args
        stderr = assert_shown(done.stderr, every=False)
        (line,) = [x for x in stderr.splitlines() if x.startswith("dsh: error: ")]
        assert SHOWN in line, line
        assert r"\x9b|" in line
        assert r"\u2066|" in line


def test_config_dump_shows_controls_as_escapes_that_read_back(dsh: Dsh) -> None:
    # TOML refuses raw C0 and DEL (escapes only); C1 and the bidi overrides may be raw
    base_url = "http://127.0.0.1:9/\u202e\u2066\x85\x9b\x1b[2J\x7f/v1"
    dsh.home.mkdir(parents=True)
    (dsh.home / "config.toml").write_text(
        '[providers."odd\u202ename"]\n'
        'base_url = "http://127.0.0.1:9/\u202e\u2066\x85\x9b\\u001b[2J\\u007f/v1"\n',
        encoding="utf-8",
    )
    text = assert_shown(dsh.ok("config", "--dump").stdout, every=False)
    assert r"\u202e" in text
    dumped = tomllib.loads(text)  # still TOML, with the same values
    assert dumped["providers"]["odd\u202ename"]["base_url"] == base_url
    as_json = dsh.ok("config", "--dump", "--json").stdout
    assert_shown(as_json, every=False)
    assert json.loads(as_json)["providers"]["odd\u202ename"]["base_url"] == base_url


def test_a_library_warning_quoting_a_file_name_shows_its_controls(dsh: Dsh) -> None:
    """A store folder named with controls whose log cannot be listed: the warning naming it."""
    folder = dsh.home / "sessions-plain" / f"p{PAYLOAD}" / "broken"
    folder.mkdir(parents=True)
    (folder / "session.jsonl").write_text("not a header\n")
    done = dsh.ok("sessions", "list")
    stderr = assert_shown(done.stderr)
    assert "list() skipped " in stderr


def _run_in_a_terminal(dsh: Dsh, args: list[str]) -> tuple[int, bytes]:
    """``dsh`` with a pseudo-terminal as standard input; rejects the approval prompt once it
    appears on standard error. Returns the exit status and standard error."""
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [str(DSH), *args],
        cwd=dsh.cwd,
        env=dsh.env(),
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    os.close(slave)
    stderr = bytearray()
    prompted = threading.Event()

    def read_stderr() -> None:
        assert process.stderr is not None
        for chunk in iter(lambda: process.stderr.read1(4096), b""):  # type: ignore[union-attr]
            stderr.extend(chunk)
            if b"answer: a allow once" in stderr:
                prompted.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        assert prompted.wait(TIMEOUT), bytes(stderr)
        os.write(master, b"r\n")
        process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)
    reader.join(TIMEOUT)
    return process.returncode, bytes(stderr)


def test_the_approval_prompt_shows_the_controls_of_command_and_justification(
    dsh: Dsh, model_server: _Server, tmp_path: Path
) -> None:
    escalation = {
        "command": f"echo {PAYLOAD}\nrm -rf {tmp_path}/nothing",
        "description": "Write outside the workspace",
        "sandbox_permissions": "danger-full-access",
        "justification": f"Because {PAYLOAD}",
    }
    model_server.answers = [tool_call_answer(escalation), text_answer("Done.")]
    dsh.configure(model_server)
    code, stderr = _run_in_a_terminal(dsh, ["run", "write it"])
    assert code == 0, stderr
    text = assert_shown(stderr)
    (command,) = [line for line in text.splitlines() if line.startswith("command: ")]
    assert command.startswith(f"command: echo <{SHOWN}")
    assert command.endswith(rf">\nrm -rf {tmp_path}/nothing")  # one line: the newline shown
    (reason,) = [line for line in text.splitlines() if line.startswith("reason: ")]
    assert SHOWN in reason
    assert r"\u202e|" in reason


def _stdout_in_a_terminal(dsh: Dsh, args: list[str]) -> bytes:
    """What ``dsh`` writes to its standard output when that is a pseudo-terminal (in raw mode,
    so the bytes arrive as written: no newline translation)."""
    master, slave = pty.openpty()
    tty.setraw(slave)
    process = subprocess.Popen(
        [str(DSH), *args],
        cwd=dsh.cwd,
        env=dsh.env(),
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=subprocess.PIPE,
    )
    os.close(slave)
    output = bytearray()

    def read_output() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every writer has closed the terminal
                return
            if not chunk:
                return
            output.extend(chunk)

    reader = threading.Thread(target=read_output, daemon=True)
    reader.start()
    try:
        _, stderr = process.communicate(timeout=TIMEOUT)
        reader.join(TIMEOUT)
        assert not reader.is_alive()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)
    assert process.returncode == 0, (args, bytes(output), stderr)
    return bytes(output)


def test_a_log_printed_to_a_terminal_shows_c1_and_bidi_controls_as_json_escapes(
    dsh: Dsh, model_server: _Server, tmp_path: Path
) -> None:
    """``sessions show --raw`` and ``sessions export`` to standard output: in a terminal the
    C1 and bidirectional controls the log keeps raw are ``\\uXXXX`` escapes of the same JSON;
    into a pipe (or a file) the bytes are the log's own."""
    odd = "<\x85|\x9b|\x90|\x9d|\u202a|\u202e|\u2066|\u2069|\u061c|\u200f>"
    model_server.answers = [text_answer("done " + odd)]
    dsh.configure(model_server)
    session_id = _session_of(dsh.ok("run", f"T{odd}"))
    exported = tmp_path / "log.jsonl"
    dsh.ok("sessions", "export", session_id, "-o", str(exported))
    log = exported.read_bytes()
    assert "\x85".encode() in log  # kept raw by the log
    assert "\u202e".encode() in log
    for args in (["sessions", "show", "--raw", session_id], ["sessions", "export", session_id]):
        assert dsh.ok(*args).stdout == log, args  # a pipe: byte for byte
        shown = _stdout_in_a_terminal(dsh, args)
        text = assert_shown(shown, every=False)
        bidi = [c for c in text if c in "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e"]
        assert not bidi, text
        assert not any("\u2066" <= c <= "\u2069" for c in text), text
        assert r"\u0085|\u009b|\u0090|\u009d|\u202a|\u202e|\u2066|\u2069|\u061c|\u200f" in text
        lines = shown.splitlines()
        assert [json.loads(line) for line in lines] == [
            json.loads(line) for line in log.splitlines()
        ]
