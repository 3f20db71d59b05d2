"""The raw log scanner shared by both encodings (reference §3.5).

A final fragment without ``\\n`` (plain) or a frame cut by EOF (zstd) is torn and ignored. A
complete line that fails to decode, or whose seq is not the next one, is an *issue*; scanning goes
on, and if any later complete line holds a ``turn/end`` the issue lies in the committed region and
is corruption (naming the 1-based physical line). Otherwise the issue and everything after it is a
discardable tail: never served, truncated by the write path before its next append.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from dsh_session import SessionEvent, SessionFormatError, decode_row, decode_rows

_TURN_END = b'"turn/end"'


class LogDamage(Exception):
    """Committed bytes that fail validation; ``line`` is 1-based and physical (header = 1)."""

    def __init__(self, line: int | None, reason: str) -> None:
        where = f"line {line}: " if line is not None else ""
        super().__init__(f"{where}{reason}")
        self.line = line
        self.reason = reason


@dataclass(slots=True)
class BodyScan:
    """Result of scanning a log body (or a suffix of it)."""

    events: list[SessionEvent] = field(default_factory=list)
    committed_end: int = 0
    """Byte offset just past the last accepted unit (line or frame): the safe truncation point."""
    lines: int = 0
    """Physical lines (plain) or plaintext lines (zstd) accepted."""
    discarded_tail: bool = False
    """True when bytes past ``committed_end`` exist (a torn or discardable tail)."""


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for a bulk load (restored even on error)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _holds_turn_end(line: bytes) -> bool:
    if _TURN_END not in line:
        return False
    try:
        return any(event.type == "turn/end" for event in decode_row(line))
    except (SessionFormatError, ValueError):
        return False


def scan_plain(
    data: bytes, *, base: int, expected_seq: int, first_line: int, skip: int = 0
) -> BodyScan:
    """Scan plain JSONL ``data`` read from file offset ``base``; line ``skip`` of ``data`` (0-based)
    is physical line ``first_line``. Earlier lines (the header) are not scanned."""
    parts = data.split(b"\n")
    torn = parts.pop()  # bytes after the final newline: b"" or a torn fragment
    body = parts[skip:] if skip else parts
    events, done = decode_rows(body, expected_seq)  # the clean prefix, in bulk
    extend = events.extend
    issue_at = -1
    reason = ""
    seq = expected_seq + len(events)
    for index in range(done, len(body)):  # from the first problem line, if any: word it
        line = body[index]
        try:
            rows = decode_row(line)
            first = rows[0].seq
        except (SessionFormatError, ValueError, IndexError) as exc:
            issue_at, reason = index, f"undecodable record ({exc})"
            break
        if first != seq:
            issue_at, reason = index, f"expected seq {seq}, got {first}"
            break
        extend(rows)
        seq += len(rows)
    result = BodyScan(events=events)
    if issue_at < 0:
        result.lines = len(body)
        result.committed_end = base + len(data) - len(torn)
        result.discarded_tail = torn != b""
        return result
    issue_line = first_line + issue_at
    for later, line in enumerate(body[issue_at + 1 :], start=issue_line + 1):
        if _holds_turn_end(line):
            raise LogDamage(issue_line, f"{reason}, before a committed turn/end (line {later})")
    result.lines = issue_at
    head = sum(len(line) + 1 for line in parts[:skip])
    result.committed_end = base + head + sum(len(line) + 1 for line in body[:issue_at])
    result.discarded_tail = True
    return result


def scan_frames_plaintext(
    frames: list[tuple[int, int, bytes]], *, expected_seq: int, first_line: int, base: int
) -> BodyScan:
    """Scan decompressed frames ``(start, end, plaintext)``; a frame is accepted or not whole."""
    result = BodyScan(committed_end=base)
    issue: tuple[int, str] | None = None
    line_no = first_line
    for _start, end, plaintext in frames:
        if plaintext and not plaintext.endswith(b"\n"):
            raise LogDamage(line_no, "a complete zstd frame ends in the middle of a line")
        lines = plaintext.split(b"\n")
        lines.pop()
        if issue is None:
            frame_events: list[SessionEvent] = []
            seq = expected_seq
            for index, line in enumerate(lines):
                try:
                    rows = decode_row(line)
                    first = rows[0].seq
                except (SessionFormatError, ValueError, IndexError) as exc:
                    issue = (line_no + index, f"undecodable record ({exc})")
                    break
                if first != seq:
                    issue = (line_no + index, f"expected seq {seq}, got {first}")
                    break
                frame_events.extend(rows)
                seq += len(rows)
            if issue is None:
                result.events.extend(frame_events)
                expected_seq = seq
                result.committed_end = end
                result.lines += len(lines)
        else:
            for index, line in enumerate(lines):
                if _holds_turn_end(line):
                    raise LogDamage(
                        issue[0],
                        f"{issue[1]}, before a committed turn/end (line {line_no + index})",
                    )
        line_no += len(lines)
    result.discarded_tail = issue is not None
    return result
