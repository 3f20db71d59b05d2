"""Fixtures shared by the ``dsh`` command's tests: a scripted OpenAI-compatible model server on
127.0.0.1 (``model_server``) and a runner of the installed ``dsh`` console script in a fresh
``DSH_HOME`` (``dsh``).

The server answers the n-th chat request with the n-th script of ``scripts`` (then the last one
again). A script is a list of server-sent events (bytes, built with ``text_answer``,
``bash_call`` or ``chunk``) and markers (``CUT``, ``HANG``, ``GATE``), or an ``HttpError``.
``judge`` may refuse a request by its body first, as a strict server would. The builders hang
off the server object because ``--import-mode=importlib`` leaves conftest unimportable.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the test modules import shapes.py

DSH = Path(sys.executable).parent / "dsh"
TIMEOUT = 120.0
"""Seconds one dsh command or one wait may take: a safety net against a hang."""


@dataclass(frozen=True)
class HttpError:
    """A scripted refusal: ``status`` with ``body`` as JSON."""

    status: int
    body: dict[str, Any]


def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    """One streamed chat completion chunk carrying ``delta``."""
    event = {
        "id": "chatcmpl-loopback",
        "object": "chat.completion.chunk",
        "created": 1_767_000_000,
        "model": "test-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(event)}\n\n".encode()


def usage_chunk(usage: dict[str, Any]) -> bytes:
    """The closing chunk of a stream that reports ``usage``."""
    event = {"id": "chatcmpl-loopback", "object": "chat.completion.chunk", "choices": []}
    return f"data: {json.dumps(event | {'usage': usage})}\n\n".encode()


def text_answer(*parts: str, usage: dict[str, Any] | None = None) -> list[Any]:
    """A text answer in ``parts`` (one delta each), ending the turn."""
    events: list[Any] = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": part}) for part in parts]
    events.append(chunk({}, "stop"))
    if usage is not None:
        events.append(usage_chunk(usage))
    return [*events, b"data: [DONE]\n\n"]


def bash_call(command: str, call_id: str = "call-1", description: str | None = None) -> list[Any]:
    """An answer that calls the bash tool with ``command`` (and ``description``, if given)."""
    arguments = {"command": command} | ({} if description is None else {"description": description})
    call = {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": "bash", "arguments": json.dumps(arguments)},
    }
    return [
        chunk({"role": "assistant", "content": "running it"}),
        chunk({"tool_calls": [call]}),
        chunk({}, "tool_calls"),
        b"data: [DONE]\n\n",
    ]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: LoopbackModel

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _refused_key(self) -> bool:
        """Answer 401 (and say so) when the server wants a key and this request has another."""
        wanted = self.server.api_key
        if wanted is None or self.headers.get("Authorization") == f"Bearer {wanted}":
            return False
        self._json(401, {"error": {"code": 401, "message": "Invalid API Key",
                                   "type": "authentication_error"}})  # fmt: skip
        return True

    def do_GET(self) -> None:
        if self.path != "/v1/models":
            self.send_error(404, "no such endpoint")
            return
        if not self._refused_key():
            self._json(200, {"object": "list", "data": [{"id": "test-model"}]})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        if self.path != "/v1/chat/completions":
            self.send_error(404, "no such endpoint")
            return
        server = self.server
        if self._refused_key():
            return
        refusal = server.judge(body) if server.judge is not None else None
        with server.lock:
            server.bodies.append(body)
            if refusal is None:
                scripts = server.scripts
                script: list[Any] | HttpError = scripts[min(server.answered, len(scripts) - 1)]
                server.answered += 1
        if refusal is not None:
            self._json(refusal.status, refusal.body)
            return
        if isinstance(script, HttpError):
            self._json(script.status, script.body)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event in script:
            if event == LoopbackModel.GATE:
                assert server.gate.wait(TIMEOUT)
                continue
            if event == LoopbackModel.HANG:
                self.wfile.flush()
                server.streaming.set()
                server.release.wait(TIMEOUT)
                self.close_connection = True
                return
            if event == LoopbackModel.CUT:
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class LoopbackModel(ThreadingHTTPServer):
    """A scripted OpenAI-compatible chat server (see the module's docstring)."""

    daemon_threads = True
    allow_reuse_address = True

    CUT = "cut"
    """In a script: drop the connection here (the chunked body never ends: a transport failure)."""
    HANG = "hang"
    """In a script: say so (``streaming``) and send nothing more until ``release``."""
    GATE = "gate"
    """In a script: wait for ``gate`` first."""

    text_answer = staticmethod(text_answer)
    bash_call = staticmethod(bash_call)
    chunk = staticmethod(chunk)
    usage_chunk = staticmethod(usage_chunk)
    HttpError = HttpError

    def __init__(self, address: tuple[str, int] = ("127.0.0.1", 0)) -> None:
        super().__init__(address, _Handler)
        self.scripts: list[list[Any] | HttpError] = [text_answer("nothing scripted")]
        self.answered = 0
        self.bodies: list[dict[str, Any]] = []
        self.api_key: str | None = None
        self.judge: Callable[[dict[str, Any]], HttpError | None] | None = None
        self.lock = threading.Lock()
        self.gate, self.streaming, self.release = (threading.Event() for _ in range(3))
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05})

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> LoopbackModel:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.gate.set()
        self.release.set()
        if self._thread.is_alive():
            self.shutdown()
            self._thread.join()
        self.server_close()


