"""A test-only inner executor: real ``bash -c`` processes, no process-group care, every spec kept.

It follows the seam's environment rule (`compose_child_environment`) and `resolve_request`, so
the sandbox can be tested over it without any other implementation package.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from pathlib import Path

import pytest

from dsh_bash_sandbox import clear_probe_cache
from dsh_shell import (
    CollectedOutput,
    ProcessRead,
    ProcessStatus,
    ShellExecRequest,
    ShellExecSpec,
    ShellRunResult,
    compose_child_environment,
    resolve_request,
)


class FakeProcess:
    """A background process over `asyncio.subprocess` (enough for the sandbox's tests)."""

    def __init__(self, spec: ShellExecSpec) -> None:
        self._task = asyncio.ensure_future(_spawn(spec))
        self._process: asyncio.subprocess.Process | None = None
        self._status: ProcessStatus = "running"
        self._code: int | None = None
        self._out = b""
        self._settled: asyncio.Future[ProcessStatus] | None = None

    @property
    def status(self) -> ProcessStatus:
        return self._status

    @property
    def exit_code(self) -> int | None:
        return self._code

    @property
    def signal(self) -> str | None:
        return None

    async def wait(self) -> ProcessStatus:
        if self._settled is None:
            self._settled = asyncio.ensure_future(self._settle())
        return await asyncio.shield(self._settled)

    async def _settle(self) -> ProcessStatus:
        process = self._process = await self._task
        out, _ = await process.communicate()
        self._out = out
        code = process.returncode
        assert code is not None
        self._status = "completed" if code >= 0 else "killed"
        self._code = code if code >= 0 else None
        return self._status

    def read_output(self) -> ProcessRead:
        out, self._out = self._out, b""
        return ProcessRead(out.decode(errors="replace"))

    def kill(self) -> bool:
        if self._process is None or self._status != "running":
            return False
        self._process.kill()
        return True


async def _spawn(spec: ShellExecSpec) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        spec.command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=spec.workdir,
        env=compose_child_environment(os.environ, env=spec.env, dsh_env=spec.dsh_env),
    )


class FakeInner:
    """Runs ``bash -c <spec.command>`` and remembers every spec it was handed."""

    def __init__(self) -> None:
        self.specs: list[ShellExecSpec] = []
        self.closed = False
        self.shell_path: str | None = None  # the outer shell it names (None: not named)

    def resolve(self, request: ShellExecRequest) -> ShellExecSpec:
        return resolve_request(
            request,
            default_workdir=None,
            default_timeout=60,
            max_timeout=600,
            default_stdout_max_bytes=1_000_000,
        )

    async def run(self, spec: ShellExecSpec) -> ShellRunResult:
        self.specs.append(spec)
        loop = asyncio.get_running_loop()
        started = loop.time()
        process = await _spawn(spec)
        out, err = await process.communicate()
        code = process.returncode
        assert code is not None
        return ShellRunResult(
            exit_code=code if code >= 0 else None,
            signal=signal.Signals(-code).name if code < 0 else None,
            timed_out=False,
            aborted=False,
            timeout=spec.timeout,
            stdout=CollectedOutput(out.decode(errors="replace")),
            stderr=CollectedOutput(err.decode(errors="replace")),
            duration=loop.time() - started,
        )

    def start(self, spec: ShellExecSpec) -> FakeProcess:
        self.specs.append(spec)
        return FakeProcess(spec)

    async def aclose(self) -> None:
        self.closed = True


@pytest.fixture
def inner() -> FakeInner:
    """A fresh fake inner executor."""
    return FakeInner()


@pytest.fixture(autouse=True)
def _own_placeholder_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Placeholders are recorded under the test's folder, never in the user's state folder."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


@pytest.fixture(autouse=True)
def _fresh_probes() -> None:
    """Each test probes its bwrap anew (fake scripts live at per-test paths anyway)."""
    clear_probe_cache()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace directory (the command's workdir) with a repository inside."""
    path = tmp_path / "workspace"
    (path / ".git").mkdir(parents=True)
    (path / ".git" / "config").write_text("[core]\n")
    return path
