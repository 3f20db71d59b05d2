"""Physical rows: a batch of events to rows (packing, bounds, compression) and rows to events."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import zstandard

from dsh_persistence import assert_contiguous, decompress_frame, text_to_column
from dsh_session import (
    ROW_TYPES,
    SessionEvent,
    decode_event,
    decode_row,
    encode_rows,
    row_last_seq,
)

_EVENT_TYPES: Any = SessionEvent

COMPRESS_MIN_BYTES = 4096
"""Rows of at least this many bytes are zstd-compressed (kept only when smaller)."""

COMPRESSION_LEVEL = 3
MAX_PACK_MEMBERS = 1024
"""A packed row stands for at most this many events (reads anchor within this window)."""

MAX_PACK_BYTES = 1024 * 1024
"""A packed row's JSON line is at most this long (longer runs are partitioned)."""

MAX_ROW_BYTES = 1 << 30
"""The largest decompressed row a read accepts (a bound on a corrupt frame header)."""


class RowError(ValueError):
    """A stored row does not decode to the events it claims to stand for."""


Row = tuple[str, int, int, str, int, int, "str | bytes", int]
"""One physical row to insert, as ``INSERT_ROW``'s parameters: ``(session_id, seq, last_seq,
type, time, compressed, payload, written_at)``; ``payload`` is the JSON line as ``str`` (bound as
TEXT), or its zstd frame as ``bytes`` (a BLOB) when ``compressed`` is 1. A plain tuple: the
append path builds ten of these per turn."""

ROW_SEQ = 1
ROW_COMPRESSED = 5
ROW_PAYLOAD = 6


def _tag(line: bytes) -> str:
    prefix = b'{"type":"'
    if line.startswith(prefix):
        end = line.find(b'"', len(prefix))
        if end > 0:
            return line[len(prefix) : end].decode("utf-8")
    raise RowError(f"a packed row does not start with its type tag: {line[:60]!r}")


def _bounded(line: bytes, members: Sequence[SessionEvent]) -> list[bytes]:
    """A packed ``line`` for ``members`` (an eligible run), split in halves until every packed
    row is within the bounds; a run too short to split is stored one row per event."""
    if len(members) <= MAX_PACK_MEMBERS and len(line) <= MAX_PACK_BYTES:
        return [line]
    if len(members) < 6:
        return encode_rows(members, pack_chunks=False)
    half = len(members) // 2
    parts: list[bytes] = []
    for piece in (members[:half], members[half:]):
        rows = encode_rows(piece, pack_chunks=True)
        if len(rows) == 1:
            parts.extend(_bounded(rows[0], piece))
        else:
            parts.extend(rows)
    return parts


def _stored_form(
    line: bytes, compressor: zstandard.ZstdCompressor | None
) -> tuple[int, str | bytes]:
    """``(compressed, payload)`` of a row's line: its zstd frame when compression is on, the line
    is at least ``COMPRESS_MIN_BYTES`` and the frame is smaller; else the line as ``str`` (bound
    as TEXT as given: a ``CAST`` from a BLOB in SQL would copy it again)."""
    if compressor is not None and len(line) >= COMPRESS_MIN_BYTES:
        frame = compressor.compress(line)
        if len(frame) < len(line):
            return 1, frame
    return 0, line.decode()


def rows_of_batch(
    session_id: str,
    events: Sequence[SessionEvent],
    lines: Sequence[bytes],
    *,
    first_seq: int,
    written_at: int,
    pack_chunks: bool,
    compressor: zstandard.ZstdCompressor | None,
) -> list[Row]:
    """The rows storing ``events`` (whose canonical ``lines`` are given) in order.

    Raises ``ValueError`` (``assert_contiguous``'s) unless the events' seqs run from
    ``first_seq`` on. The id and type columns hold their ``text_to_column`` form.
    """
    key = text_to_column(session_id)
    if pack_chunks:
        assert_contiguous(session_id, events, first_seq)
        return _packed_rows(key, events, written_at, compressor)
    rows: list[Row] = []
    append = rows.append
    seq = first_seq
    for event, line in zip(events, lines, strict=True):
        wire = event.to_wire()
        if wire["seq"] != seq:
            assert_contiguous(session_id, events, first_seq)  # raises, naming the index
        compressed, payload = _stored_form(line, compressor)
        kind = text_to_column(wire["type"])
        append((key, seq, seq, kind, wire["time"], compressed, payload, written_at))
        seq += 1
    return rows


def _packed_rows(
    key: str,
    events: Sequence[SessionEvent],
    written_at: int,
    compressor: zstandard.ZstdCompressor | None,
) -> list[Row]:
    physical: list[bytes] = []
    index = 0
    for line in encode_rows(events, pack_chunks=True):
        last = row_last_seq(line)
        count = last - events[index].seq + 1
        if count > 1:
            physical.extend(_bounded(line, events[index : index + count]))
        else:
            physical.append(line)
        index += count
    rows: list[Row] = []
    index = 0
    for line in physical:
        first = events[index]
        last = row_last_seq(line)
        count = last - first.seq + 1
        kind = text_to_column(first.type) if count == 1 else _tag(line)
        compressed, payload = _stored_form(line, compressor)
        rows.append((key, first.seq, last, kind, first.time, compressed, payload, written_at))
        index += count
    return rows


def row_line(seq: int, compressed: int, payload: bytes | str, *, packed: bool) -> bytes | str:
    """The JSON line of a stored row (decompressed with a bound); a plain row's line is given
    and returned as stored (``str`` for TEXT)."""
    if not compressed:
        return payload
    if not isinstance(payload, bytes):
        raise RowError("a compressed row's line is not a BLOB")
    limit = MAX_PACK_BYTES if packed else MAX_ROW_BYTES
    return decompress_frame(payload, limit, zstandard, RowError)


def decode_stored_row(
    seq: int, last_seq: int, compressed: int, payload: bytes | str
) -> list[SessionEvent]:
    """The logical events of one stored row; raises ``RowError`` (or a ``ValueError`` of the
    codec) when the row is malformed or stands for other seqs than its columns say."""
    if last_seq == seq:
        event = decode_event(row_line(seq, compressed, payload, packed=False))
        if event.type in ROW_TYPES:
            raise RowError(f"the row at seq {seq} is a packed {event.type} row, not one event")
        if event.seq != seq:
            raise RowError(f"the row at seq {seq} holds an event with seq {event.seq}")
        return [event]
    events = decode_row(row_line(seq, compressed, payload, packed=True))
    if len(events) != last_seq - seq + 1 or events[0].seq != seq or events[-1].seq != last_seq:
        raise RowError(
            f"the packed row for seqs {seq}..{last_seq} holds "
            f"{len(events)} events from seq {events[0].seq if events else None}"
        )
    return events
