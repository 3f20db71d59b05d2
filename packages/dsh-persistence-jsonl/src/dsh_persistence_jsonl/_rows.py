"""The stored rows behind a handle's events: the pristine source a re-read decodes again.

A handle hands each decoded event out at most once (the caller owns what a read returns and may
change it); an event asked for again is decoded anew from the row it was stored as. Rows are
the physical lines (plain) or plaintext lines (zstd) exactly as scanned or appended, kept in
blocks: a run of one-event rows is one block (seq -> row by subtraction); a block holding packed
rows (one row, several events) finds a seq's row by bisecting its rows' first seqs, computed
the first time that block is re-read.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from dsh_session import SessionEvent, decode_rows, row_last_seq


class _Block:
    __slots__ = ("firsts", "rows", "single")

    def __init__(self, rows: list[bytes], *, single: bool) -> None:
        self.rows = rows
        self.single = single  # one event per row
        self.firsts: list[int] | None = None  # per row its first seq (packed blocks, lazily)

    def row_firsts(self, first: int) -> list[int]:
        firsts = self.firsts
        if firsts is None:
            firsts = [first]
            firsts.extend(row_last_seq(row) + 1 for row in self.rows[:-1])
            self.firsts = firsts
        return firsts


class StoredRows:
    """The rows of seqs ``0 .. count - 1``, appended in order; :meth:`decode` rebuilds events."""

    __slots__ = ("_blocks", "_firsts", "count")

    def __init__(self) -> None:
        self._firsts: list[int] = []  # the first seq of each block
        self._blocks: list[_Block] = []
        self.count = 0
        """How many events the rows stand for (the next seq)."""

    def add(self, rows: Sequence[bytes], events: int) -> None:
        """Keep ``rows`` (not taken over: copied or extended from), which stand for the next
        ``events`` events."""
        if not rows:
            return
        single = events == len(rows)
        blocks = self._blocks
        if single and blocks and blocks[-1].single:
            blocks[-1].rows.extend(rows)
        else:
            self._firsts.append(self.count)
            blocks.append(_Block(list(rows), single=single))
        self.count += events

    def extend(self, other: StoredRows) -> None:
        """Keep ``other``'s rows after these (``other`` starts at seq ``self.count``)."""
        firsts = other._firsts
        for index, block in enumerate(other._blocks):
            end = firsts[index + 1] if index + 1 < len(firsts) else other.count
            self.add(block.rows, end - firsts[index])

    def decode(self, start: int, stop: int) -> list[SessionEvent]:
        """Fresh events for seqs ``start .. stop - 1`` (all below ``count``), decoded again from
        their rows."""
        out: list[SessionEvent] = []
        firsts = self._firsts
        while start < stop:
            index = bisect_right(firsts, start) - 1
            block = self._blocks[index]
            first = firsts[index]
            end = min(stop, firsts[index + 1] if index + 1 < len(firsts) else self.count)
            if block.single:
                row_seq = start
                rows = block.rows[start - first : end - first]
            else:
                row_firsts = block.row_firsts(first)
                low = bisect_right(row_firsts, start) - 1
                row_seq = row_firsts[low]
                rows = block.rows[low : bisect_left(row_firsts, end)]
            events, done = decode_rows(rows, row_seq)
            if done != len(rows):  # the rows decoded when stored and are immutable bytes
                raise AssertionError(f"a stored row no longer decodes at seq {row_seq + done}")
            out.extend(events[start - row_seq : end - row_seq])
            start = end
        return out
