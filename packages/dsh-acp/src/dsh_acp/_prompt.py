"""A ``session/prompt``'s content blocks as the text of one user message.

What an editor sends is untrusted: only the kinds of block the agent offered in ``initialize``
are taken (text, resource links, embedded text resources), and the whole prompt is bounded."""

from __future__ import annotations

from collections.abc import Sequence

from acp.schema import (
    AudioContentBlock,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from dsh_acp._errors import PromptContentError

__all__ = ["MAX_PROMPT_CHARS", "PromptBlock", "prompt_text"]

MAX_PROMPT_CHARS = 2_000_000
"""The most characters one prompt may hold, embedded resources included."""

PromptBlock = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)
"""A content block of a ``session/prompt``."""


def _block_text(block: PromptBlock) -> str:
    if isinstance(block, TextContentBlock):
        return block.text
    if isinstance(block, ResourceContentBlock):
        label = block.title or block.name
        return f"[@{label}]({block.uri})"
    if isinstance(block, EmbeddedResourceContentBlock):
        resource = block.resource
        if not isinstance(resource, TextResourceContents):
            raise PromptContentError(
                f"the embedded resource {resource.uri!r} is binary; only text resources are taken"
            )
        return f'<context uri="{resource.uri}">\n{resource.text}\n</context>'
    kind = "an image" if isinstance(block, ImageContentBlock) else "audio"
    raise PromptContentError(f"{kind} block was sent, but this agent takes text only")


def prompt_text(blocks: Sequence[PromptBlock]) -> str:
    """The text of ``blocks``, one paragraph each: text as it is, a resource link as
    ``[@name](uri)``, an embedded text resource inside ``<context uri="...">``. Raises
    `PromptContentError` for another kind of block, an empty prompt, or one over
    `MAX_PROMPT_CHARS`."""
    parts: list[str] = []
    size = 0
    for block in blocks:
        text = _block_text(block)
        size += len(text)
        if size > MAX_PROMPT_CHARS:
            raise PromptContentError(f"over {MAX_PROMPT_CHARS} characters; send less context")
        parts.append(text)
    joined = "\n\n".join(parts)
    if not joined.strip():
        raise PromptContentError("it is empty; say what to do")
    return joined
