"""The bash tool under a sandbox policy: the escalation arguments, approval, the policy each
request carries, and the denial marker (issue 22 §2; the executor is the recording fake)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from dsh_shell import SandboxPolicy, sandbox_denied_marker
from dsh_tool_bash import BashTool, JobRegistry, ShellEnvRegistry
from dsh_tools import ALLOW, Allow, Deny, ToolCall, ToolExecution, ToolRegistry, ToolResult

POLICY = SandboxPolicy(mode="workspace-write", read_only_paths=(Path("/home/u/.dsh"),))
ESCALATE = {
    "command": "git push",
    "description": "Push the branch",
    "sandbox_permissions": "danger-full-access",
    "justification": "Pushing needs the network.",
}


class Approver:
    """Records each question and answers ``verdict``."""

    def __init__(self, verdict: Allow | Deny = ALLOW) -> None:
        self.verdict = verdict
        self.asked: list[str | None] = []

    async def __call__(self, execution: ToolExecution, reason: str | None) -> Allow | Deny:
        self.asked.append(reason)
        return self.verdict


@pytest.fixture
def sandboxed(executor: Any, shell_env: ShellEnvRegistry, jobs: JobRegistry) -> BashTool:
    return BashTool(executor, shell_env, jobs=jobs, sandbox=POLICY)


async def _call(
    tool: BashTool, arguments: dict[str, Any], caller: Any, approver: Any = None
) -> ToolResult:
    registry = ToolRegistry()
    registry.register(tool)
    call = ToolCall("call-1", "bash", json.dumps(arguments))
    return await registry.execute(call, caller, approver=approver)


def test_without_a_sandbox_the_schema_has_no_escalation_arguments(bash: BashTool) -> None:
    properties = bash.schema().parameters["properties"]
    assert "sandbox_permissions" not in properties
    assert "justification" not in properties
    assert "sandbox" not in bash.description


def test_under_a_sandbox_the_schema_offers_the_two_escalation_arguments(
    sandboxed: BashTool,
) -> None:
    schema = sandboxed.schema().parameters
    assert list(schema["properties"])[-2:] == ["sandbox_permissions", "justification"]
    assert schema["properties"]["sandbox_permissions"]["enum"] == [
        "workspace-write",
        "danger-full-access",
    ]
    assert schema["required"] == ["command", "description"]


@pytest.mark.parametrize(
    ("mode", "phrase"),
    [
        ("read-only", "Sandbox: read-only"),
        ("workspace-write", "writes only in the workspace"),
        ("danger-full-access", "do not set `sandbox_permissions`"),
    ],
)
def test_the_description_gains_one_sentence_about_the_policy(
    executor: Any, shell_env: ShellEnvRegistry, mode: Any, phrase: str
) -> None:
    tool = BashTool(executor, shell_env, sandbox=SandboxPolicy(mode=mode))
    plain = BashTool(executor, shell_env)
    added = set(tool.description.splitlines()) - set(plain.description.splitlines())
    assert len(added) == 1
    assert phrase in added.pop()
    assert "jsonl" not in tool.description.lower()


async def test_every_request_carries_the_policy_rooted_at_the_session_cwd(
    sandboxed: BashTool, executor: Any, caller: Any
) -> None:
    result = await _call(sandboxed, {"command": "ls", "description": "List"}, caller)
    assert not result.is_error
    policy = executor.requests[0].sandbox
    assert policy == dataclasses.replace(POLICY, workspace=Path(caller.cwd))
    assert executor.run_specs[0].sandbox == policy


async def test_the_sessions_logged_mode_narrows_or_widens_the_default(
    executor: Any, shell_env: ShellEnvRegistry, caller: Any
) -> None:
    tool = BashTool(executor, shell_env, sandbox=POLICY)
    caller.session.append("sandbox/mode", {"mode": "read-only"})
    await _call(tool, {"command": "ls", "description": "List"}, caller)
    caller.session.append("sandbox/mode", {"mode": "danger-full-access"})
    await _call(tool, {"command": "ls", "description": "List"}, caller)
    caller.session.append("sandbox/mode", {"mode": "no-such-mode"})  # fails closed
    await _call(tool, {"command": "ls", "description": "List"}, caller)
    modes = [request.sandbox.mode for request in executor.requests]
    assert modes == ["read-only", "danger-full-access", "read-only"]


async def test_a_session_that_logged_no_mode_runs_in_the_default_policys_mode(
    executor: Any, shell_env: ShellEnvRegistry, caller: Any
) -> None:
    tool = BashTool(executor, shell_env, sandbox=POLICY)
    await _call(tool, {"command": "ls", "description": "List"}, caller)
    assert executor.requests[0].sandbox.mode == POLICY.mode


async def test_an_escalated_call_asks_first_and_runs_that_call_wider(
    sandboxed: BashTool, executor: Any, caller: Any
) -> None:
    approver = Approver()
    result = await _call(sandboxed, ESCALATE, caller, approver)
    assert not result.is_error
    assert approver.asked == ["escalate sandbox to danger-full-access: Pushing needs the network."]
    assert executor.requests[0].sandbox.mode == "danger-full-access"
    # the grant covers that one call: the next plain call is back under the default mode
    await _call(sandboxed, {"command": "ls", "description": "List"}, caller, approver)
    assert executor.requests[1].sandbox.mode == "workspace-write"
    assert len(approver.asked) == 1


async def test_a_refused_escalation_runs_nothing(
    sandboxed: BashTool, executor: Any, caller: Any
) -> None:
    result = await _call(
        sandboxed, ESCALATE, caller, Approver(Deny('the user rejected tool "bash"'))
    )
    assert result.is_error
    assert result.text == 'Error: the user rejected tool "bash"'
    assert executor.requests == []


async def test_an_escalation_without_an_approval_channel_runs_nothing(
    sandboxed: BashTool, executor: Any, caller: Any
) -> None:
    result = await _call(sandboxed, ESCALATE, caller)
    assert result.is_error
    assert "no approval channel is available" in result.text
    assert executor.requests == []


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"sandbox_permissions": "danger-full-access"},
         "sandbox_permissions was given without justification"),
        ({"justification": "Because."}, "justification was given without sandbox_permissions"),
        ({"sandbox_permissions": "danger-full-access", "justification": "  "},
         "justification must be a non-empty sentence"),
        ({"sandbox_permissions": "root", "justification": "Because."}, "sandbox_permissions"),
    ],
    ids=["permissions-alone", "justification-alone", "blank-justification", "unknown-mode"],
)  # fmt: skip
async def test_escalation_arguments_come_together_and_well_formed(
    sandboxed: BashTool, executor: Any, caller: Any, arguments: dict[str, Any], says: str
) -> None:
    approver = Approver()
    result = await _call(
        sandboxed, {"command": "ls", "description": "List", **arguments}, caller, approver
    )
    assert result.is_error
    assert result.error is not None
    assert result.error.code == "INVALID_ARGS"
    assert says in result.text  # the message names what is missing, not the opposite
    assert approver.asked == []
    assert executor.requests == []


async def test_an_escalation_that_does_not_widen_is_refused_before_anyone_is_asked(
    sandboxed: BashTool, executor: Any, caller: Any
) -> None:
    approver = Approver()
    arguments = {**ESCALATE, "sandbox_permissions": "workspace-write"}
    result = await _call(sandboxed, arguments, caller, approver)
    assert result.error is not None
    assert result.error.code == "INVALID_ARGS"
    assert "does not widen the current sandbox mode workspace-write" in result.text
    assert approver.asked == []
    assert executor.requests == []


async def test_a_result_the_sandbox_refused_ends_with_the_marker_and_one_retry_hint(
    sandboxed: BashTool, executor: Any, caller: Any, result_factory: Any
) -> None:
    refused = result_factory(
        "", "touch: cannot touch '/etc/x': Read-only file system\n", exit_code=1
    )
    executor.result = dataclasses.replace(refused, sandbox_denied="workspace-write")
    result = await _call(sandboxed, {"command": "touch /etc/x", "description": "Touch"}, caller)
    assert not result.is_error
    lines = result.text.splitlines()
    assert sandbox_denied_marker("workspace-write") in lines
    assert lines[-1].startswith("If the command needs that access, retry this exact command once")
    assert '"danger-full-access"' in lines[-1]


async def test_an_ordinary_failure_gets_no_marker(
    sandboxed: BashTool, executor: Any, caller: Any, result_factory: Any
) -> None:
    executor.result = result_factory("", "no such file\n", exit_code=1)
    result = await _call(sandboxed, {"command": "cat x", "description": "Read x"}, caller)
    assert "[sandbox:" not in result.text


async def test_a_background_job_carries_the_policy_too(
    sandboxed: BashTool, executor: Any, caller: Any
) -> None:
    arguments = {"command": "sleep 5", "description": "Sleep", "run_in_background": True}
    result = await _call(sandboxed, arguments, caller)
    assert result.text.startswith("started background job")
    assert executor.start_specs[0].sandbox == dataclasses.replace(
        POLICY, workspace=Path(caller.cwd)
    )
