"""The raw log scanner shared by both encodings: a torn tail is discarded, damage before an
intact record is corruption.

A crash can only damage the end of a log, so damage is told from a torn tail by what follows it.
Plain: a final fragment without ``\\n`` is torn and ignored; a complete line that fails to decode,
or whose seq is not the next one, is an *issue*, and scanning goes on: if any later complete line
decodes (an intact record after the damage) the issue is corruption, naming its 1-based physical
line. Otherwise the issue and everything after it is a discardable tail: never served, truncated by
the write path before its next append. zstd: a frame cut by EOF, or a final complete frame that
fails its checksum, is a torn tail discarded whole; a frame that fails with a frame after it is
corruption, and so is a checksummed frame holding a bad line (a checksum that matches rules out
a torn write).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from dsh_persistence_jsonl._rows import StoredRows
from dsh_persistence_jsonl._zstdframes import FrameTooLargeError
from dsh_session import SessionEvent, decode_row, decode_rows


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
    rows: StoredRows = field(default_factory=StoredRows)
    """The accepted rows the events were decoded from (what a re-read decodes again)."""
    committed_end: int = 0
    """Byte offset just past the last accepted unit (line or frame): the safe truncation point."""
    lines: int = 0
    """Physical lines (plain) or plaintext lines (zstd) accepted."""
    discarded_tail: bool = False
    """True when bytes past ``committed_end`` exist (a torn or discardable tail)."""


def decode_prefix(lines: list[bytes], seq: int) -> tuple[list[SessionEvent], int]:
    """``decode_rows`` that stops at (rather than raises for) a line it cannot handle at all (a
    ``type`` that is an object raised ``TypeError`` there): the clean prefix and its length."""
    try:
        return decode_rows(lines, seq)
    except Exception:  # only on damage: find the line one at a time
        events: list[SessionEvent] = []
        for done, line in enumerate(lines):
            try:
                more, ok = decode_rows([line], seq + len(events))
            except Exception:  # any failure to decode a stored line is damage
                return events, done
            if not ok:
                return events, done
            events.extend(more)
        return events, len(lines)


def _issue_reason(line: bytes, seq: int) -> str:
    """What is wrong with the line ``decode_rows`` stopped at, ``seq`` being the next seq."""
    try:
        first = decode_row(line)[0].seq
    except Exception as exc:  # any failure to decode a stored line is damage
        return f"undecodable record ({exc})"
    if first == seq:  # decode_rows stops only at a line that fails or breaks the seqs
        raise AssertionError(f"decode_rows stopped at a line that continues at seq {seq}")
    return f"expected seq {seq}, got {first}"


def _intact(line: bytes) -> bool:
    """Whether a stored line decodes as a record (its seq aside)."""
    try:
        decode_row(line)
    except Exception:  # any failure to decode is "not intact"
        return False
    return True


def _check_later(lines: list[bytes], issue: tuple[int, str], first_line: int) -> None:
    """Raise ``LogDamage`` at the ``issue`` line if any of ``lines`` (the first numbered
    ``first_line``) is an intact record: the damage is then not confined to the end."""
    issue_line, reason = issue
    for number, line in enumerate(lines, start=first_line):
        if _intact(line):
            raise LogDamage(
                issue_line,
                f"{reason}, followed by the intact line {number} (damage inside the log, not a "
                "torn tail)",
            )


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
        events, done = decode_prefix(lines, self._seq)  # the clean prefix, in bulk
        if result.events:
            result.events.extend(events)
        else:
            result.events = events
        self._seq += len(events)
        result.rows.add(lines if done == len(lines) else lines[:done], len(events))
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


Frame = tuple[int, int, "bytes | Exception"]
"""A complete zstd frame: ``(start, end, plaintext)``, or the error that decompressing it raised
in place of the plaintext."""


def scan_frames_plaintext(
    frames: Iterable[Frame], *, expected_seq: int, first_line: int, base: int
) -> BodyScan:
    """Scan decompressed frames; a frame is accepted or not whole. A frame that failed to
    decompress is a torn tail when it is the last one, and corruption when another follows."""
    result = BodyScan(committed_end=base)
    line_no = first_line
    failed: tuple[int, Exception] | None = None
    for start, end, plaintext in frames:
        if failed is not None:
            raise LogDamage(
                line_no,
                f"{failed[1]}; the frame at byte {start} after it is complete, so this is damage "
                "inside the log, not a torn tail",
            )
        if isinstance(plaintext, FrameTooLargeError):
            raise LogDamage(line_no, str(plaintext))
        if isinstance(plaintext, Exception):
            failed = (start, plaintext)
            continue
        if plaintext and not plaintext.endswith(b"\n"):
            raise LogDamage(
                line_no, f"the complete zstd frame at byte {start} ends in the middle of a line"
            )
        lines = plaintext.split(b"\n")
        lines.pop()
        frame_events, done = decode_prefix(lines, expected_seq)  # the clean prefix, in bulk
        if done < len(lines):  # a checksummed frame cannot be torn: its bad line is damage
            reason = _issue_reason(lines[done], expected_seq + len(frame_events))
            raise LogDamage(line_no + done, f"zstd frame at byte {start}: {reason}")
        result.events.extend(frame_events)
        result.rows.add(lines, len(frame_events))
        expected_seq += len(frame_events)
        result.committed_end = end
        result.lines += len(lines)
        line_no += len(lines)
    result.discarded_tail = failed is not None
    return result
