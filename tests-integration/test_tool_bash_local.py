"""dsh-tool-bash over the real dsh-bash-local executor: what a bash child actually sees.

The bash tool hands the executor a trusted ``dsh_env`` snapshot; the local executor drops every
inherited ``DSH_*`` name and applies the snapshot last. Together: a child sees the current
managed facts and never a stale ambient one.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest

from dsh_bash_local import LocalBashConfig, LocalBashExecutor, LocalShellProcess
from dsh_shell import ShellProcess
from dsh_tool_bash import BashTool, JobRegistry, ShellEnvRegistry, job_tools
from dsh_tools import ToolCall, ToolRegistry, ToolResult

PRINT_FACTS = (
    'printf "%s\\n" "$DSH_HOME" "$DSH_SHELL" "${DSH_SESSION_ID-unset}" '
    '"${DSH_STALE_PARENT-unset}" "${DSH_SESSION_JSONL-unset}"'
)


@dataclass(frozen=True)
class Agent:
    session_id: str
    cwd: str | None

    @property
    def session(self) -> SimpleNamespace:
        """The session as `dsh_tools.ToolCaller` reads it: ``session.header.id``."""
        return SimpleNamespace(header=SimpleNamespace(id=self.session_id))


@dataclass
class Harness:
    tools: ToolRegistry
    jobs: JobRegistry
    home: Path
    workspace: Path
    counter: int = 0

    async def call(
        self, name: str, arguments: dict[str, object], agent: Agent | None
    ) -> ToolResult:
        self.counter += 1
        call = ToolCall(f"call-{self.counter}", name, json.dumps(arguments))
        return await self.tools.execute(call, agent)


async def _until_spawned(process: ShellProcess) -> None:
    """Wait until the local executor has spawned the job's group (a killed job never spawns)."""
    assert isinstance(process, LocalShellProcess)
    for _ in range(3000):  # a safety net of about a minute, not a speed requirement
        if process.pgid is not None:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the background job was never spawned")


@pytest.fixture
def stale_ambient(monkeypatch: pytest.MonkeyPatch) -> None:
    """An outer harness left its managed facts in this process's environment."""
    monkeypatch.setenv("DSH_STALE_PARENT", "stale")
    monkeypatch.setenv("DSH_SESSION_ID", "stale-session")
    monkeypatch.setenv("DSH_SESSION_JSONL", "/stale/session.jsonl")
    monkeypatch.setenv("dsh_lowercase_stale", "stale")


@pytest.fixture
async def harness(tmp_path: Path, stale_ambient: None) -> AsyncIterator[Harness]:
    home = tmp_path / "dsh-home"
    workspace = tmp_path / "workspace"
    (workspace / "sub").mkdir(parents=True)
    config = LocalBashConfig(timeout=30, grace=1.0, spill_dir=tmp_path / "spill")
    async with LocalBashExecutor(config) as executor, JobRegistry() as jobs:
        bash = BashTool(executor, ShellEnvRegistry(home), jobs=jobs)
        tools = ToolRegistry()
        for tool in (bash, *job_tools(jobs)):
            tools.register(tool)
        yield Harness(tools, jobs, home, workspace)


async def test_the_child_sees_the_managed_facts_and_no_stale_ambient_value(
    harness: Harness,
) -> None:
    agent = Agent("session-env-id", str(harness.workspace))
    result = await harness.call("bash", {"command": PRINT_FACTS, "description": "Print"}, agent)
    assert result.is_error is False
    assert result.text == f"{harness.home}\n1\nsession-env-id\nunset\nunset\n"


async def test_without_agent_the_child_has_no_session_id_at_all(harness: Harness) -> None:
    result = await harness.call("bash", {"command": PRINT_FACTS, "description": "Print"}, None)
    assert result.text == f"{harness.home}\n1\nunset\nunset\nunset\n"


async def test_no_inherited_dsh_name_of_any_case_reaches_the_child(harness: Harness) -> None:
    agent = Agent("session-env-id", str(harness.workspace))
    command = "env | cut -d= -f1 | grep -i '^dsh_' | sort"
    result = await harness.call("bash", {"command": command, "description": "List"}, agent)
    assert result.text == "DSH_HOME\nDSH_SESSION_ID\nDSH_SHELL\n"


async def test_a_spoofed_model_env_does_not_reach_the_child(harness: Harness) -> None:
    agent = Agent("session-env-id", str(harness.workspace))
    arguments = {
        "command": 'echo "$DSH_SESSION_ID ${SPOOF-unset}"',
        "description": "Print the id",
        "env": {"DSH_SESSION_ID": "spoofed", "SPOOF": "yes"},
    }
    assert (await harness.call("bash", arguments, agent)).text == "session-env-id unset\n"


