"""zstd framing: one checksummed frame per written batch, found by a structure scanner.

The scanner walks frame headers and block headers without decompressing (RFC 8878): a frame
whose structure ends past EOF is *torn* (the final frame of a crashed write, discarded whole), and
so are bytes without a magic number after the last frame when no magic number follows them (a
crash can leave zeros at the end of a file); bad magic with a frame after it, reserved bits or a
reserved block type inside complete structure is corruption.
Complete frames are then decompressed with checksum verification, bounded by
``MAX_FRAME_BYTES`` of plaintext (a frame that declares or expands to more is refused before it
can exhaust memory).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import zstandard

_local = threading.local()

_MAGIC = b"\x28\xb5\x2f\xfd"
_DICT_ID_SIZES = (0, 1, 2, 4)
_FCS_SIZES = (0, 2, 4, 8)
_STREAM_CHUNK = 1 << 20

MAX_FRAME_BYTES = 256 * 1024 * 1024
"""The largest plaintext one zstd frame may hold (256 MiB): a frame is one ``append`` batch, and
no real batch comes near it. A frame that declares a larger content size is refused from its
header; one that does not declare its size is decompressed in 1 MiB pieces and refused as soon
as it passes the cap, so a small frame that expands to gigabytes never fills memory."""


class FrameError(ValueError):
    """Complete frame structure that is not a valid checksummed zstd frame."""

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(f"zstd frame at byte {offset}: {reason}")
        self.offset = offset
        self.reason = reason


class FrameTooLargeError(FrameError):
    """A frame whose plaintext passes the cap: refused whatever its place (never a torn tail)."""


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
            # a torn frame header (the magic number alone, or less), or up to four bytes of
            # garbage: no magic number can follow them, so they are torn like longer garbage
            return FrameScan(frames, base + start)
        if bytes(view[pos : pos + 4]) != _MAGIC:
            if _MAGIC in bytes(view[pos:]):  # only on damage: a copy of the rest is fine
                raise FrameError(base + start, "bad magic number, with a frame after it")
            return FrameScan(frames, base + start)  # garbage confined to the end: torn
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


def decompress_frame(frame: bytes | memoryview, offset: int, limit: int | None = None) -> bytes:
    """Decompress one complete frame, verifying its checksum; failure raises ``FrameError``, and
    so does a plaintext beyond ``limit`` bytes (default ``MAX_FRAME_BYTES``)."""
    cap = MAX_FRAME_BYTES if limit is None else limit
    decompressor: zstandard.ZstdDecompressor | None = getattr(_local, "decompressor", None)
    if decompressor is None:  # one per thread: building one costs more than a frame's decode
        decompressor = zstandard.ZstdDecompressor()
        _local.decompressor = decompressor
    try:
        declared = zstandard.frame_content_size(frame)
    except zstandard.ZstdError as exc:
        raise FrameError(offset, f"cannot be decompressed ({exc})") from exc
    if declared > cap:
        raise FrameTooLargeError(
            offset, f"declares {declared} bytes of content, beyond the {cap} byte cap of a frame"
        )
    if declared < 0:
        return _decompress_bounded(decompressor, frame, offset, cap)
    try:
        # one shot into a buffer of the declared size: a frame whose blocks produce more than
        # its header says fails instead of growing the buffer
        return decompressor.decompress(frame)
    except zstandard.ZstdError as exc:
        raise FrameError(offset, f"cannot be decompressed ({exc})") from exc


def _decompress_bounded(
    decompressor: zstandard.ZstdDecompressor, frame: bytes | memoryview, offset: int, cap: int
) -> bytes:
    """A frame that does not declare its size: decompress it a piece at a time, up to ``cap``."""
    pieces: list[bytes] = []
    total = 0
    try:
        for piece in decompressor.read_to_iter(
            bytes(frame), read_size=_STREAM_CHUNK, write_size=_STREAM_CHUNK
        ):
            total += len(piece)
            if total > cap:
                raise FrameTooLargeError(offset, f"expands beyond the {cap} byte cap of a frame")
            pieces.append(piece)
    except zstandard.ZstdError as exc:
        raise FrameError(offset, f"cannot be decompressed ({exc})") from exc
    return b"".join(pieces)
