"""text_response, tool_call_response and assemble_message build and fold well-formed streams."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_llm import (
    BlockEndChunk,
    BlockStartChunk,
    FinishChunk,
    ModelSource,
    ReasoningBlock,
    StreamChunk,
    TextBlock,
    TextDeltaChunk,
    ToolCallBlock,
    ToolCallDeltaChunk,
    Usage,
    UsageChunk,
    assemble_message,
)
from dsh_llm.testing import text_response, tool_call_response

SOURCE = ModelSource(provider="scripted", model="m")


def _types(chunks: list[StreamChunk]) -> list[str]:
    return [chunk.type for chunk in chunks]


def test_text_response_is_start_deltas_end_usage_stop() -> None:
    chunks = text_response("hello world")
    assert _types(chunks) == [
        "block-start",
        "text-delta",
        "text-delta",
        "block-end",
        "usage",
        "finish",
    ]
    assert chunks[0] == BlockStartChunk(index=0, block_type="text")
    assert chunks[3] == BlockEndChunk(index=0, block=TextBlock(text="hello world"))
    assert chunks[-1] == FinishChunk.model_validate({"reason": {"kind": "stop"}})


def test_text_response_default_usage_counts_characters() -> None:
    assert text_response("abc")[-2] == UsageChunk(usage=Usage(input_tokens=10, output_tokens=3))


def test_text_response_uses_the_given_usage() -> None:
    usage = Usage(input_tokens=1, output_tokens=2, reasoning_tokens=3)
    assert text_response("abc", usage=usage)[-2] == UsageChunk(usage=usage)


def test_text_response_with_reasoning_puts_reasoning_first() -> None:
    chunks = text_response("done", reasoning="think")
    assert chunks[0] == BlockStartChunk(index=0, block_type="reasoning")
    assert BlockStartChunk(index=1, block_type="text") in chunks
    message = assemble_message(chunks, SOURCE)
    assert message.content == [ReasoningBlock(text="think"), TextBlock(text="done")]


@given(st.text())
def test_text_response_deltas_join_to_the_text(text: str) -> None:
    deltas = [c.text for c in text_response(text) if isinstance(c, TextDeltaChunk)]
    assert "".join(deltas) == text
    assert assemble_message(text_response(text), SOURCE).text == text


def test_tool_call_response_splits_arguments_over_two_deltas() -> None:
    chunks = tool_call_response(("c1", "bash", {"command": "ls"}))
    deltas = [c for c in chunks if isinstance(c, ToolCallDeltaChunk)]
    assert len(deltas) == 2
    assert "".join(d.arguments_delta for d in deltas) == json.dumps({"command": "ls"})
    assert all(d.id == "c1" and d.name == "bash" for d in deltas)


def test_tool_call_response_finishes_with_tool_calls() -> None:
    chunks = tool_call_response(("c1", "bash", "{}"))
    last = chunks[-1]
    assert isinstance(last, FinishChunk)
    assert last.reason.kind == "tool-calls"
    assert chunks[-2] == UsageChunk(usage=Usage(input_tokens=10, output_tokens=5))


def test_tool_call_response_keeps_raw_argument_text() -> None:
    call = ToolCallBlock(id="c1", name="bash", arguments='{"command":  "ls"}')
    assert assemble_message(tool_call_response(call), SOURCE).tool_calls == [call]


def test_tool_call_response_with_text_and_two_calls_numbers_blocks_in_order() -> None:
    chunks = tool_call_response(("c1", "a", "{}"), ("c2", "b", "{}"), text="calling")
    starts = [c for c in chunks if isinstance(c, BlockStartChunk)]
    assert [(s.index, s.block_type) for s in starts] == [
        (0, "text"),
        (1, "tool-call"),
        (2, "tool-call"),
    ]
    message = assemble_message(chunks, SOURCE)
    assert message.text == "calling"
    assert [call.id for call in message.tool_calls] == ["c1", "c2"]


def test_tool_call_response_needs_a_call() -> None:
    with pytest.raises(ValueError, match="at least one call"):
        tool_call_response()


def test_assembled_message_carries_role_source_and_id() -> None:
    message = assemble_message(text_response("hi"), SOURCE, id="a1")
    assert message.to_wire() == {
        "role": "assistant",
        "content": [{"type": "text", "text": "hi"}],
        "source": {"kind": "model", "provider": "scripted", "model": "m"},
        "id": "a1",
    }


def test_assemble_rebuilds_unfinished_blocks_from_their_deltas() -> None:
    chunks = tool_call_response(("c1", "bash", '{"command":"ls"}'), text="look")
    cut = [c for c in chunks if not isinstance(c, BlockEndChunk | UsageChunk | FinishChunk)]
    message = assemble_message(cut, SOURCE)
    assert message.content == [
        TextBlock(text="look"),
        ToolCallBlock(id="c1", name="bash", arguments='{"command":"ls"}'),
    ]


def test_assemble_of_no_chunks_is_an_empty_message() -> None:
    assert assemble_message([], SOURCE).content == []
