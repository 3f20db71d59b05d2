"""Event rows: a batch of events to the ``events`` columns, and stored rows back to events."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import zstandard

from dsh_persistence import assert_contiguous, decompress_frame
from dsh_session import (
    ROW_TYPES,
    SessionEvent,
    SessionFormatError,
    decode_event,
    decode_rows,
)

_EVENT_TYPES: Any = SessionEvent

COMPRESS_MIN_BYTES = 4096
"""Lines of at least this many bytes are stored zstd-compressed, when that is smaller."""

COMPRESSION_LEVEL = 3

MAX_LINE_BYTES = 1 << 30
"""The largest decompressed line a read accepts (a bound on a corrupt frame header)."""

StoredRow = tuple[int, "str | None", "bytes | None"]
"""``(seq, line, zline)`` as ``select_rows`` returns it."""


@dataclass(frozen=True, slots=True)
class EncodedRows:
    """The ``append`` statement's arrays of one batch and what it adds to ``size_bytes``."""

    seqs: list[int]
    lines: list[str | None]
    zlines: list[bytes | None]
    size_bytes: int


def rows_of_batch(
    session_id: str,
    events: Sequence[SessionEvent],
    lines: Sequence[bytes],
    first_seq: int,
    compressor: zstandard.ZstdCompressor | None,
) -> EncodedRows:
    """The rows storing ``events`` (their canonical ``lines`` given) from ``first_seq`` on;
    ``ValueError`` (``assert_contiguous``'s, naming the expected seq) otherwise."""
    assert_contiguous(session_id, events, first_seq)
    seqs = list(range(first_seq, first_seq + len(lines)))
    texts: list[str | None] = []
    frames: list[bytes | None] = []
    size = 0
    for line in lines:
        size += len(line) + 1
        if compressor is not None and len(line) >= COMPRESS_MIN_BYTES:
            frame = compressor.compress(line)
            if len(frame) < len(line):
                texts.append(None)
                frames.append(frame)
                continue
        texts.append(line.decode())
        frames.append(None)
    return EncodedRows(seqs, texts, frames, size)


class RowError(ValueError):
    """A stored row does not decode to the event it stands for."""


def decode_stored_row(seq: int, line: str | None, zline: bytes | None) -> SessionEvent:
    """The event of one stored row; ``RowError`` (or a codec ``ValueError``) when malformed."""
    if line is None:
        if zline is None:
            raise RowError("the row has neither line nor zline")
        event = decode_event(decompress_frame(zline, MAX_LINE_BYTES, zstandard, RowError))
    else:
        event = decode_event(line)
    if event.type in ROW_TYPES:
        raise RowError(f"the row at seq {seq} is a packed {event.type} row, not one event")
    if event.seq != seq:
        raise RowError(f"the row at seq {seq} holds an event with seq {event.seq}")
    return event


ROW_ERRORS = (RowError, SessionFormatError, ValueError, TypeError, UnicodeDecodeError)


def decode_stored_rows(
    rows: Sequence[StoredRow],
    first_seq: int,
    corruption: Callable[[str, int], Exception],
) -> list[SessionEvent]:
    """The events of ``rows``, which must hold seqs ``first_seq, first_seq + 1, ...``; a missing
    seq or a row that does not decode raises ``corruption(reason, seq)``.

    The run of plain rows goes to ``dsh_session.decode_rows`` in one call; compressed or bad rows
    go one by one."""
    events: list[SessionEvent] = []
    expected = first_seq
    index = 0
    total = len(rows)
    while index < total:
        end = index
        while end < total and rows[end][1] is not None and rows[end][0] == expected + end - index:
            end += 1
        if end > index:
            lines: list[Any] = [row[1] for row in rows[index:end]]
            try:
                decoded, used = decode_rows(lines, expected)
            except Exception:  # a malformed row it could not stop at: row by row words it
                decoded, used = [], 0
            if len(decoded) == used:  # (a line taken as a packed row is never ours: row by row)
                events += decoded
                expected += used
                index += used
                if index == end:
                    continue
        seq, line, zline = rows[index]
        if seq != expected:
            raise corruption(f"the log has no row for seq {expected}", expected)
        try:
            events.append(decode_stored_row(seq, line, zline))
        except ROW_ERRORS as error:
            raise corruption(str(error), seq) from error
        expected += 1
        index += 1
    return events