@pytest.fixture
def model_server() -> Iterator[LoopbackModel]:
    """The model; set ``scripts`` (the n-th request gets the n-th, then the last again)."""
    server = LoopbackModel().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def start_model_server() -> Iterator[Callable[[int], LoopbackModel]]:
    """Starts a ``LoopbackModel`` on a given port when the test says (stopped at teardown)."""
    started: list[LoopbackModel] = []

    def start(port: int) -> LoopbackModel:
        started.append(LoopbackModel(("127.0.0.1", port)).start())
        return started[-1]

    try:
        yield start
    finally:
        for server in started:
            server.stop()


@dataclass
class Dsh:
    """Runs the installed ``dsh`` in ``cwd`` with its own ``DSH_HOME`` and a clean environment."""

    home: Path
    cwd: Path
    extra_env: dict[str, str] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.cwd.parent),
            "DSH_HOME": str(self.home),
            "LANG": "C.UTF-8",
            "NO_COLOR": "1",
            "TERM": "dumb",
            "COLUMNS": "200",
            "LOCAL_LLM_KEY": "sk-loopback-test",
            **self.extra_env,
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

    def configure(self, server: LoopbackModel | str, extra: str = "") -> None:
        """Point the ``local`` provider at ``server`` (or a base URL), keyed by LOCAL_LLM_KEY."""
        base_url = server if isinstance(server, str) else server.base_url
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "config.toml").write_text(
            'model = "local:test-model"\n'
            '[sandbox]\nmode = "danger-full-access"\n'
            f'[providers.local]\nbase_url = "{base_url}"\n'
            'api_key_env = "LOCAL_LLM_KEY"\n' + extra
        )


@pytest.fixture
def dsh(tmp_path: Path) -> Dsh:
    """A ``dsh`` runner in a fresh project folder and ``DSH_HOME`` under ``tmp_path``."""
    assert DSH.exists(), f"the dsh console script is not installed next to {sys.executable}"
    cwd = tmp_path / "project"
    cwd.mkdir()
    return Dsh(home=tmp_path / "dsh-home", cwd=cwd)


class Terminal:
    """A real terminal: ``dsh`` running in a tmux pane (its own tmux server), read back from
    what the pane shows. Waits poll the screen with a bound (a safety net, not a speed bar)."""

    def __init__(self, socket: Path, cwd: Path, env: dict[str, str], argv: list[str]) -> None:
        self._tmux = ["tmux", "-S", str(socket)]  # its own server, its socket in the test's folder
        command = " ".join(
            ["env", "-i", *(f"{k}={shlex.quote(v)}" for k, v in env.items())]
            + [shlex.quote(a) for a in argv]
            + ["; echo '[dsh exited '$?']'; sleep 600"]
        )
        subprocess.run(
            [*self._tmux, "new-session", "-d", "-s", "dsh", "-x", "110", "-y", "45",
             "-c", str(cwd), command],
            check=True, timeout=30,
        )  # fmt: skip

    def send(self, text: str, *, enter: bool = True) -> None:
        """Type ``text`` (literally) and, by default, Enter."""
        subprocess.run([*self._tmux, "send-keys", "-t", "dsh", "-l", text], check=True, timeout=30)
        if enter:
            self.keys("Enter")

    def keys(self, *keys: str) -> None:
        """Press tmux key names (``C-c``, ``C-d``, ``Escape``, ``Enter``)."""
        subprocess.run([*self._tmux, "send-keys", "-t", "dsh", *keys], check=True, timeout=30)

    def screen(self) -> str:
        """What the pane shows now, with its scrollback (wrapped lines joined)."""
        shown = subprocess.run(
            [*self._tmux, "capture-pane", "-p", "-J", "-t", "dsh", "-S", "-2000"],
            capture_output=True, text=True, check=True, timeout=30,
        )  # fmt: skip
        return shown.stdout

    def wait_for(self, text: str, *, after: int = 0, timeout: float = TIMEOUT) -> str:
        """Wait until ``text`` shows (past character ``after`` of the screen); the screen."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if text in screen[after:]:
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never showed; the screen:\n{screen}")
            time.sleep(0.1)

    def close(self) -> None:
        subprocess.run([*self._tmux, "kill-server"], check=False, timeout=30,
                       capture_output=True)  # fmt: skip


@pytest.fixture
def terminal(dsh: Dsh) -> Iterator[Callable[..., Terminal]]:
    """Starts ``dsh ARGS`` in a real terminal (tmux) in the ``dsh`` fixture's folder and home."""
    assert shutil.which("tmux"), "tmux is not installed (the README's set-up installs it)"
    opened: list[Terminal] = []

    def start(*args: str) -> Terminal:
        env = dsh.env() | {"TERM": "xterm-256color"}
        env.pop("NO_COLOR", None)
        env.pop("COLUMNS", None)  # the pane says its own size
        socket = dsh.cwd.parent / f"tmux-{len(opened)}.sock"
        opened.append(Terminal(socket, dsh.cwd, env, [str(DSH), *args]))
        return opened[-1]

    try:
        yield start
    finally:
        for terminal in opened:
            terminal.close()
