"""A ``session/prompt``'s content blocks as one user message.

What an editor sends is untrusted: only the kinds of block the agent offered in ``initialize``
are taken (text, resource links, embedded text resources; images for a model that takes them),
and the whole prompt is bounded: its text by `MAX_PROMPT_CHARS`, each image by
`MAX_IMAGE_BYTES` (decoded) and the images together by `MAX_PROMPT_IMAGE_BYTES`; an image must
be valid base64 of one of `IMAGE_TYPES`, its bytes of the type it claims."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence

from acp.schema import (
    AudioContentBlock,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from dsh_acp._errors import ImagesNotTakenError, PromptContentError
from dsh_llm import ImageBlock, TextBlock, UserMessage, UserSource

__all__ = [
    "IMAGE_TYPES",
    "MAX_IMAGE_BYTES",
    "MAX_PROMPT_CHARS",
    "MAX_PROMPT_IMAGE_BYTES",
    "PromptBlock",
    "prompt_message",
    "prompt_text",
]

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

MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""The largest image (decoded) a prompt may hold."""

MAX_PROMPT_IMAGE_BYTES = 20 * 1024 * 1024
"""The most image bytes (decoded) one prompt may hold, all images together."""

IMAGE_TYPES: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}
"""The image types taken, each with the bytes its files start with."""


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


def _image(block: ImageContentBlock, budget: int) -> tuple[ImageBlock, int]:
    """``block`` checked (type, base64, size, first bytes) as a dsh image block, and its size."""
    mime = block.mime_type.strip().lower()
    signatures = IMAGE_TYPES.get(mime)
    if signatures is None:
        raise PromptContentError(
            f"an image of type {block.mime_type[:100]!r} was sent; the types taken are "
            f"{', '.join(IMAGE_TYPES)}"
        )
    if len(block.data) > (MAX_IMAGE_BYTES // 3 + 1) * 4 + 8:  # before decoding anything
        raise PromptContentError(f"an image is over {MAX_IMAGE_BYTES} bytes; send a smaller one")
    try:
        raw = base64.b64decode(block.data, validate=True)
    except (binascii.Error, ValueError):
        raise PromptContentError("an image's data is not valid base64") from None
    if len(raw) > MAX_IMAGE_BYTES:
        raise PromptContentError(f"an image is over {MAX_IMAGE_BYTES} bytes; send a smaller one")
    if len(raw) > budget:
        raise PromptContentError(
            f"the images are over {MAX_PROMPT_IMAGE_BYTES} bytes together; send fewer"
        )
    webp = mime != "image/webp" or raw[8:12] == b"WEBP"
    if not raw.startswith(signatures) or not webp:
        raise PromptContentError(f"an image sent as {mime} does not hold {mime} data")
    return ImageBlock(data=base64.b64encode(raw).decode("ascii"), mime_type=mime), len(raw)


def prompt_message(blocks: Sequence[PromptBlock], *, route: str, images: bool) -> UserMessage:
    """``blocks`` as the user's message: the text of each run of non-image blocks as
    `prompt_text` gives it, each image as an image block between them. ``route`` is the
    session's ``provider:model`` and ``images`` whether it takes images: when it does not, an
    image raises `ImagesNotTakenError` naming it. Each image is checked as the module says
    (`PromptContentError`); the text's bounds are `prompt_text`'s (a prompt of images alone
    needs no text)."""
    content: list[TextBlock | ImageBlock] = []
    run: list[PromptBlock] = []
    texts: list[PromptBlock] = []
    budget = MAX_PROMPT_IMAGE_BYTES

    def flush() -> None:
        if run:
            text = "\n\n".join(_block_text(b) for b in run)
            if text.strip():
                content.append(TextBlock(text=text))
            run.clear()

    for block in blocks:
        if not isinstance(block, ImageContentBlock):
            run.append(block)
            texts.append(block)
            continue
        if not images:
            raise ImagesNotTakenError(route)
        flush()
        image, size = _image(block, budget)
        budget -= size
        content.append(image)
    flush()
    if texts and not any(isinstance(block, ImageBlock) for block in content):
        prompt_text(texts)  # emptiness, size and kinds, as a text prompt is checked
    elif texts:
        _bounded(texts)
    elif not content:
        raise PromptContentError("it is empty; say what to do")
    return UserMessage(content=content, source=UserSource())


def _bounded(blocks: Sequence[PromptBlock]) -> None:
    size = 0
    for block in blocks:
        size += len(_block_text(block))
        if size > MAX_PROMPT_CHARS:
            raise PromptContentError(f"over {MAX_PROMPT_CHARS} characters; send less context")
