"""Reading one stored artifact: its header, its body (full or from an offset), its metadata."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal, TypeVar

from dsh_persistence import gc_paused
from dsh_persistence_jsonl._safefs import open_regular
from dsh_persistence_jsonl._scan import (
    BodyScan,
    Frame,
    LogDamage,
    PlainScanner,
    scan_frames_plaintext,
)
from dsh_persistence_jsonl._zstdframes import FrameError, decompress_frame, scan_frames
from dsh_session import SessionHeader, row_last_seq

T = TypeVar("T")

Compression = Literal["none", "zstd"]
"""The physical encoding of a root: plain UTF-8 JSONL or concatenated zstd frames."""

LOG_NAMES: dict[str, str] = {"none": "session.jsonl", "zstd": "session.jsonl.zstd"}
_HEADER_CHUNK = 8192
_TAIL_CHUNK = 8192
WHOLE_READ = 65536
"""A log up to this size is read whole by ``stat``/``list`` (its last row comes with the header)."""
_BLOCK = 256 * 1024
"""Plain logs are read and scanned a block at a time: the lines of one block are parsed while
still in cache and their memory is reused by the next block (a whole-file read of a 56 MB log
faulted in ~14,000 fresh pages, and its lines never reused memory)."""
_READS = 5
"""At most this many reads of a log whose bytes changed under a read that found damage."""

MAX_HEADER_LINE = 1024 * 1024
"""The longest header line (line 1, or the plaintext of the first zstd frame) a read accepts:
1 MiB. A real header is a few hundred bytes (its largest field, a title, is a line of text); a
longer first line is corruption naming line 1, found after reading at most this many bytes."""


_MAX_HEADER_FRAME = 2 * MAX_HEADER_LINE
"""Compressed bytes read looking for the header frame (zstd never expands data by half)."""


def revision_of(st: os.stat_result) -> str:
    """``dev:ino:size:mtime_ns:ctime_ns`` — equal iff the artifact did not change."""
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


@dataclass(slots=True)
class LoadedLog:
    """A whole artifact scanned: header, events, and where the committed bytes end."""

    header: SessionHeader
    inherited_event_count: int
    header_line: bytes
    body: BodyScan
    header_end: int
    """Byte offset just past the header line (plain) or header frame (zstd)."""
    size: int
    ino: int


HeaderDecoder = Callable[[bytes], tuple[SessionHeader, int]]
"""Decodes a physical header line to ``(header, inherited_event_count)``; version first."""


def _header_too_long() -> LogDamage:
    return LogDamage(1, f"the header line is longer than the {MAX_HEADER_LINE} byte cap")


def _split_header_plain(data: bytes) -> tuple[bytes, int]:
    newline = data.find(b"\n", 0, MAX_HEADER_LINE + 1)
    if newline == -1:
        if len(data) > MAX_HEADER_LINE:
            raise _header_too_long()
        raise LogDamage(1, "the header line is incomplete")
    return data[:newline], newline + 1


def _read_first_line(read: Callable[[int], bytes], first: bytes) -> bytes:
    """``first`` and further ``read(n)`` pieces until one holds a newline or the header cap is
    passed; each piece is searched once (linear in the line's length)."""
    pieces = [first]
    total = len(first)
    while b"\n" not in pieces[-1] and total <= MAX_HEADER_LINE:
        more = read(max(_HEADER_CHUNK, total))
        if not more:
            break
        pieces.append(more)
        total += len(more)
    return b"".join(pieces) if len(pieces) > 1 else pieces[0]


def _feed_plain(f: BinaryIO, scanner: PlainScanner, data: bytes, offset: int) -> int:
    """Feed ``scanner`` the complete lines of ``data`` (bytes that start at file offset
    ``offset``) and then of the rest of ``f``, a block at a time; return the offset where the
    bytes read end. A line may span blocks (its pieces are joined once, when it ends)."""
    carry: list[bytes] = []
    while True:
        if not data:
            data = f.read(_BLOCK)
            if not data:
                return offset
        offset += len(data)
        lines = data.split(b"\n")
        tail = lines.pop()  # b"" or the start of a line the next block continues
        if lines:
            if carry:
                carry.append(lines[0])
                lines[0] = b"".join(carry)
                carry.clear()
            scanner.feed(lines, offset - len(tail))
        if tail:
            carry.append(tail)
        data = b""


def load_plain(
    f: BinaryIO, decode: HeaderDecoder
) -> tuple[SessionHeader, int, bytes, int, BodyScan, int]:
    """Header, cut, header line, header end offset, scanned body and size of a plain log read
    from ``f`` (at offset 0); the header is decoded, version first, before the body is scanned."""
    data = _read_first_line(lambda _n: f.read(_BLOCK), f.read(_BLOCK))
    header_line, header_end = _split_header_plain(data)
    header, inherited = decode(header_line)
    scanner = PlainScanner(base=header_end, expected_seq=0, first_line=2)
    with gc_paused():
        size = _feed_plain(f, scanner, data[header_end:], header_end)
    return header, inherited, header_line, header_end, scanner.finish(size), size


def _header_frame(
    data: bytes, *, only_header: bool = False
) -> tuple[bytes, int, list[tuple[int, int]], int | None]:
    try:
        scan = scan_frames(data, max_frames=1 if only_header else None)
    except FrameError as exc:
        raise LogDamage(None, str(exc)) from exc
    if not scan.frames:
        raise LogDamage(1, "the file holds no complete zstd frame (no header frame)")
    start, end = scan.frames[0]
    try:
        plaintext = decompress_frame(memoryview(data)[start:end], start, MAX_HEADER_LINE + 1)
    except FrameError as exc:
        raise LogDamage(1, str(exc)) from exc
    if not plaintext.endswith(b"\n") or plaintext.count(b"\n") != 1:
        raise LogDamage(1, "the first zstd frame is not exactly one header line")
    return plaintext[:-1], end, scan.frames[1:], scan.torn_start


def decode_frames(
    data: bytes | memoryview, frames: list[tuple[int, int]], base: int = 0
) -> Iterator[Frame]:
    """Decompress complete frames (spans relative to ``base``) one at a time, as the scan asks
    for them (a log's plaintext is never held whole); a frame that fails comes with its
    ``FrameError`` in place of the plaintext (the scan decides: torn final frame or damage)."""
    view = memoryview(data)
    for start, end in frames:
        try:
            plaintext: bytes | Exception = decompress_frame(view[start - base : end - base], start)
        except FrameError as exc:
            plaintext = exc
        yield start, end, plaintext


def load_zstd(
    f: BinaryIO, decode: HeaderDecoder
) -> tuple[SessionHeader, int, bytes, int, BodyScan, int]:
    """Header, cut, header line, header-frame end, scanned body and size of a zstd log read
    from ``f`` (whole: the frames are small and each is scanned as it is decompressed)."""
    data = f.read()
    header_line, header_end, frames, _torn = _header_frame(data)
    header, inherited = decode(header_line)
    with gc_paused():
        body = scan_frames_plaintext(
            decode_frames(data, frames), expected_seq=0, first_line=2, base=header_end
        )
    return header, inherited, header_line, header_end, body, len(data)


def _changed(before: os.stat_result, path: Path) -> bool:
    """Whether the file at ``path`` is no longer what ``before`` described."""
    try:
        after = os.lstat(path)
    except FileNotFoundError:
        return True
    return (before.st_ino, before.st_size, before.st_mtime_ns, before.st_ctime_ns) != (
        after.st_ino,
        after.st_size,
        after.st_mtime_ns,
        after.st_ctime_ns,
    )


def _read_stably(path: Path, read: Callable[[BinaryIO, os.stat_result], T]) -> T:
    """``read(f, st)`` over ``path`` opened (``st`` its ``fstat``), again when it raised
    ``LogDamage`` while the file changed under it (a writer cutting a discardable tail and
    appending), at most ``_READS`` reads in all; damage in a file that did not change is raised
    at once. A read that succeeds is kept even if the file grew meanwhile: it ends at a
    committed boundary, and a read handle picks up the rest on its next read."""
    reads = 1
    while True:
        fd, st = open_regular(path, os.O_RDONLY)  # OddFileError: not a regular file
        with os.fdopen(fd, "rb", buffering=0) as f:
            try:
                return read(f, st)
            except LogDamage:
                if reads == _READS or not _changed(st, path):
                    raise
        reads += 1


def load_log(path: Path, compression: Compression, decode: HeaderDecoder) -> LoadedLog:
    """Scan a whole artifact: header first (``decode``), then the body (see ``_read_stably``).

    Raises ``LogDamage``, ``FileNotFoundError`` or whatever ``decode`` raises.
    """
    loader = load_plain if compression == "none" else load_zstd

    def read(f: BinaryIO, st: os.stat_result) -> LoadedLog:
        header, inherited, header_line, header_end, body, size = loader(f, decode)
        return LoadedLog(header, inherited, header_line, body, header_end, size, st.st_ino)

    return _read_stably(path, read)


def _scan_from(
    f: BinaryIO, compression: Compression, *, offset: int, expected_seq: int, first_line: int
) -> tuple[BodyScan, int]:
    """Scan ``f`` from its position ``offset`` to EOF; return the scan and where the bytes end."""
    if compression == "none":
        scanner = PlainScanner(base=offset, expected_seq=expected_seq, first_line=first_line)
        with gc_paused():
            end = _feed_plain(f, scanner, b"", offset)
        return scanner.finish(end), end
    data = f.read()
    try:
        frames = scan_frames(data, base=offset).frames
    except FrameError as exc:
        raise LogDamage(None, str(exc)) from exc
    with gc_paused():
        scan = scan_frames_plaintext(
            decode_frames(data, frames, base=offset),
            expected_seq=expected_seq,
            first_line=first_line,
            base=offset,
        )
    return scan, offset + len(data)


def read_suffix(
    path: Path,
    compression: Compression,
    *,
    offset: int,
    expected_seq: int,
    first_line: int,
    ino: int,
) -> tuple[BodyScan, int] | None:
    """Scan the bytes from ``offset`` (an accepted-unit boundary); ``None`` when unchanged.

    Returns the scan and the file size. Raises ``FileNotFoundError`` when the file is gone and
    ``LogDamage`` when it shrank below ``offset``, was replaced, or holds damage (read as
    ``_read_stably`` reads).
    """

    def read(f: BinaryIO, st: os.stat_result) -> tuple[BodyScan, int] | None:
        if st.st_ino != ino:
            raise LogDamage(None, "the log file was replaced while a read handle was open")
        if st.st_size < offset:
            raise LogDamage(None, f"the log shrank below {offset} bytes it had already served")
        if st.st_size == offset:
            return None
        f.seek(offset)
        return _scan_from(
            f, compression, offset=offset, expected_seq=expected_seq, first_line=first_line
        )

    return _read_stably(path, read)


@dataclass(slots=True)
class HeaderInfo:
    """What ``stat``/``list`` read: the header line, the stat result and the event count."""

    header_line: bytes
    st: os.stat_result
    event_count: int | None


def whole_log_count(data: bytes, header_end: int) -> int | None:
    """``event_count`` of a log read whole (``data``, its header line ending at ``header_end``):
    the last complete row's last seq + 1, 0 with no row, ``None`` when that row does not parse."""
    hi = len(data)
    if hi <= header_end:
        return 0
    if data[hi - 1] != 0x0A:
        cut = data.rfind(b"\n", header_end, hi)
        if cut == -1:
            return None
        hi = cut + 1
    line_start = data.rfind(b"\n", header_end, hi - 1) + 1 or header_end
    try:
        return row_last_seq(data[line_start : hi - 1]) + 1
    except (ValueError, TypeError):
        return None


def _last_row_count(fd: int, size: int, header_end: int, head: bytes) -> int | None:
    if size <= header_end:
        return 0
    if size <= len(head):  # the whole log came with the header: no copy
        return whole_log_count(head, header_end)
    start = max(header_end, size - _TAIL_CHUNK)
    buf = os.pread(fd, size - start, start)
    hi = len(buf)
    if hi == 0 or buf[hi - 1] != 0x0A:
        cut = buf.rfind(b"\n", 0, hi)
        if cut == -1:
            return None
        hi = cut + 1
    line_start = buf.rfind(b"\n", 0, hi - 1) + 1
    if line_start == 0 and size - _TAIL_CHUNK > header_end:
        return None  # a last row longer than the probe: not cheap, so unknown
    try:
        return row_last_seq(buf[line_start : hi - 1]) + 1
    except (ValueError, TypeError):
        return None


def read_header_info(
    path: str | Path, compression: Compression, *, dir_fd: int | None = None
) -> HeaderInfo:
    """Read only the header (first line or first frame), the metadata and the last row
    (``path`` relative to the directory ``dir_fd`` when given)."""
    fd, st = open_regular(path, os.O_RDONLY, dir_fd=dir_fd)  # OddFileError: not a regular file
    try:
        # a small log in one read: its last row (event_count) comes with the header
        head = os.pread(
            fd, st.st_size if _HEADER_CHUNK < st.st_size <= WHOLE_READ else _HEADER_CHUNK, 0
        )
        if compression == "none":
            if b"\n" not in head and len(head) < st.st_size:
                read = len(head)

                def read_more(n: int) -> bytes:
                    nonlocal read
                    piece = os.pread(fd, n, read)
                    read += len(piece)
                    return piece

                head = _read_first_line(read_more, head)
            header_line, header_end = _split_header_plain(head)
            count = _last_row_count(fd, st.st_size, header_end, head)
            return HeaderInfo(header_line, st, count)
        while True:
            try:
                header_line, _end, _frames, _torn = _header_frame(head, only_header=True)
                break
            except LogDamage:
                if len(head) >= st.st_size or len(head) > _MAX_HEADER_FRAME:
                    raise
                more = os.pread(fd, max(len(head), _HEADER_CHUNK), len(head))
                if not more:
                    raise
                head += more
        return HeaderInfo(header_line, st, None)
    finally:
        os.close(fd)
