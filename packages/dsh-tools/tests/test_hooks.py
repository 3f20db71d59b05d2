"""Pre-execute policy hooks and post-execute result hooks."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from dsh_tools import (
    ALLOW,
    Deny,
    ToolCall,
    ToolContent,
    ToolDefinition,
    ToolErrorInfo,
    ToolExecution,
    ToolRegistry,
    ToolResult,
)

ECHO = ToolCall(call_id="c1", name="echo", arguments='{"text": "hi"}')


async def test_a_deny_is_a_denied_error_result_with_the_reason(registry: ToolRegistry) -> None:
    registry.add_pre_execute_hook(lambda execution: Deny("echo is not allowed here"))
    result = await registry.execute(ECHO)
    assert result.is_error
    assert result.text == "Error: echo is not allowed here"
    assert result.error == ToolErrorInfo(name="ToolDeniedError", code="DENIED")


async def test_a_denied_call_never_runs_the_body(registry: ToolRegistry, echo: Any) -> None:
    registry.add_pre_execute_hook(lambda execution: Deny("no"))
    await registry.execute(ECHO)
    assert echo.seen == []


async def test_allow_and_none_let_the_call_run(registry: ToolRegistry) -> None:
    registry.add_pre_execute_hook(lambda execution: ALLOW)
    registry.add_pre_execute_hook(lambda execution: None)
    assert (await registry.execute(ECHO)).text == "hi"


async def test_an_async_pre_hook_is_awaited(registry: ToolRegistry) -> None:
    async def deny_echo(execution: ToolExecution) -> Deny | None:
        return Deny("async no") if execution.tool_name == "echo" else None

    registry.add_pre_execute_hook(deny_echo)
    assert (await registry.execute(ECHO)).text == "Error: async no"


async def test_pre_hooks_see_the_execution(registry: ToolRegistry, caller: Any) -> None:
    seen: list[ToolExecution] = []
    registry.add_pre_execute_hook(lambda execution: seen.append(execution))
    await registry.execute(ECHO, caller)
    assert seen[0].call_id == "c1"
    assert seen[0].arguments == {"text": "hi"}
    assert seen[0].caller is caller


async def test_the_first_deny_wins_and_later_hooks_do_not_run(registry: ToolRegistry) -> None:
    calls: list[str] = []

    def first(execution: ToolExecution) -> Deny:
        calls.append("first")
        return Deny("first says no")

    def second(execution: ToolExecution) -> None:
        calls.append("second")

    registry.add_pre_execute_hook(first)
    registry.add_pre_execute_hook(second)
    assert (await registry.execute(ECHO)).text == "Error: first says no"
    assert calls == ["first"]


async def test_a_raising_pre_hook_fails_closed(registry: ToolRegistry, echo: Any) -> None:
    def broken(execution: ToolExecution) -> None:
        raise RuntimeError("policy store offline")

    registry.add_pre_execute_hook(broken)
    result = await registry.execute(ECHO)
    assert result.error == ToolErrorInfo(name="ToolHookError", code="HOOK_ERROR")
    assert result.text == "Error: pre-execute hook failed: RuntimeError: policy store offline"
    assert echo.seen == []


async def test_a_pre_hook_returning_something_else_fails_closed(registry: ToolRegistry) -> None:
    registry.add_pre_execute_hook(lambda execution: "yes")  # type: ignore[arg-type,return-value]
    result = await registry.execute(ECHO)
    assert result.error == ToolErrorInfo(name="ToolHookError", code="HOOK_ERROR")
    assert "returned str, not Allow, Deny, Ask or None" in result.text


async def test_a_disposed_pre_hook_no_longer_runs(registry: ToolRegistry) -> None:
    with registry.add_pre_execute_hook(lambda execution: Deny("no")):
        assert (await registry.execute(ECHO)).is_error
    assert (await registry.execute(ECHO)).text == "hi"


async def test_a_post_hook_observes_the_result(registry: ToolRegistry) -> None:
    seen: list[tuple[str, str]] = []
    registry.add_post_execute_hook(
        lambda execution, result: seen.append((execution.call_id, result.text))
    )
    result = await registry.execute(ECHO)
    assert seen == [("c1", "hi")]
    assert result.text == "hi"


async def test_a_post_hook_can_replace_the_result(registry: ToolRegistry) -> None:
    registry.add_post_execute_hook(lambda execution, result: ToolResult.ok(result.text.upper()))
    assert (await registry.execute(ECHO)).text == "HI"


async def test_post_hooks_chain_in_registration_order(registry: ToolRegistry) -> None:
    async def exclaim(execution: ToolExecution, result: ToolResult) -> ToolResult:
        return ToolResult.ok(result.text + "!")

    registry.add_post_execute_hook(lambda execution, result: ToolResult.ok(result.text + "?"))
    registry.add_post_execute_hook(exclaim)
    assert (await registry.execute(ECHO)).text == "hi?!"


async def test_post_hooks_see_body_errors() -> None:
    class NoArgs(BaseModel):
        pass

    class Failing(ToolDefinition[NoArgs]):
        name = "failing"
        description = "Fails."
        parameters = NoArgs

        async def execute(self, args: NoArgs, execution: ToolExecution) -> ToolContent:
            raise OSError("disk on fire")

    tools = ToolRegistry()
    tools.register(Failing())
    seen: list[ToolResult] = []
    tools.add_post_execute_hook(lambda execution, result: seen.append(result))
    await tools.execute(ToolCall(call_id="c1", name="failing", arguments="{}"))
    assert [result.text for result in seen] == ["Error: disk on fire"]


async def test_post_hooks_do_not_run_for_invalid_arguments(registry: ToolRegistry) -> None:
    seen: list[ToolResult] = []
    registry.add_post_execute_hook(lambda execution, result: seen.append(result))
    await registry.execute(ToolCall(call_id="c1", name="echo", arguments="{}"))
    assert seen == []


async def test_post_hooks_do_not_run_for_denied_calls(registry: ToolRegistry) -> None:
    seen: list[ToolResult] = []
    registry.add_pre_execute_hook(lambda execution: Deny("no"))
    registry.add_post_execute_hook(lambda execution, result: seen.append(result))
    await registry.execute(ECHO)
    assert seen == []


async def test_a_raising_post_hook_turns_the_result_into_a_hook_error(
    registry: ToolRegistry,
) -> None:
    def broken(execution: ToolExecution, result: ToolResult) -> None:
        raise ValueError("audit log full")

    registry.add_post_execute_hook(broken)
    result = await registry.execute(ECHO)
    assert result.error == ToolErrorInfo(name="ToolHookError", code="HOOK_ERROR")
    assert result.text == "Error: post-execute hook failed: ValueError: audit log full"


async def test_a_disposed_post_hook_no_longer_runs(registry: ToolRegistry) -> None:
    disposer = registry.add_post_execute_hook(lambda execution, result: ToolResult.ok("replaced"))
    disposer()
    assert (await registry.execute(ECHO)).text == "hi"