async def test_the_os_environ_of_the_harness_is_unchanged(harness: Harness) -> None:
    before = dict(os.environ)
    agent = Agent("session-env-id", str(harness.workspace))
    await harness.call("bash", {"command": "true", "description": "Nothing"}, agent)
    assert dict(os.environ) == before


async def test_a_relative_workdir_runs_under_the_session_cwd(harness: Harness) -> None:
    agent = Agent("session-env-id", str(harness.workspace))
    arguments = {"command": "pwd", "description": "Print cwd", "workdir": "sub"}
    result = await harness.call("bash", arguments, agent)
    assert result.text == f"{harness.workspace / 'sub'}\n"


async def test_a_nonzero_exit_is_a_normal_result(harness: Harness) -> None:
    arguments = {"command": "echo failing; exit 9", "description": "Fail"}
    result = await harness.call("bash", arguments, None)
    assert result.text == "failing\n[exit code: 9]"
    assert result.is_error is False


async def test_a_missing_workdir_is_an_error_result(harness: Harness) -> None:
    arguments = {"command": "pwd", "description": "Print", "workdir": "/nonexistent/dir"}
    result = await harness.call("bash", arguments, None)
    assert result.is_error is True
    assert "/nonexistent/dir" in result.text


async def test_a_background_child_sees_the_managed_facts(harness: Harness) -> None:
    agent = Agent("session-bg", str(harness.workspace))
    arguments = {"command": PRINT_FACTS, "description": "Print", "run_in_background": True}
    assert (await harness.call("bash", arguments, agent)).text == "started background job bash-1"
    output = await harness.call("job_output", {"job_id": "bash-1", "wait": True}, agent)
    assert output.text == (
        f"{harness.home}\n1\nsession-bg\nunset\nunset\n[status: completed, exit code: 0]"
    )


async def test_another_session_cannot_read_or_kill_a_real_job(harness: Harness) -> None:
    owner = Agent("session-owner", str(harness.workspace))
    intruder = Agent("session-intruder", str(harness.workspace))
    arguments = {"command": "sleep 60", "description": "Sleep", "run_in_background": True}
    await harness.call("bash", arguments, owner)
    for name in ("job_output", "job_kill"):
        result = await harness.call(name, {"job_id": "bash-1"}, intruder)
        assert result.text == "Error: background job bash-1 belongs to another session"
    assert harness.jobs.get("bash-1", "session-owner").process.status == "running"


async def test_a_background_job_is_killed_when_its_owner_is_disposed(harness: Harness) -> None:
    owner = Agent("session-owner", str(harness.workspace))
    other = Agent("session-other", str(harness.workspace))
    arguments = {
        "command": "echo started; sleep 60",
        "description": "Sleep",
        "run_in_background": True,
    }
    await harness.call("bash", arguments, owner)
    await harness.call("bash", arguments, other)
    mine = harness.jobs.get("bash-1", "session-owner").process
    theirs = harness.jobs.get("bash-2", "session-other").process
    await _until_spawned(mine)
    assert await harness.jobs.dispose_owner("session-owner") == ["bash-1"]
    assert mine.status == "killed"
    assert mine.signal in {"SIGTERM", "SIGKILL"}
    assert theirs.status == "running"
    result = await harness.call("job_output", {"job_id": "bash-1"}, owner)
    assert result.error is not None
    assert result.error.code == "UNKNOWN_JOB"


async def test_job_kill_stops_a_real_job(harness: Harness) -> None:
    agent = Agent("session-kill", str(harness.workspace))
    arguments = {"command": "sleep 60", "description": "Sleep", "run_in_background": True}
    await harness.call("bash", arguments, agent)
    await _until_spawned(harness.jobs.get("bash-1", "session-kill").process)
    killed = await harness.call("job_kill", {"job_id": "bash-1"}, agent)
    assert killed.text == "requested cancellation of job bash-1"
    await asyncio.wait_for(harness.jobs.get("bash-1", "session-kill").process.wait(), 30)
    output = await harness.call("job_output", {"job_id": "bash-1"}, agent)
    assert output.text.endswith("[status: killed, signal: SIGTERM]")


async def test_a_real_job_finishing_unobserved_sends_its_notice(harness: Harness) -> None:
    agent = Agent("session-notice", str(harness.workspace))
    notices: asyncio.Queue[str] = asyncio.Queue()
    harness.jobs.on_finished(lambda job, notice: notices.put_nowait(notice))
    arguments = {"command": "exit 4", "description": "Exit", "run_in_background": True}
    await harness.call("bash", arguments, agent)
    assert await asyncio.wait_for(notices.get(), 30) == (
        "background job bash-1 (bash: exit 4) finished [status: completed, exit code: 4]. "
        "Read its output with job_output."
    )
