"""Validators for the discriminated unions: any message, stream chunk or content block."""

from __future__ import annotations

from pydantic import TypeAdapter

from dsh_llm._chunks import StreamChunk
from dsh_llm._content import ContentBlock
from dsh_llm._messages import Message

MESSAGE_ADAPTER: TypeAdapter[Message] = TypeAdapter(Message)
"""Validates any message (``validate_python`` / ``validate_json``) into its class."""

STREAM_CHUNK_ADAPTER: TypeAdapter[StreamChunk] = TypeAdapter(StreamChunk)
"""Validates any stream chunk (``validate_python`` / ``validate_json``) into its class."""

CONTENT_BLOCK_ADAPTER: TypeAdapter[ContentBlock] = TypeAdapter(ContentBlock)
"""Validates any content block (``validate_python`` / ``validate_json``) into its class."""
