"""ToolRegistry.execute: success, unknown tools, argument validation and body errors."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, model_validator

from dsh_llm import ImageBlock, TextBlock, ToolCallBlock
from dsh_tools import (
    ToolCall,
    ToolCaller,
    ToolContent,
    ToolDefinition,
    ToolError,
    ToolErrorInfo,
    ToolExecution,
    ToolRegistry,
    ToolResult,
)


class NoArgs(BaseModel):
    pass


class Raising(ToolDefinition[NoArgs]):
    name = "raising"
    description = "Raises."
    parameters = NoArgs

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def execute(self, args: NoArgs, execution: ToolExecution) -> ToolContent:
        raise self.error


class Returning(ToolDefinition[NoArgs]):
    name = "returning"
    description = "Returns what it was given."
    parameters = NoArgs

    def __init__(self, output: Any) -> None:
        self.output = output

    async def execute(self, args: NoArgs, execution: ToolExecution) -> ToolResult | ToolContent:
        return self.output  # type: ignore[no-any-return]


class Nested(BaseModel):
    inner: int


class NestedArgs(BaseModel):
    outer: Nested


class NestedTool(Returning):
    name = "nested"
    parameters = NestedArgs  # type: ignore[assignment]


def _call(name: str, arguments: str, call_id: str = "call-1") -> ToolCall:
    return ToolCall(call_id=call_id, name=name, arguments=arguments)


async def _run(tool: ToolDefinition[Any], arguments: str = "{}") -> ToolResult:
    tools = ToolRegistry()
    tools.register(tool)
    return await tools.execute(_call(tool.name, arguments))


async def test_a_successful_call_returns_the_rendered_text(registry: ToolRegistry) -> None:
    result = await registry.execute(_call("echo", '{"text": "ab", "repeat": 2}'))
    assert result == ToolResult(content=[TextBlock(text="abab")])
    assert result.to_durable() == {"content": [{"type": "text", "text": "abab"}], "isError": False}


async def test_the_body_gets_validated_args_and_the_execution(
    registry: ToolRegistry, echo: Any, caller: ToolCaller
) -> None:
    await registry.execute(_call("echo", '{"text": "x"}', call_id="c-7"), caller)
    args, execution = echo.seen[0]
    assert args.text == "x"
    assert args.repeat == 1
    assert execution.call_id == "c-7"
    assert execution.tool_name == "echo"
    assert execution.caller is caller
    assert execution.session_id == "session-1"
    assert execution.caller.cwd == "/home/user/project"


async def test_execution_without_a_caller_has_no_session(registry: ToolRegistry, echo: Any) -> None:
    await registry.execute(_call("echo", '{"text": "x"}'))
    execution = echo.seen[0][1]
    assert execution.caller is None
    assert execution.session_id is None


async def test_execution_arguments_are_the_parsed_json_deep_frozen(
    registry: ToolRegistry, echo: Any
) -> None:
    await registry.execute(_call("echo", '{"text": "x", "extra": {"list": [1, {"a": 2}]}}'))
    arguments = echo.seen[0][1].arguments
    assert arguments["extra"]["list"] == (1, {"a": 2})
    with pytest.raises(TypeError):
        arguments["text"] = "changed"
    with pytest.raises(TypeError):
        arguments["extra"]["list"][1]["a"] = 3


async def test_a_tool_call_block_is_accepted_as_the_call(registry: ToolRegistry) -> None:
    block = ToolCallBlock(id="c1", name="echo", arguments='{"text": "hi"}')
    assert (await registry.execute(block)).text == "hi"


async def test_empty_argument_text_means_an_empty_object() -> None:
    assert (await _run(Returning("fine"), "")).text == "fine"


async def test_a_returned_tool_result_is_used_as_is() -> None:
    given = ToolResult.ok("done", meta={"exitCode": 0})
    assert await _run(Returning(given)) is given


async def test_returned_blocks_become_the_content() -> None:
    blocks = [TextBlock(text="see"), ImageBlock(data="aGk=", mime_type="image/png")]
    assert (await _run(Returning(blocks))).content == blocks


async def test_output_that_is_not_content_is_an_invalid_output_error() -> None:
    result = await _run(Returning(42))
    assert result.is_error
    assert result.error == ToolErrorInfo(name="InvalidToolOutputError", code="INVALID_TOOL_OUTPUT")
    assert "returned int" in result.text


async def test_an_unknown_tool_is_an_error_result_naming_the_available_tools(
    registry: ToolRegistry,
) -> None:
    result = await registry.execute(_call("nope", "{}"))
    assert result.is_error
    assert result.error == ToolErrorInfo(name="UnknownToolError", code="UNKNOWN_TOOL")
    assert result.text == "Error: unknown tool 'nope'; available tools: echo, wait"


async def test_a_missing_field_is_invalid_args_with_a_stable_message(
    registry: ToolRegistry,
) -> None:
    result = await registry.execute(_call("echo", "{}"))
    assert result.error == ToolErrorInfo(name="InvalidToolArgumentsError", code="INVALID_ARGS")
    assert result.text == "Error: Invalid arguments for tool echo: text: field required"


async def test_every_invalid_field_is_listed(registry: ToolRegistry) -> None:
    result = await registry.execute(_call("echo", '{"text": 5, "repeat": 0}'))
    assert result.text == (
        "Error: Invalid arguments for tool echo: text: input should be a valid string; "
        "repeat: input should be greater than or equal to 1"
    )


async def test_a_nested_field_is_named_by_its_path() -> None:
    result = await _run(NestedTool(None), '{"outer": {"inner": "x"}}')
    assert result.text.startswith("Error: Invalid arguments for tool nested: outer.inner: ")


async def test_invalid_args_messages_carry_no_documentation_links(registry: ToolRegistry) -> None:
    result = await registry.execute(_call("echo", '{"text": [1]}'))
    assert "http" not in result.text


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("not json", "arguments are not valid JSON (Expecting value at line 1 column 1)"),
        ("[1, 2]", "arguments must be a JSON object, not an array"),
        ('"text"', "arguments must be a JSON object, not str"),
        ('{"text": NaN}', "arguments must be losslessly JSON-serializable (NaN is not)"),
    ],
)
async def test_argument_text_that_is_not_a_json_object_is_invalid_args(
    registry: ToolRegistry, raw: str, problem: str
) -> None:
    result = await registry.execute(_call("echo", raw))
    assert result.text == f"Error: Invalid arguments for tool echo: {problem}"
    assert result.error is not None
    assert result.error.code == "INVALID_ARGS"


async def test_a_parameters_validator_raising_a_non_value_error_is_an_error_result() -> None:
    class Picky(BaseModel):
        @model_validator(mode="before")
        @classmethod
        def _explode(cls, data: Any) -> Any:
            raise LookupError("validator crashed")

    class PickyTool(Returning):
        name = "picky"
        parameters = Picky  # type: ignore[assignment]

    result = await _run(PickyTool("never"))
    assert result.error == ToolErrorInfo(name="LookupError", code="TOOL_ERROR")
    assert result.text == "Error: validator crashed"


async def test_invalid_args_never_run_the_body(registry: ToolRegistry, echo: Any) -> None:
    await registry.execute(_call("echo", "{}"))
    assert echo.seen == []


async def test_an_exception_in_the_body_is_an_error_result_named_after_its_class() -> None:
    result = await _run(Raising(FileNotFoundError("no such file: a.txt")))
    assert result.is_error
    assert result.text == "Error: no such file: a.txt"
    assert result.error == ToolErrorInfo(name="FileNotFoundError", code="TOOL_ERROR")


async def test_an_exception_without_a_message_shows_its_class_name() -> None:
    assert (await _run(Raising(KeyError()))).text == "Error: KeyError"


async def test_a_tool_error_keeps_its_own_code() -> None:
    result = await _run(Raising(ToolError("quota exceeded", code="QUOTA")))
    assert result.error == ToolErrorInfo(name="ToolError", code="QUOTA")
    assert result.text == "Error: quota exceeded"


async def test_a_tool_error_subclass_is_named_after_the_subclass() -> None:
    class NotFoundError(ToolError):
        default_code = "NOT_FOUND"

    result = await _run(Raising(NotFoundError("gone")))
    assert result.error == ToolErrorInfo(name="NotFoundError", code="NOT_FOUND")


async def test_concurrency_safety_is_what_the_tool_says(registry: ToolRegistry) -> None:
    assert registry.is_concurrency_safe(_call("echo", '{"text": "x", "parallel": true}'))
    assert not registry.is_concurrency_safe(_call("echo", '{"text": "x"}'))


async def test_a_tool_without_a_concurrency_rule_runs_alone(registry: ToolRegistry) -> None:
    assert not registry.is_concurrency_safe(_call("wait", "{}"))


@pytest.mark.parametrize("call", [_call("nope", "{}"), _call("echo", "{}"), _call("echo", "{")])
async def test_unknown_or_invalid_calls_run_alone(registry: ToolRegistry, call: ToolCall) -> None:
    assert not registry.is_concurrency_safe(call)


async def test_only_an_exact_true_means_concurrency_safe() -> None:
    class Truthy(Returning):
        def is_concurrency_safe(self, args: NoArgs) -> bool:
            return 1  # type: ignore[return-value]

    tools = ToolRegistry()
    tools.register(Truthy("x"))
    assert not tools.is_concurrency_safe(_call("returning", "{}"))


async def test_a_raising_concurrency_check_means_run_alone() -> None:
    class Failing(Returning):
        def is_concurrency_safe(self, args: NoArgs) -> bool:
            raise RuntimeError("undecided")

    tools = ToolRegistry()
    tools.register(Failing("x"))
    assert not tools.is_concurrency_safe(_call("returning", "{}"))


class Reporting(ToolDefinition[NoArgs]):
    name = "reporting"
    description = "Reports two pieces of output while it runs, then returns."
    parameters = NoArgs

    async def execute(self, args: NoArgs, execution: ToolExecution) -> ToolContent:
        execution.report_output("first ")
        execution.report_output("")  # nothing to tell: the watcher is not called
        execution.report_output("second")
        return "done"


async def test_a_body_reports_output_to_the_watcher_with_its_execution() -> None:
    registry = ToolRegistry()
    registry.register(Reporting())
    heard: list[tuple[str, str]] = []
    result = await registry.execute(
        ToolCall("c1", "reporting", "{}"),
        on_output=lambda execution, text: heard.append((execution.call_id, text)),
    )
    assert result.text == "done"
    assert heard == [("c1", "first "), ("c1", "second")]


async def test_reported_output_without_a_watcher_or_to_a_failing_one_changes_nothing() -> None:
    registry = ToolRegistry()
    registry.register(Reporting())

    def failing(execution: ToolExecution, text: str) -> None:
        raise RuntimeError("the display broke")

    unwatched = await registry.execute(ToolCall("c1", "reporting", "{}"))
    watched = await registry.execute(ToolCall("c2", "reporting", "{}"), on_output=failing)
    assert (unwatched.is_error, unwatched.text) == (False, "done")
    assert (watched.is_error, watched.text) == (False, "done")
