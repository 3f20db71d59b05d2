"""Construction, discrimination and strict validation of the wire models."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from dsh_llm import (
    CONTENT_BLOCK_ADAPTER,
    MESSAGE_ADAPTER,
    STREAM_CHUNK_ADAPTER,
    AssistantMessage,
    BlockStartChunk,
    FinishChunk,
    FinishReason,
    ImageBlock,
    LlmFailure,
    ModelSource,
    PluginSource,
    TextBlock,
    TextDeltaChunk,
    ToolCallBlock,
    ToolResultBlock,
    ToolResultMessage,
    ToolSource,
    Usage,
    UserMessage,
    UserSource,
)

MODEL = ModelSource(provider="deepseek", model="deepseek-chat")


def test_a_block_built_in_python_writes_its_type_tag() -> None:
    assert TextBlock(text="hi").to_wire() == {"type": "text", "text": "hi"}


def test_a_source_built_in_python_writes_its_kind_tag() -> None:
    assert ToolSource(call_id="c1").to_wire() == {"kind": "tool", "callId": "c1"}


def test_snake_case_and_camel_case_names_are_both_accepted() -> None:
    assert ToolSource(call_id="c1") == ToolSource.model_validate({"callId": "c1"})
    assert ToolSource.model_validate({"call_id": "c1"}).call_id == "c1"


def test_image_block_writes_mime_type_in_camel_case() -> None:
    image = ImageBlock(data="aGVsbG8=", mime_type="image/png")
    assert image.to_wire() == {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"}


def test_user_message_from_text_writes_role_and_user_source() -> None:
    message = UserMessage.from_text("hello", id="m1")
    assert message.to_wire() == {
        "content": [{"type": "text", "text": "hello"}],
        "source": {"kind": "user"},
        "role": "user",
        "id": "m1",
    }


def test_user_message_from_text_accepts_a_plugin_source() -> None:
    message = UserMessage.from_text("ctx", source=PluginSource(plugin="p"))
    assert message.source == PluginSource(plugin="p")


def test_role_is_written_only_when_given() -> None:
    message = UserMessage(content=[TextBlock(text="x")], source=UserSource())
    assert "role" not in message.to_wire()
    assert message.role == "user"


def test_message_union_tells_a_tool_result_from_a_user_message_by_source() -> None:
    raw = {
        "role": "user",
        "source": {"kind": "tool", "callId": "c1"},
        "content": [{"type": "tool-result", "toolCallId": "c1", "content": []}],
    }
    assert isinstance(MESSAGE_ADAPTER.validate_python(raw), ToolResultMessage)


def test_message_union_reads_an_assistant_message_without_role_by_its_model_source() -> None:
    raw = {"content": [], "source": {"kind": "model", "provider": "p", "model": "m"}}
    assert isinstance(MESSAGE_ADAPTER.validate_python(raw), AssistantMessage)


def test_message_union_accepts_model_instances() -> None:
    message = UserMessage.from_text("hi")
    assert MESSAGE_ADAPTER.validate_python(message) is message


def test_message_union_refuses_an_unknown_role() -> None:
    with pytest.raises(ValidationError, match="not a message"):
        MESSAGE_ADAPTER.validate_python({"role": "system", "content": [], "source": {}})


def test_tool_result_message_refuses_a_block_for_another_call() -> None:
    with pytest.raises(
        ValidationError, match="answers 'c2' but the message source names call 'c1'"
    ):
        ToolResultMessage(
            source=ToolSource(call_id="c1"),
            content=[ToolResultBlock(tool_call_id="c2", content=[])],
        )


def test_tool_result_message_needs_exactly_one_block() -> None:
    with pytest.raises(ValidationError):
        ToolResultMessage(source=ToolSource(call_id="c1"), content=[])


def test_user_message_refuses_a_tool_call_block() -> None:
    with pytest.raises(ValidationError):
        UserMessage.model_validate(
            {
                "content": [{"type": "tool-call", "id": "c", "name": "n", "arguments": "{}"}],
                "source": {"kind": "user"},
            }
        )


def test_assistant_message_refuses_a_user_source() -> None:
    with pytest.raises(ValidationError):
        AssistantMessage.model_validate({"content": [], "source": {"kind": "user"}})


def test_a_string_is_not_an_integer_index() -> None:
    with pytest.raises(ValidationError, match="valid integer"):
        STREAM_CHUNK_ADAPTER.validate_python({"type": "text-delta", "index": "1", "text": "x"})


def test_a_boolean_is_not_an_integer_token_count() -> None:
    with pytest.raises(ValidationError):
        Usage.model_validate({"inputTokens": True, "outputTokens": 1})


def test_a_negative_token_count_is_refused() -> None:
    with pytest.raises(ValidationError):
        Usage(input_tokens=-1, output_tokens=0)


def test_a_number_is_not_tool_call_arguments_text() -> None:
    with pytest.raises(ValidationError):
        ToolCallBlock.model_validate({"id": "c", "name": "n", "arguments": 3})


def test_an_integer_is_not_an_is_error_flag() -> None:
    with pytest.raises(ValidationError):
        ToolResultBlock.model_validate({"toolCallId": "c", "content": [], "isError": 1})


def test_unknown_keys_on_a_block_are_refused() -> None:
    with pytest.raises(ValidationError, match="Extra inputs"):
        CONTENT_BLOCK_ADAPTER.validate_python({"type": "text", "text": "x", "colour": "red"})


def test_unknown_keys_on_a_user_source_are_kept() -> None:
    source = UserSource.model_validate({"kind": "user", "rpcId": "r", "client": "web"})
    assert source.to_wire() == {"kind": "user", "rpcId": "r", "client": "web"}


def test_unknown_chunk_type_is_refused_naming_the_tag() -> None:
    with pytest.raises(ValidationError, match="'sparkle'"):
        STREAM_CHUNK_ADAPTER.validate_python({"type": "sparkle", "index": 0})


def test_chunk_union_picks_the_class_of_the_type_tag() -> None:
    chunk = STREAM_CHUNK_ADAPTER.validate_python({"type": "text-delta", "index": 2, "text": "a"})
    assert chunk == TextDeltaChunk(index=2, text="a")


def test_block_start_refuses_an_unknown_block_type() -> None:
    with pytest.raises(ValidationError):
        BlockStartChunk.model_validate({"index": 0, "blockType": "video"})


def test_finish_error_carries_an_llm_failure() -> None:
    failure = LlmFailure(message="slow down", code="RATE_LIMITED", status=429, retry_after_ms=1500)
    chunk = FinishChunk(reason=FinishReason(kind="error", error=failure))
    assert chunk.to_wire() == {
        "type": "finish",
        "reason": {
            "kind": "error",
            "error": {
                "message": "slow down",
                "code": "RATE_LIMITED",
                "status": 429,
                "retryAfterMs": 1500,
            },
        },
    }


def test_finish_error_without_failure_is_refused() -> None:
    with pytest.raises(ValidationError, match="needs an error"):
        FinishReason(kind="error")


def test_finish_stop_with_a_failure_is_refused() -> None:
    with pytest.raises(ValidationError, match="carries no error"):
        FinishReason(kind="stop", error=LlmFailure(message="m", code="C"))


def test_finish_aborted_may_carry_a_failure() -> None:
    reason = FinishReason(kind="aborted", error=LlmFailure(message="cancelled", code="ABORTED"))
    assert reason.error is not None


def test_models_are_frozen() -> None:
    block = TextBlock(text="x")
    with pytest.raises(ValidationError):
        block.text = "y"  # type: ignore[misc]


def test_wire_json_is_compact_and_keeps_non_ascii() -> None:
    assert TextBlock(text="héllo 世界").to_wire_json() == '{"type":"text","text":"héllo 世界"}'


def test_model_source_replay_state_is_opaque_json() -> None:
    source = ModelSource(provider="p", model="m", replay_state={"cursor": [1, 2]})
    assert source.to_wire()["replayState"] == {"cursor": [1, 2]}
    assert MODEL.to_wire() == {"kind": "model", "provider": "deepseek", "model": "deepseek-chat"}
