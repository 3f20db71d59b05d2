"""Cancellation: ABORTED during the body, ABORTED_BEFORE_DISPATCH before it, state preserved."""

from __future__ import annotations

import asyncio
from typing import Any

from dsh_tools import ToolCall, ToolErrorInfo, ToolExecution, ToolRegistry, ToolResult

WAIT = ToolCall(call_id="c1", name="wait", arguments="{}")
ECHO = ToolCall(call_id="c2", name="echo", arguments='{"text": "hi"}')


async def _execute_and_report(registry: ToolRegistry, call: ToolCall) -> tuple[ToolResult, int]:
    """Run the call in the current task; report the result and the task's cancelling() count."""
    result = await registry.execute(call)
    task = asyncio.current_task()
    assert task is not None
    return result, task.cancelling()


async def test_cancelling_during_the_body_gives_an_aborted_result(
    registry: ToolRegistry, wait_tool: Any
) -> None:
    task = asyncio.create_task(_execute_and_report(registry, WAIT))
    await wait_tool.started.wait()
    task.cancel()
    result, _ = await task
    assert result.is_error
    assert result.text == "Error: tool call aborted"
    assert result.error == ToolErrorInfo(name="AbortError", code="ABORTED")


async def test_the_callers_cancellation_state_is_preserved(
    registry: ToolRegistry, wait_tool: Any
) -> None:
    task = asyncio.create_task(_execute_and_report(registry, WAIT))
    await wait_tool.started.wait()
    task.cancel()
    _, cancelling = await task
    assert cancelling == 1


async def test_the_body_cleans_up_when_cancelled(registry: ToolRegistry, wait_tool: Any) -> None:
    task = asyncio.create_task(_execute_and_report(registry, WAIT))
    await wait_tool.started.wait()
    task.cancel()
    await task
    assert wait_tool.cleaned_up


async def test_a_body_that_swallows_the_cancellation_is_still_aborted(
    registry: ToolRegistry, wait_tool: Any
) -> None:
    call = ToolCall(call_id="c1", name="wait", arguments='{"swallow": true}')
    task = asyncio.create_task(_execute_and_report(registry, call))
    await wait_tool.started.wait()
    task.cancel()
    result, _ = await task
    assert result.error == ToolErrorInfo(name="AbortError", code="ABORTED")


async def test_a_caller_already_cancelled_gets_aborted_before_dispatch(
    registry: ToolRegistry, echo: Any
) -> None:
    results: list[ToolResult] = []

    async def cancelled_caller() -> None:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        results.append(await registry.execute(ECHO))

    task = asyncio.create_task(cancelled_caller())
    await asyncio.gather(task, return_exceptions=True)
    assert results[0].text == "Error: tool call aborted before dispatch"
    assert results[0].error == ToolErrorInfo(name="AbortError", code="ABORTED_BEFORE_DISPATCH")
    assert echo.seen == []


async def test_a_pending_cancellation_still_reaches_the_caller_after_execute(
    registry: ToolRegistry,
) -> None:
    async def cancelled_caller() -> None:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        await registry.execute(ECHO)
        await asyncio.sleep(0)

    task = asyncio.create_task(cancelled_caller())
    await asyncio.gather(task, return_exceptions=True)
    assert task.cancelled()


async def test_cancelling_during_a_pre_hook_is_aborted_before_dispatch(
    registry: ToolRegistry, echo: Any
) -> None:
    in_hook = asyncio.Event()

    async def slow_policy(execution: ToolExecution) -> None:
        in_hook.set()
        await asyncio.Event().wait()

    registry.add_pre_execute_hook(slow_policy)
    task = asyncio.create_task(_execute_and_report(registry, ECHO))
    await in_hook.wait()
    task.cancel()
    result, cancelling = await task
    assert result.error == ToolErrorInfo(name="AbortError", code="ABORTED_BEFORE_DISPATCH")
    assert cancelling == 1
    assert echo.seen == []


async def test_cancelling_during_a_post_hook_turns_success_into_aborted(
    registry: ToolRegistry,
) -> None:
    in_hook = asyncio.Event()

    async def slow_audit(execution: ToolExecution, result: ToolResult) -> None:
        in_hook.set()
        await asyncio.Event().wait()

    registry.add_post_execute_hook(slow_audit)
    task = asyncio.create_task(_execute_and_report(registry, ECHO))
    await in_hook.wait()
    task.cancel()
    result, _ = await task
    assert result.error == ToolErrorInfo(name="AbortError", code="ABORTED")


async def test_post_hooks_do_not_run_for_an_aborted_call(
    registry: ToolRegistry, wait_tool: Any
) -> None:
    seen: list[ToolResult] = []
    registry.add_post_execute_hook(lambda execution, result: seen.append(result))
    task = asyncio.create_task(_execute_and_report(registry, WAIT))
    await wait_tool.started.wait()
    task.cancel()
    await task
    assert seen == []
