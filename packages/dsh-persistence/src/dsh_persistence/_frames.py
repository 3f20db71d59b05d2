"""``decompress_frame``: one compressed stored record back to its bytes, with a bound.

The SQL backends store a record of 4 KiB or more as one zstd frame when that is smaller, and a
read must not let a corrupt frame header make it allocate gigabytes. The checks are the same
for every backend, so they live here; the codec does not: the seam depends on no compression
library, and a backend passes the ``zstandard`` module it imports itself (anything with the
same three names will do, see `ZstdApi`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

__all__ = ["ZstdApi", "decompress_frame"]


class _Decompressor(Protocol):
    def decompress(self, data: bytes, max_output_size: int = ...) -> bytes: ...


class ZstdApi(Protocol):
    """What `decompress_frame` uses of the ``zstandard`` module: pass the module itself."""

    @property
    def ZstdError(self) -> type[Exception]:
        """The error the codec raises for bytes that are no valid frame."""
        ...

    @property
    def ZstdDecompressor(self) -> Callable[[], _Decompressor]:
        """A new decompressor."""
        ...

    def frame_content_size(self, data: bytes) -> int:
        """The plaintext size the frame header records (negative when it records none)."""
        ...


def decompress_frame(
    frame: bytes,
    limit: int,
    zstd: ZstdApi,
    error: Callable[[str], Exception] = ValueError,
) -> bytes:
    """The plaintext of one zstd ``frame`` that records its content size, at most ``limit``
    bytes; raises ``error(reason)`` (a ``ValueError`` unless given) for bytes that are no
    frame, a frame that records no size or more than ``limit``, one that does not decompress,
    or one that decompresses to another size than it records.
    """
    try:
        size = zstd.frame_content_size(frame)
    except zstd.ZstdError as failure:
        raise error(f"not a zstd frame ({failure})") from failure
    if size < 0:
        raise error("the zstd frame does not record its content size")
    if size > limit:
        raise error(f"the zstd frame claims {size} bytes, more than the bound {limit}")
    try:
        plaintext = zstd.ZstdDecompressor().decompress(frame, max_output_size=limit)
    except zstd.ZstdError as failure:
        raise error(f"the zstd frame does not decompress ({failure})") from failure
    if len(plaintext) != size:
        raise error("the zstd frame decompressed to another size than it records")
    return plaintext
