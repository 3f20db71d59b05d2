"""The raw log scanner shared by both encodings (reference §3.5).

A final fragment without ``\\n`` (plain) or a frame cut by EOF (zstd) is torn and ignored. A
complete line that fails to decode, or whose seq is not the next one, is an *issue*; scanning goes
on, and if any later complete line holds a ``turn/end`` the issue lies in the committed region and
is corruption (naming the 1-based physical line). Otherwise the issue and everything after it is a
discardable tail: never served, truncated by the write path before its next append.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator
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


def _issue_reason(line: bytes, seq: int) -> str:
    """What is wrong with the line ``decode_rows`` stopped at, ``seq`` being the next seq."""
    try:
        first = decode_row(line)[0].seq
    except (SessionFormatError, ValueError, IndexError) as exc:
        return f"undecodable record ({exc})"
    if first == seq:  # decode_rows stops only at a line that fails or breaks the seqs
        raise AssertionError(f"decode_rows stopped at a line that continues at seq {seq}")
    return f"expected seq {seq}, got {first}"


def _check_later(lines: list[bytes], issue: tuple[int, str], first_line: int) -> None:
    """Raise ``LogDamage`` at the ``issue`` line if any of ``lines`` (the first numbered
    ``first_line``) holds a committed ``turn/end``: the issue then lies in the committed region."""
    issue_line, reason = issue
    for number, line in enumerate(lines, start=first_line):
        if _holds_turn_end(line):
            raise LogDamage(issue_line, f"{reason}, before a committed turn/end (line {number})")


def _holds_turn_end(line: bytes) -> bool:
    if _TURN_END not in line:
        return False
    try:
        return any(event.type == "turn/end" for event in decode_row(line))
    except (SessionFormatError, ValueError):
        return False


class PlainScanner:
    """Scans a plain log body fed a block of complete lines at a time, so a bulk load holds one
    block of lines, never a copy of the whole file (and reuses that memory block after block)."""

    __slots__ = ("_issue", "_line", "_seq", "result")

    def __init__(self, *, base: int, expected_seq: int, first_line: int) -> None:
        self.result = BodyScan(committed_end=base)
        self._seq = expected_seq
        self._line = first_line  # the physical number of the next line fed
        self._issue: tuple[int, str] | None = None  # the first problem line and what is wrong

    def feed(self, lines: list[bytes], end: int) -> None:
        """Scan the next complete ``lines`` (without their newlines); ``end`` is the file offset
        just past the last one's newline."""
        if self._issue is not None:
            _check_later(lines, self._issue, self._line)
            self._line += len(lines)
            return
        result = self.result
        events, done = decode_rows(lines, self._seq)  # the clean prefix, in bulk
        if result.events:
            result.events.extend(events)
        else:
            result.events = events
        self._seq += len(events)
        if done < len(lines):
            self._found(lines, done, end, _issue_reason(lines[done], self._seq))
            return
        self._line += len(lines)
        result.lines += len(lines)
        result.committed_end = end

    def _found(self, lines: list[bytes], index: int, end: int, reason: str) -> None:
        issue = self._issue = (self._line + index, reason)
        self.result.lines += index
        self.result.committed_end = end - sum(len(line) + 1 for line in lines[index:])
        _check_later(lines[index + 1 :], issue, self._line + index + 1)
        self._line += len(lines)

    def finish(self, end: int) -> BodyScan:
        """The scan, once every complete line was fed; ``end`` is the offset where the bytes
        read end (anything between the last accepted line and ``end`` is a discardable tail)."""
        self.result.discarded_tail = self.result.committed_end != end
        return self.result


def scan_frames_plaintext(
    frames: Iterable[tuple[int, int, bytes]], *, expected_seq: int, first_line: int, base: int
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
            frame_events, done = decode_rows(lines, expected_seq)  # the clean prefix, in bulk
            if done < len(lines):  # the frame is not accepted
                reason = _issue_reason(lines[done], expected_seq + len(frame_events))
                issue = (line_no + done, reason)
                _check_later(lines[done + 1 :], issue, line_no + done + 1)
            else:
                result.events.extend(frame_events)
                expected_seq += len(frame_events)
                result.committed_end = end
                result.lines += len(lines)
        else:
            _check_later(lines, issue, line_no)
        line_no += len(lines)
    result.discarded_tail = issue is not None
    return result
