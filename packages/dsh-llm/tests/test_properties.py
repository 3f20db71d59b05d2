"""Property tests: every chunk and message survives its own wire form."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from dsh_llm import (
    MESSAGE_ADAPTER,
    STREAM_CHUNK_ADAPTER,
    AssistantMessage,
    BlockEndChunk,
    BlockStartChunk,
    BlockType,
    FinishChunk,
    FinishKind,
    FinishReason,
    ImageBlock,
    LlmFailure,
    Message,
    ModelSource,
    PluginSource,
    ReasoningBlock,
    ReasoningDeltaChunk,
    StreamChunk,
    TextBlock,
    TextDeltaChunk,
    ToolCallBlock,
    ToolCallDeltaChunk,
    ToolResultBlock,
    ToolResultMessage,
    ToolSource,
    Usage,
    UsageChunk,
    UserMessage,
    UserSource,
)

BLOCK_TYPES: list[BlockType] = ["text", "reasoning", "image", "tool-call"]
STOP_KINDS: list[FinishKind] = ["stop", "tool-calls", "max-tokens", "aborted"]


def _image(data: str, mime_type: str) -> ImageBlock:
    return ImageBlock(data=data, mime_type=mime_type)


texts = st.text(max_size=20)
indexes = st.integers(min_value=0, max_value=1000)
counts = st.integers(min_value=0, max_value=10**9)
optional_counts = st.none() | counts

assistant_blocks = st.one_of(
    st.builds(TextBlock, text=texts),
    st.builds(ReasoningBlock, text=texts),
    st.builds(_image, texts, texts),
    st.builds(ToolCallBlock, id=texts, name=texts, arguments=texts),
)
usages = st.builds(
    lambda i, o, cr, cw, r: Usage(
        input_tokens=i,
        output_tokens=o,
        cache_read_tokens=cr,
        cache_write_tokens=cw,
        reasoning_tokens=r,
    ),
    counts,
    counts,
    optional_counts,
    optional_counts,
    optional_counts,
)
failures = st.builds(
    lambda m, c, s, r: LlmFailure(message=m, code=c, status=s, retry_after_ms=r),
    texts,
    texts,
    st.none() | st.integers(100, 599),
    optional_counts,
)
reasons = st.one_of(
    st.sampled_from(STOP_KINDS).map(lambda kind: FinishReason(kind=kind)),
    failures.map(lambda failure: FinishReason(kind="error", error=failure)),
    failures.map(lambda failure: FinishReason(kind="aborted", error=failure)),
)
chunks: st.SearchStrategy[StreamChunk] = st.one_of(
    st.builds(
        lambda i, t: BlockStartChunk(index=i, block_type=t), indexes, st.sampled_from(BLOCK_TYPES)
    ),
    st.builds(TextDeltaChunk, index=indexes, text=texts),
    st.builds(ReasoningDeltaChunk, index=indexes, text=texts),
    st.builds(
        lambda i, c, n, a: ToolCallDeltaChunk(index=i, id=c, name=n, arguments_delta=a),
        indexes,
        texts,
        st.none() | texts,
        texts,
    ),
    st.builds(BlockEndChunk, index=indexes, block=assistant_blocks),
    st.builds(UsageChunk, usage=usages),
    st.builds(FinishChunk, reason=reasons),
)
user_blocks = st.one_of(st.builds(TextBlock, text=texts), st.builds(_image, texts, texts))
messages: st.SearchStrategy[Message] = st.one_of(
    st.builds(
        UserMessage,
        content=st.lists(user_blocks, max_size=3),
        source=st.one_of(st.builds(UserSource), st.builds(PluginSource, plugin=texts)),
    ),
    st.builds(
        AssistantMessage,
        content=st.lists(assistant_blocks, max_size=3),
        source=st.builds(ModelSource, provider=texts, model=texts),
        id=st.none() | texts,
    ),
    texts.flatmap(
        lambda call_id: st.builds(
            ToolResultMessage,
            source=st.just(ToolSource(call_id=call_id)),
            content=st.lists(
                st.builds(
                    lambda content, is_error: ToolResultBlock(
                        tool_call_id=call_id, content=content, is_error=is_error
                    ),
                    st.lists(user_blocks, max_size=2),
                    st.booleans(),
                ),
                min_size=1,
                max_size=1,
            ),
        )
    ),
)


@given(chunks)
def test_every_chunk_validates_from_its_wire_json(chunk: StreamChunk) -> None:
    assert STREAM_CHUNK_ADAPTER.validate_json(chunk.to_wire_json()) == chunk


@given(chunks)
def test_a_chunks_wire_form_is_stable(chunk: StreamChunk) -> None:
    assert STREAM_CHUNK_ADAPTER.validate_python(chunk.to_wire()).to_wire() == chunk.to_wire()


@given(messages)
def test_every_message_validates_from_its_wire_json_into_its_class(message: Message) -> None:
    again = MESSAGE_ADAPTER.validate_json(message.to_wire_json())
    assert type(again) is type(message)
    assert again == message
