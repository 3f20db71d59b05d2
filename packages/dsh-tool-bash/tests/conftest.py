"""Fakes shared by the dsh-tool-bash tests (exposed as fixtures): a recording executor,
controllable background processes, callers, and a tool registry with bash and the job tools."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from dsh_session import Session, SessionHeader
from dsh_shell import (
    CollectedOutput,
    ProcessRead,
    ProcessStatus,
    ShellExecRequest,
    ShellExecSpec,
    ShellRunResult,
    resolve_request,
)
from dsh_tool_bash import BashTool, JobRegistry, ShellEnvRegistry, job_tools
from dsh_tools import ToolCall, ToolCaller, ToolExecution, ToolRegistry, ToolResult

# Properties must not fail on a slow or loaded machine: no per-example deadline.
settings.register_profile("dsh", deadline=None)
settings.load_profile("dsh")

EXECUTOR_DEFAULT_WORKDIR = "/executor/default"


@dataclass(frozen=True)
class Caller:
    """A calling agent: its session (a real log) and session cwd."""

    session_id: str = "session-a"
    cwd: str | None = "/work/project-a"
    session: Session = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        header = SessionHeader(id=self.session_id, created_at=0)
        object.__setattr__(self, "session", Session(header))


class FakeProcess:
    """A background process the test drives: ``emit`` output, ``finish`` it, or ``kill`` it."""

    def __init__(self) -> None:
        self._status: ProcessStatus = "running"
        self._exit_code: int | None = None
        self._signal: str | None = None
        self._pending: list[str] = []
        self._settled = asyncio.Event()
        self.kill_calls = 0
        self.lossy_next = False

    @property
    def status(self) -> ProcessStatus:
        return self._status

    @property
    def exit_code(self) -> int | None:
        return self._exit_code

    @property
    def signal(self) -> str | None:
        return self._signal

    def emit(self, text: str) -> None:
        self._pending.append(text)

    def finish(self, exit_code: int = 0) -> None:
        self._status, self._exit_code = "completed", exit_code
        self._settled.set()

    async def wait(self) -> ProcessStatus:
        await self._settled.wait()
        return self._status

    def read_output(self) -> ProcessRead:
        delta, self._pending = "".join(self._pending), []
        lossy, self.lossy_next = self.lossy_next, False
        return ProcessRead(delta=delta, lossy=lossy)

    def kill(self) -> bool:
        self.kill_calls += 1
        if self._status != "running":
            return False
        self._status, self._signal = "killed", "SIGTERM"
        self._settled.set()
        return True


def make_result(
    stdout: str = "",
    stderr: str = "",
    *,
    exit_code: int | None = 0,
    signal: str | None = None,
    timed_out: bool = False,
    aborted: bool = False,
    timeout: float = 120.0,
) -> ShellRunResult:
    return ShellRunResult(
        exit_code=exit_code,
        signal=signal,
        timed_out=timed_out,
        aborted=aborted,
        timeout=timeout,
        stdout=CollectedOutput(stdout),
        stderr=CollectedOutput(stderr),
        duration=0.0,
    )


@dataclass
class RecordingExecutor:
    """A `ShellExecutor` that records every request and spec and returns canned answers.

    ``result`` is what ``run`` returns; ``gate`` (when set) holds ``run`` until it is set;
    ``error`` (when set) is raised by ``run``; ``start`` hands out `FakeProcess` objects.
    ``entered`` receives each spec as ``run`` starts (await it to know a run is in flight).
    """

    result: ShellRunResult = field(default_factory=lambda: make_result("ok\n"))
    gate: asyncio.Event | None = None
    error: Exception | None = None
    requests: list[ShellExecRequest] = field(default_factory=list)
    run_specs: list[ShellExecSpec] = field(default_factory=list)
    start_specs: list[ShellExecSpec] = field(default_factory=list)
    processes: list[FakeProcess] = field(default_factory=list)
    running: int = 0
    entered: asyncio.Queue[ShellExecSpec] = field(default_factory=asyncio.Queue)

    def resolve(self, request: ShellExecRequest) -> ShellExecSpec:
        self.requests.append(request)
        return resolve_request(
            request,
            default_workdir=EXECUTOR_DEFAULT_WORKDIR,
            default_timeout=120.0,
            max_timeout=600.0,
            default_stdout_max_bytes=64_000,
        )

    async def run(self, spec: ShellExecSpec) -> ShellRunResult:
        self.run_specs.append(spec)
        self.running += 1
        self.entered.put_nowait(spec)
        try:
            if self.gate is not None:
                await self.gate.wait()
            if self.error is not None:
                raise self.error
            return self.result
        finally:
            self.running -= 1

    def start(self, spec: ShellExecSpec) -> FakeProcess:
        self.start_specs.append(spec)
        process = FakeProcess()
        self.processes.append(process)
        return process


@dataclass
class StaticContributor:
    """A `ShellEnvContributor` with fixed declarations and a resolver function."""

    name: str
    keys: Mapping[str, str]
    resolver: Callable[[ToolExecution], Any] = lambda execution: {}
    calls: int = 0

    def resolve(self, execution: ToolExecution) -> Any:
        self.calls += 1
        return self.resolver(execution)


Call = Callable[..., Awaitable[ToolResult]]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "dsh-home"


@pytest.fixture
def shell_env(home: Path) -> ShellEnvRegistry:
    return ShellEnvRegistry(home)


@pytest.fixture
def executor() -> RecordingExecutor:
    return RecordingExecutor()


@pytest.fixture
async def jobs() -> AsyncIterator[JobRegistry]:
    async with JobRegistry() as registry:
        yield registry


@pytest.fixture
def bash(executor: RecordingExecutor, shell_env: ShellEnvRegistry, jobs: JobRegistry) -> BashTool:
    return BashTool(executor, shell_env, jobs=jobs)


@pytest.fixture
def tools(bash: BashTool, jobs: JobRegistry) -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(bash)
    for tool in job_tools(jobs):
        registry.register(tool)
    return registry


@pytest.fixture
def caller() -> Caller:
    return Caller()


@pytest.fixture
def other_caller() -> Caller:
    return Caller(session_id="session-b", cwd="/work/project-b")


@pytest.fixture
def call(tools: ToolRegistry) -> Call:
    """``await call(name, arguments_dict, caller=None)`` through the tool registry."""
    counter = 0

    async def run(name: str, arguments: Any, caller: ToolCaller | None = None) -> ToolResult:
        nonlocal counter
        counter += 1
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        return await tools.execute(ToolCall(f"call-{counter}", name, text), caller)

    return run


@pytest.fixture
def contributor_factory() -> Callable[..., StaticContributor]:
    return StaticContributor


@pytest.fixture
def result_factory() -> Callable[..., ShellRunResult]:
    return make_result


@pytest.fixture
def caller_factory() -> Callable[..., Caller]:
    return Caller


@pytest.fixture
def execution_factory() -> Callable[..., ToolExecution]:
    def build(caller: ToolCaller | None = None, arguments: Mapping[str, Any] | None = None) -> Any:
        return ToolExecution("call-x", "bash", dict(arguments or {}), caller)

    return build
