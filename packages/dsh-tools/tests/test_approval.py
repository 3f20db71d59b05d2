"""Calls that need approval: a hook's ``Ask``, a tool's ``approval_reason``, and the approver."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel

from dsh_tools import (
    ALLOW,
    Allow,
    Ask,
    Deny,
    InvalidToolArgumentsError,
    ToolCall,
    ToolContent,
    ToolDefinition,
    ToolErrorInfo,
    ToolExecution,
    ToolRegistry,
)

ECHO = ToolCall(call_id="c1", name="echo", arguments='{"text": "hi"}')
DENIED = ToolErrorInfo(name="ToolDeniedError", code="DENIED")


class Recorder:
    """An approver that records what it was asked and answers ``verdict``."""

    def __init__(self, verdict: Allow | Deny) -> None:
        self.verdict = verdict
        self.asked: list[tuple[str, str | None]] = []

    async def __call__(self, execution: ToolExecution, reason: str | None) -> Allow | Deny:
        self.asked.append((execution.call_id, reason))
        return self.verdict


class RiskyArgs(BaseModel):
    command: str
    escalate: bool = False


class RiskyTool(ToolDefinition[RiskyArgs]):
    """Needs approval when ``escalate`` is set."""

    name = "risky"
    description = "Runs something."
    parameters = RiskyArgs

    def __init__(self) -> None:
        self.ran: list[str] = []

    def approval_reason(self, args: RiskyArgs, execution: ToolExecution) -> str | None:
        return f"escalate: {args.command}" if args.escalate else None

    async def execute(self, args: RiskyArgs, execution: ToolExecution) -> ToolContent:
        self.ran.append(args.command)
        return "done"


def _risky(escalate: bool) -> ToolCall:
    arguments = f'{{"command": "ls", "escalate": {"true" if escalate else "false"}}}'
    return ToolCall(call_id="r1", name="risky", arguments=arguments)


async def test_an_ask_runs_the_body_only_when_the_approver_allows(
    registry: ToolRegistry, echo: Any
) -> None:
    registry.add_pre_execute_hook(lambda execution: Ask("a reason"))
    approver = Recorder(ALLOW)
    result = await registry.execute(ECHO, approver=approver)
    assert not result.is_error
    assert result.text == "hi"
    assert approver.asked == [("c1", "a reason")]
    assert len(echo.seen) == 1


async def test_an_approver_deny_is_a_denied_result_with_its_reason(
    registry: ToolRegistry, echo: Any
) -> None:
    registry.add_pre_execute_hook(lambda execution: Ask())
    result = await registry.execute(ECHO, approver=Recorder(Deny('the user rejected tool "echo"')))
    assert result.is_error
    assert result.text == 'Error: the user rejected tool "echo"'
    assert result.error == DENIED
    assert echo.seen == []


async def test_an_ask_without_an_approver_fails_closed(registry: ToolRegistry, echo: Any) -> None:
    registry.add_pre_execute_hook(lambda execution: Ask("why"))
    result = await registry.execute(ECHO)
    assert result.is_error
    assert result.error == DENIED
    assert "requires approval, but no approval channel is available" in result.text
    assert echo.seen == []


async def test_a_later_deny_beats_an_earlier_ask_and_nobody_is_asked(
    registry: ToolRegistry, echo: Any
) -> None:
    registry.add_pre_execute_hook(lambda execution: Ask("first"))
    registry.add_pre_execute_hook(lambda execution: Deny("policy says no"))
    approver = Recorder(ALLOW)
    result = await registry.execute(ECHO, approver=approver)
    assert result.text == "Error: policy says no"
    assert approver.asked == []
    assert echo.seen == []


async def test_the_tools_own_reason_asks_without_any_hook() -> None:
    registry = ToolRegistry()
    tool = RiskyTool()
    registry.register(tool)
    approver = Recorder(ALLOW)
    assert not (await registry.execute(_risky(False), approver=approver)).is_error
    assert approver.asked == []
    assert not (await registry.execute(_risky(True), approver=approver)).is_error
    assert approver.asked == [("r1", "escalate: ls")]
    assert tool.ran == ["ls", "ls"]


async def test_the_tools_reason_comes_before_a_hooks_reason() -> None:
    registry = ToolRegistry()
    registry.register(RiskyTool())
    registry.add_pre_execute_hook(lambda execution: Ask("hook says ask"))
    approver = Recorder(ALLOW)
    await registry.execute(_risky(True), approver=approver)
    assert approver.asked == [("r1", "escalate: ls; hook says ask")]


async def test_a_raising_approver_fails_closed_as_a_hook_error(
    registry: ToolRegistry, echo: Any
) -> None:
    registry.add_pre_execute_hook(lambda execution: Ask())

    async def broken(execution: ToolExecution, reason: str | None) -> Allow | Deny:
        raise RuntimeError("answerer exploded")

    result = await registry.execute(ECHO, approver=broken)
    assert result.is_error
    assert result.error is not None
    assert result.error.code == "HOOK_ERROR"
    assert "approval hook failed: RuntimeError: answerer exploded" in result.text
    assert echo.seen == []


async def test_an_approver_answering_neither_allow_nor_deny_fails_closed(
    registry: ToolRegistry, echo: Any
) -> None:
    registry.add_pre_execute_hook(lambda execution: Ask())

    async def rogue(execution: ToolExecution, reason: str | None) -> Any:
        return "allowed-once"

    result = await registry.execute(ECHO, approver=rogue)
    assert result.error is not None
    assert result.error.code == "HOOK_ERROR"
    assert "not Allow or Deny" in result.text
    assert echo.seen == []


async def test_cancelled_while_asking_is_aborted_before_dispatch(
    registry: ToolRegistry, echo: Any
) -> None:
    registry.add_pre_execute_hook(lambda execution: Ask())
    asking = asyncio.Event()

    async def slow(execution: ToolExecution, reason: str | None) -> Allow | Deny:
        asking.set()
        await asyncio.Event().wait()
        return ALLOW

    task = asyncio.create_task(registry.execute(ECHO, approver=slow))
    await asking.wait()
    task.cancel()
    result = await task
    assert result.error is not None
    assert result.error.code == "ABORTED_BEFORE_DISPATCH"
    assert echo.seen == []


async def test_a_raising_approval_reason_refuses_the_call_with_its_own_error() -> None:
    class Broken(RiskyTool):
        def approval_reason(self, args: RiskyArgs, execution: ToolExecution) -> str | None:
            raise InvalidToolArgumentsError("risky", ["escalate: not allowed here"])

    registry = ToolRegistry()
    tool = Broken()
    registry.register(tool)
    approver = Recorder(ALLOW)
    result = await registry.execute(_risky(False), approver=approver)
    assert result.error is not None
    assert result.error.code == "INVALID_ARGS"
    assert "escalate: not allowed here" in result.text
    assert tool.ran == []
    assert approver.asked == []
