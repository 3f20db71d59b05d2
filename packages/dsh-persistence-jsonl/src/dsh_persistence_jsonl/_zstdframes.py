"""zstd framing: one checksummed frame per written batch, found by a structure scanner.

The scanner walks frame headers and block headers without decompressing (RFC 8878): a frame
whose structure ends past EOF is *torn* (the final frame of a crashed write, discarded whole);
bad magic, reserved bits or a reserved block type inside complete structure is corruption.
Complete frames are then decompressed with checksum verification.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import zstandard

_local = threading.local()

_MAGIC = b"\x28\xb5\x2f\xfd"
_DICT_ID_SIZES = (0, 1, 2, 4)
_FCS_SIZES = (0, 2, 4, 8)


class FrameError(ValueError):
    """Complete frame structure that is not a valid checksummed zstd frame."""

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(f"zstd frame at byte {offset}: {reason}")
        self.offset = offset
        self.reason = reason


@dataclass(frozen=True, slots=True)
class FrameScan:
    """Complete frames as ``(start, end)`` byte spans, and where a torn final frame starts."""

    frames: list[tuple[int, int]]
    torn_start: int | None


def compress_frame(plaintext: bytes) -> bytes:
    """One independent frame with the content checksum and content size written."""
    compressor: zstandard.ZstdCompressor | None = getattr(_local, "compressor", None)
    if compressor is None:
        compressor = zstandard.ZstdCompressor(write_checksum=True, write_content_size=True)
        _local.compressor = compressor
    return compressor.compress(plaintext)


def scan_frames(
    data: bytes | memoryview, base: int = 0, *, max_frames: int | None = None
) -> FrameScan:
    """Find the complete frames of ``data`` (a concatenation of frames); ``base`` offsets spans.

    With ``max_frames``, stop after that many complete frames (the rest is not looked at).
    """
    frames: list[tuple[int, int]] = []
    view = memoryview(data)
    size = len(view)
    pos = 0
    while pos < size:
        start = pos
        if size - pos < 5:
            if not _MAGIC.startswith(bytes(view[pos : pos + 4])):
                raise FrameError(base + start, "bad magic number")
            return FrameScan(frames, base + start)
        if bytes(view[pos : pos + 4]) != _MAGIC:
            raise FrameError(base + start, "bad magic number")
        descriptor = view[pos + 4]
        if descriptor & 0x08:
            raise FrameError(base + start, "reserved bit set in the frame header descriptor")
        fcs_flag = descriptor >> 6
        single_segment = (descriptor >> 5) & 1
        has_checksum = (descriptor >> 2) & 1
        if not has_checksum:
            raise FrameError(base + start, "frame has no content checksum")
        header_size = 1 + (0 if single_segment else 1) + _DICT_ID_SIZES[descriptor & 3]
        header_size += 1 if (fcs_flag == 0 and single_segment) else _FCS_SIZES[fcs_flag]
        pos += 4 + header_size
        while True:
            if pos + 3 > size:
                return FrameScan(frames, base + start)
            block = view[pos] | (view[pos + 1] << 8) | (view[pos + 2] << 16)
            last = block & 1
            block_type = (block >> 1) & 3
            block_size = block >> 3
            if block_type == 3:
                raise FrameError(base + start, "reserved block type")
            pos += 3 + (1 if block_type == 1 else block_size)
            if last:
                break
        pos += 4  # checksum
        if pos > size:
            return FrameScan(frames, base + start)
        frames.append((base + start, base + pos))
        if max_frames is not None and len(frames) >= max_frames:
            break
    return FrameScan(frames, None)


def decompress_frame(frame: bytes | memoryview, offset: int) -> bytes:
    """Decompress one complete frame, verifying its checksum; failure raises ``FrameError``."""
    decompressor: zstandard.ZstdDecompressor | None = getattr(_local, "decompressor", None)
    if decompressor is None:  # one per thread: building one costs more than a frame's decode
        decompressor = zstandard.ZstdDecompressor()
        _local.decompressor = decompressor
    try:
        out = decompressor.decompressobj()
        plaintext = out.decompress(frame)
    except zstandard.ZstdError as exc:
        raise FrameError(offset, f"cannot be decompressed ({exc})") from exc
    if not out.eof:
        raise FrameError(offset, "frame ended before its last block")
    return plaintext
