"""The provider-neutral LLM vocabulary of DSH: messages, content blocks, stream chunks, models.

Every model is a pydantic v2 model in the format v0 wire shape (camelCase keys on the wire,
snake_case attributes in Python). ``to_wire()`` writes exactly the keys that were given.
"""

from dsh_llm._adapters import CONTENT_BLOCK_ADAPTER, MESSAGE_ADAPTER, STREAM_CHUNK_ADAPTER
from dsh_llm._assemble import assemble_message
from dsh_llm._chunks import (
    BlockEndChunk,
    BlockStartChunk,
    BlockType,
    FinishChunk,
    FinishKind,
    FinishReason,
    ReasoningDeltaChunk,
    StreamChunk,
    TextDeltaChunk,
    ToolCallDeltaChunk,
    UsageChunk,
)
from dsh_llm._content import (
    AssistantContentBlock,
    ContentBlock,
    ImageAttachment,
    ImageBlock,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolResultContentBlock,
    UserContentBlock,
)
from dsh_llm._failures import FAILURE_CODES, RETRYABLE_FAILURE_CODES, FailureCode
from dsh_llm._messages import AssistantMessage, Message, ToolResultMessage, UserMessage
from dsh_llm._model_info import ModelInfo, context_window_of
from dsh_llm._request import Model, ModelRequest, Sampling, ToolSchema
from dsh_llm._source import (
    RESERVED_SOURCE_KINDS,
    MessageSource,
    ModelSource,
    OtherSource,
    PluginSource,
    ToolSource,
    UserMessageSource,
    UserSource,
)
from dsh_llm._usage import LlmFailure, Usage
from dsh_llm._wire import WireModel

__all__ = [
    "CONTENT_BLOCK_ADAPTER",
    "FAILURE_CODES",
    "MESSAGE_ADAPTER",
    "RESERVED_SOURCE_KINDS",
    "RETRYABLE_FAILURE_CODES",
    "STREAM_CHUNK_ADAPTER",
    "AssistantContentBlock",
    "AssistantMessage",
    "BlockEndChunk",
    "BlockStartChunk",
    "BlockType",
    "ContentBlock",
    "FailureCode",
    "FinishChunk",
    "FinishKind",
    "FinishReason",
    "ImageAttachment",
    "ImageBlock",
    "LlmFailure",
    "Message",
    "MessageSource",
    "Model",
    "ModelInfo",
    "ModelRequest",
    "ModelSource",
    "OtherSource",
    "PluginSource",
    "ReasoningBlock",
    "ReasoningDeltaChunk",
    "Sampling",
    "StreamChunk",
    "TextBlock",
    "TextDeltaChunk",
    "ToolCallBlock",
    "ToolCallDeltaChunk",
    "ToolResultBlock",
    "ToolResultContentBlock",
    "ToolResultMessage",
    "ToolSchema",
    "ToolSource",
    "Usage",
    "UsageChunk",
    "UserContentBlock",
    "UserMessage",
    "UserMessageSource",
    "UserSource",
    "WireModel",
    "assemble_message",
    "context_window_of",
]
