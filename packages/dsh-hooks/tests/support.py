"""Test-only parts: a real bash executor on asyncio subprocesses, an agent over a bare session,
and helpers that drive the extension points the way the loop does.

The package depends on the seams only, so the real loop and ``dsh-bash-local`` are exercised in
tests-integration/test_hooks_loop.py; here every hook is still a real bash script.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dsh_agent import (
    AgentOptions,
    CancelCause,
    Enter,
    Extensions,
    PreStepDecision,
    StepContext,
    TurnStopping,
)
from dsh_hooks import HookRunner, HooksConfig
from dsh_llm import UserMessage
from dsh_session import Session, SessionHeader, assistant_message_data
from dsh_shell import (
    CollectedOutput,
    ShellExecRequest,
    ShellExecSpec,
    ShellProcess,
    ShellRunResult,
    compose_child_environment,
    resolve_request,
)
from dsh_tools import ResultSpill, ToolRegistry


class BashExecutor:
    """``bash -c`` in a new process group, stdin from the spec, killed at its timeout."""

    def __init__(self) -> None:
        self.requests: list[ShellExecRequest] = []

    def resolve(self, request: ShellExecRequest) -> ShellExecSpec:
        self.requests.append(request)
        return resolve_request(
            request,
            default_workdir=None,
            default_timeout=120,
            max_timeout=600,
            default_stdout_max_bytes=64_000,
        )

    async def run(self, spec: ShellExecSpec) -> ShellRunResult:
        started = time.monotonic()
        env = compose_child_environment(os.environ, env=spec.env, dsh_env=spec.dsh_env)
        child = await asyncio.create_subprocess_exec(
            "bash",
            "-c",
            spec.command,
            cwd=spec.workdir,
            env=env,
            stdin=asyncio.subprocess.PIPE if spec.stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        stdin = spec.stdin.encode() if isinstance(spec.stdin, str) else spec.stdin
        timed_out = aborted = False
        try:
            out, err = await asyncio.wait_for(child.communicate(stdin), spec.timeout)
        except (TimeoutError, asyncio.CancelledError) as stopped:
            timed_out = isinstance(stopped, TimeoutError)
            aborted = not timed_out
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            out, err = await asyncio.shield(child.communicate())
        code = child.returncode
        return ShellRunResult(
            exit_code=code if code is not None and code >= 0 else None,
            signal="SIGKILL" if code is not None and code < 0 else None,
            timed_out=timed_out,
            aborted=aborted,
            timeout=spec.timeout,
            stdout=CollectedOutput(out.decode()),
            stderr=CollectedOutput(err.decode()),
            duration=time.monotonic() - started,
        )

    def start(self, spec: ShellExecSpec) -> ShellProcess:
        raise NotImplementedError("hooks run in the foreground")


class FakeAgent:
    """An agent over a bare session: what it was sent and how it was cancelled are recorded."""

    def __init__(self, session_id: str = "s-1", cwd: str | None = None, **header: Any) -> None:
        self.session = Session(SessionHeader(id=session_id, created_at=0, cwd=cwd, **header))
        self.options = AgentOptions(provider="p", model="m")
        self.status = "idle"
        self.sent: list[tuple[list[UserMessage | str], str]] = []
        self.cancels: list[CancelCause | None] = []
        self.turn = 0

    @property
    def id(self) -> str:
        return self.session.header.id

    @property
    def cwd(self) -> str | None:
        return self.session.header.cwd

    def send(self, messages: Any, *, target: str, wake: bool) -> None:
        items = list(messages) if isinstance(messages, list | tuple) else [messages]
        self.sent.append((items, target))

    def followup(self, messages: Any) -> None:
        self.send(messages, target="next-turn", wake=True)

    def steer(self, messages: Any) -> None:
        self.send(messages, target="next-step", wake=True)

    def inject(self, messages: Any) -> None:
        self.send(messages, target="next-step", wake=False)

    def cancel(self, cause: CancelCause | None = None, *, keep_inbox: bool = False) -> None:
        self.cancels.append(cause)

    async def wait_idle(self) -> None:
        return None

    # -- what the loop does ---------------------------------------------------------------

    def start_turn(self) -> int:
        self.turn += 1
        self.session.append("turn/start", {"turn": self.turn})
        return self.turn

    def end_turn(self) -> None:
        self.session.append("turn/end", {"turn": self.turn, "reason": {"kind": "completed"}})

    def answer(self, text: str) -> None:
        data = assistant_message_data(  # the identified shape the loop writes
            self.turn, 1, [{"type": "text", "text": text}], {"provider": "p", "model": "m"}
        )
        self.session.append("assistant/message", data)

    def events(self, prefix: str) -> list[dict[str, Any]]:
        return [e.data for e in self.session.events if e.type.startswith(prefix)]  # type: ignore[misc]


class Rig:
    """A runner installed on fresh extension points and a registry, plus the agent."""

    def __init__(
        self,
        config: HooksConfig,
        agent: FakeAgent | None = None,
        *,
        spill: ResultSpill | None = None,
    ) -> None:
        self.executor = BashExecutor()
        self.runner = HookRunner(config, self.executor, spill=spill)
        self.extensions = Extensions()
        self.tools = ToolRegistry()
        self.runner.install(self.extensions, self.tools)
        self.agent = agent if agent is not None else FakeAgent()

    async def session_start(self, source: str = "startup") -> None:
        for listener in self.extensions.session_start:
            result = listener(self.agent, source)  # type: ignore[arg-type]
            if asyncio.iscoroutine(result):
                await result

    async def pre_step(self, *messages: UserMessage, step: int = 1) -> PreStepDecision:
        decision: PreStepDecision = Enter(tuple(messages))
        context = StepContext(self.agent, self.agent.turn, step)  # type: ignore[arg-type]
        for listener in self.extensions.pre_step:
            replaced = listener(context, decision)
            if asyncio.iscoroutine(replaced):
                replaced = await replaced
            if replaced is not None:
                decision = replaced  # type: ignore[assignment]
        return decision

    async def turn_stopping(self) -> None:
        stopping = TurnStopping(self.agent, self.agent.turn, 1, {"kind": "completed"})  # type: ignore[arg-type]
        for listener in self.extensions.turn_stopping:
            result = listener(stopping)
            if asyncio.iscoroutine(result):
                await result


def script(directory: Path, name: str, body: str) -> str:
    """An executable bash script ``name`` in ``directory``; returns the command that runs it."""
    path = directory / name
    path.write_text("#!/usr/bin/env bash\n" + body, encoding="utf-8")
    path.chmod(0o755)
    return str(path)


def config(dialect: str, table: dict[str, Sequence[dict[str, Any]]], **options: Any) -> HooksConfig:
    return HooksConfig.from_document({"hooks": table}, dialect=dialect, **options)  # type: ignore[arg-type]


def group(command: str, matcher: str | None = None, **hook: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"hooks": [{"type": "command", "command": command, **hook}]}
    if matcher is not None:
        entry["matcher"] = matcher
    return entry


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))
