"""The summary call: one model call that turns the compacted range into a checkpoint.

The call reuses the system prompt, tools and session prefix of the session's latest request, so a
provider's prompt cache still serves its start, then sends the shadowed messages and one final
instruction. Only text becomes the summary; an error, aborted or cut-off answer, an image, or an
answer without text is refused.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dsh_llm import (
    FinishChunk,
    Message,
    Model,
    ModelRequest,
    ModelSource,
    PluginSource,
    StreamChunk,
    TextBlock,
    ToolSchema,
    UsageChunk,
    UserMessage,
    assemble_message,
)

__all__ = [
    "CHECKPOINT_CLOSE",
    "CHECKPOINT_OPEN",
    "CHECKPOINT_PLUGIN",
    "INSTRUCTION_PLUGIN",
    "SUMMARY_INSTRUCTION",
    "Summarizer",
    "Summary",
    "SummaryFailure",
    "SummaryRequest",
    "checkpoint_content",
    "model_summarizer",
]

CHECKPOINT_PLUGIN = "compact"
"""The ``plugin`` of a checkpoint message's source (format v0's name)."""
INSTRUCTION_PLUGIN = "dsh-compaction"
"""The ``plugin`` of the summary call's final instruction."""
CHECKPOINT_OPEN = "<compacted-summary>"
"""The text block that opens the summary inside a checkpoint message."""
CHECKPOINT_CLOSE = "</compacted-summary>"
"""The text block that closes the summary inside a checkpoint message."""

_PREAMBLE = (
    "Checkpoint of the earlier part of this conversation, written automatically so that the "
    "work fits in the model's context window. Take it as settled background and carry on from "
    "it; do not acknowledge it."
)

SUMMARY_INSTRUCTION = """\
Do not continue the conversation. Write a checkpoint of everything above instead: it will \
replace that part of the conversation, so whoever continues the work sees only the checkpoint \
and must be able to carry on from it alone.

Answer in Markdown with exactly these eight sections, in this order, each under its own heading:

## 1. Primary Request and Intent
## 2. Key Technical Concepts
## 3. Files and Code
## 4. Errors and Fixes
## 5. Pending Jobs
## 6. Current Work
## 7. Next Step
## 8. Critical Context

Rules:
- Short bullet points; write (none) under a section that has nothing.
- Plain English engineering prose. Copy file paths, commands, error messages, identifiers and \
numbers exactly as they appear.
- Keep every correction, preference and decision the user stated, faithfully.
- When the conversation opens with an earlier checkpoint between <compacted-summary> tags, \
merge its facts into your sections instead of copying it.
- Call no tools. Do not say that you are summarizing; write only the sections."""
"""The final user message of the summary call (the wording is this library's own)."""


class SummaryFailure(Exception):
    """The summary call gave nothing usable; ``code`` is the model's failure code or one of
    ``MAX_TOKENS``, ``UNSUPPORTED_CONTENT``, ``EMPTY_SUMMARY``, ``NO_FINISH``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    """What one summary call is asked: the route, the latest request's ``system``, ``tools``
    and ``prefix``, the shadowed ``messages`` in surface order, and ``max_tokens``."""

    session_id: str
    provider: str
    model: str
    system: str | None
    tools: tuple[ToolSchema, ...]
    prefix: tuple[Message, ...]
    messages: tuple[Message, ...]
    max_tokens: int

    def model_request(self) -> ModelRequest:
        """The ``ModelRequest``: prefix, shadowed messages, then :data:`SUMMARY_INSTRUCTION`."""
        instruction = UserMessage.from_text(
            SUMMARY_INSTRUCTION, source=PluginSource(plugin=INSTRUCTION_PLUGIN)
        )
        request = ModelRequest(
            provider=self.provider,
            model=self.model,
            system=self.system,
            tools=list(self.tools),
            max_tokens=self.max_tokens,
        )
        return request.model_copy(update={"messages": [*self.prefix, *self.messages, instruction]})


@dataclass(frozen=True, slots=True)
class Summary:
    """A usable summary: its text ``blocks`` (wire objects), the whole ``raw_output`` (every
    block the model gave), the ``provider``/``model`` that wrote it, ``max_tokens``, its
    ``usage`` (wire object) if reported, and ``llm_stream_call`` (one direct model call made
    it, with the whole output kept)."""

    blocks: tuple[Mapping[str, Any], ...]
    provider: str
    model: str
    max_tokens: int | None = None
    raw_output: tuple[Mapping[str, Any], ...] | None = None
    usage: Mapping[str, Any] | None = None
    llm_stream_call: bool = False


Summarizer = Callable[[SummaryRequest], Awaitable[Summary]]
"""What writes a summary (default: :func:`model_summarizer` over the routed model)."""


def model_summarizer(model: Model) -> Summarizer:
    """A summarizer making one streamed call of ``model`` per summary."""

    async def summarize(request: SummaryRequest) -> Summary:
        chunks: list[StreamChunk] = []
        finish: FinishChunk | None = None
        usage: UsageChunk | None = None
        async for chunk in model.stream(request.model_request()):
            chunks.append(chunk)
            if isinstance(chunk, FinishChunk):
                finish = chunk
            elif isinstance(chunk, UsageChunk):
                usage = chunk
        if finish is None:
            raise SummaryFailure("NO_FINISH", "the summary stream ended without a finish")
        reason = finish.reason
        if reason.kind in ("error", "aborted"):
            failure = reason.error
            code = failure.code if failure is not None else reason.kind.upper()
            text = failure.message if failure is not None else f"the summary call {reason.kind}"
            raise SummaryFailure(code, text)
        if reason.kind == "max-tokens":
            raise SummaryFailure(
                "MAX_TOKENS", f"the summary was cut off at max_tokens {request.max_tokens}"
            )
        message = assemble_message(
            chunks, ModelSource(provider=request.provider, model=request.model)
        )
        raw = tuple(block.to_wire() for block in message.content)
        if any(block.type == "image" for block in message.content):
            raise SummaryFailure("UNSUPPORTED_CONTENT", "the summary holds an image")
        texts = tuple(
            block.to_wire()
            for block in message.content
            if isinstance(block, TextBlock) and block.text.strip()
        )
        if not texts:
            raise SummaryFailure("EMPTY_SUMMARY", "the summary call answered no text")
        return Summary(
            blocks=texts,
            provider=request.provider,
            model=request.model,
            max_tokens=request.max_tokens,
            raw_output=raw,
            usage=None if usage is None else usage.usage.to_wire(),
            llm_stream_call=True,
        )

    return summarize


def checkpoint_content(summary: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The checkpoint message's content: the preamble and open tag, the summary blocks, the
    close tag."""
    return [
        {"type": "text", "text": f"{_PREAMBLE}\n\n{CHECKPOINT_OPEN}"},
        *(dict(block) for block in summary),
        {"type": "text", "text": CHECKPOINT_CLOSE},
    ]
