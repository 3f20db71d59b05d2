"""ToolResult: constructors, the durable form, and the tool-result message."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from dsh_llm import MESSAGE_ADAPTER, ImageBlock, TextBlock, ToolResultMessage
from dsh_tools import (
    ToolAbortedError,
    ToolErrorInfo,
    ToolResult,
    UnknownToolError,
    freeze_json,
)


def test_ok_from_text_is_one_text_block() -> None:
    assert ToolResult.ok("done").content == [TextBlock(text="done")]


def test_ok_from_blocks_keeps_them() -> None:
    blocks: list[TextBlock | ImageBlock] = [
        TextBlock(text="a"),
        ImageBlock(data="aGk=", mime_type="image/png"),
    ]
    assert ToolResult.ok(blocks).content == blocks


def test_failure_text_is_error_colon_message() -> None:
    result = ToolResult.failure("no such file", code="NOT_FOUND", name="FileNotFoundError")
    assert result.is_error
    assert result.text == "Error: no such file"
    assert result.error == ToolErrorInfo(name="FileNotFoundError", code="NOT_FOUND")


def test_durable_form_of_a_success_is_content_and_is_error() -> None:
    assert ToolResult.ok("hi").to_durable() == {
        "content": [{"type": "text", "text": "hi"}],
        "isError": False,
    }


def test_durable_form_of_a_failure_carries_error_info_and_meta() -> None:
    result = ToolResult.failure("boom", code="TOOL_ERROR", name="RuntimeError", meta={"ms": 3})
    assert result.to_durable() == {
        "content": [{"type": "text", "text": "Error: boom"}],
        "isError": True,
        "error": {"name": "RuntimeError", "code": "TOOL_ERROR"},
        "meta": {"ms": 3},
    }


def test_from_exception_uses_the_tool_error_code() -> None:
    result = ToolResult.from_exception(UnknownToolError("x", ["a"]))
    assert result.error == ToolErrorInfo(name="UnknownToolError", code="UNKNOWN_TOOL")


def test_aborted_errors_carry_the_v0_abort_name() -> None:
    result = ToolResult.from_exception(ToolAbortedError(before_dispatch=True))
    assert result.to_durable()["error"] == {"name": "AbortError", "code": "ABORTED_BEFORE_DISPATCH"}
    assert result.text == "Error: tool call aborted before dispatch"


def test_to_message_is_the_v0_tool_result_message() -> None:
    message = ToolResult.ok("alpha\n").to_message("call-1", id="m-1")
    assert isinstance(message, ToolResultMessage)
    assert message.to_wire() == {
        "source": {"kind": "tool", "callId": "call-1"},
        "content": [
            {
                "type": "tool-result",
                "toolCallId": "call-1",
                "content": [{"type": "text", "text": "alpha\n"}],
                "isError": False,
            }
        ],
        "role": "user",
        "id": "m-1",
    }
    assert MESSAGE_ADAPTER.validate_python(message.to_wire()) == message


def test_to_message_of_a_failure_marks_the_block_as_error() -> None:
    message = ToolResult.failure("x", code="C").to_message("call-1")
    assert message.result.is_error


def test_results_are_immutable() -> None:
    result = ToolResult.ok("x")
    with pytest.raises(ValidationError):
        result.is_error = True  # type: ignore[misc]


def test_freeze_json_makes_mappings_read_only_and_lists_tuples() -> None:
    frozen = freeze_json({"a": [1, {"b": 2}]})
    assert frozen == {"a": (1, {"b": 2})}
    with pytest.raises(TypeError):
        frozen["a"] = 1
