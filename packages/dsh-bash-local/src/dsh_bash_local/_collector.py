"""`OutputCollector`: one stream's tail in memory, the whole stream in a bounded spill file."""

from __future__ import annotations

import codecs
import contextlib
import os
from collections.abc import Callable
from pathlib import Path

_UTF8_LEAD_LENGTHS = ((0xF0, 4), (0xE0, 3), (0xC0, 2))


def _is_continuation(byte: int) -> bool:
    return 0x80 <= byte < 0xC0


def skip_partial_head(data: bytes | bytearray) -> int:
    """How many leading UTF-8 continuation bytes (at most 3) a cut left at the start."""
    count = 0
    while count < min(3, len(data)) and _is_continuation(data[count]):
        count += 1
    return count


def complete_utf8_end(data: bytes | bytearray) -> int:
    """The length of ``data`` without a trailing, still incomplete UTF-8 sequence."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if _is_continuation(byte):
            continue
        for lead, length in _UTF8_LEAD_LENGTHS:
            if byte >= lead:
                return len(data) - back if length > back else len(data)
        return len(data)
    return len(data)


class OutputCollector:
    """Collects one stream: the last ``max_bytes`` bytes in memory, byte-exact.

    On the first byte that falls out of memory the whole stream so far is written to a new
    0600 file (``O_EXCL``) from ``open_spill`` and every later chunk is appended; if the stream
    outgrows ``spill_cap`` (or a write fails) the file is deleted and spilling stops.
    Offsets count bytes of the whole stream, so readers can consume incrementally.

    ``on_text``, when given, hears the stream as it arrives, decoded as UTF-8 (a character
    split between chunks is held back until it is whole; the rest is told on `close`); an
    exception it raises is swallowed, so a failing listener never costs output.
    """

    def __init__(
        self,
        max_bytes: int,
        spill_cap: int,
        open_spill: Callable[[], tuple[int, Path]],
        on_text: Callable[[str], None] | None = None,
    ) -> None:
        self._max = max_bytes
        self._spill_cap = spill_cap
        self._open_spill = open_spill
        self._buf = bytearray()
        self._total = 0
        self._spill_fd: int | None = None
        self._spill_path: Path | None = None
        self._spill_done = spill_cap <= 0
        self._on_text = on_text
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    @property
    def total(self) -> int:
        """Bytes received so far."""
        return self._total

    @property
    def truncated(self) -> bool:
        """Whether at least one byte fell out of memory."""
        return self._total > len(self._buf)

    @property
    def spill_path(self) -> Path | None:
        """The file holding the complete stream, if there is one."""
        return self._spill_path

    def feed(self, data: bytes) -> None:
        """Add a chunk of the stream."""
        if not data:
            return
        if self._on_text is not None:  # decoding costs nothing when nobody listens
            self._tell(self._decoder.decode(data))
        self._total += len(data)
        if self._spill_fd is not None:
            if self._total > self._spill_cap:
                self._abandon_spill()
            else:
                self._write_spill(data)
        self._buf += data
        excess = len(self._buf) - self._max
        if excess > 0:
            if not self._spill_done:
                self._start_spill()
            del self._buf[:excess]

    def _start_spill(self) -> None:
        self._spill_done = True
        if self._total > self._spill_cap:
            return
        try:
            self._spill_fd, self._spill_path = self._open_spill()
        except OSError:
            return
        self._write_spill(self._buf)  # nothing has been dropped yet: this is the whole stream

    def _write_spill(self, data: bytes | bytearray) -> None:
        assert self._spill_fd is not None
        view = memoryview(data)
        try:
            while view:
                written = os.write(self._spill_fd, view)
                view = view[written:]
        except OSError:
            self._abandon_spill()

    def _abandon_spill(self) -> None:
        if self._spill_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._spill_fd)
            self._spill_fd = None
        if self._spill_path is not None:
            with contextlib.suppress(OSError):
                self._spill_path.unlink()
            self._spill_path = None

    def _tell(self, text: str) -> None:
        if text and self._on_text is not None:
            # A listener is for display only: the stream goes on without it.
            with contextlib.suppress(Exception):
                self._on_text(text)

    def close(self) -> None:
        """Tell the listener what is left, and seal the spill file (its path is withdrawn if
        closing fails)."""
        if self._on_text is not None:
            self._tell(self._decoder.decode(b"", final=True))
            self._on_text = None
        if self._spill_fd is None:
            return
        fd, self._spill_fd = self._spill_fd, None
        try:
            os.close(fd)
        except OSError:
            self._spill_fd = None
            self._abandon_spill()

    def text(self) -> str:
        """The retained text (the tail when truncated), decoded with replacement."""
        start = skip_partial_head(self._buf) if self.truncated else 0
        return self._buf[start:].decode("utf-8", errors="replace")

    def read_from(self, offset: int, *, final: bool) -> tuple[str, int, bool]:
        """Text since ``offset``, the next offset, and whether bytes before it were lost.

        While the stream is open (``final`` false) an incomplete trailing UTF-8 sequence is
        held back for the next read.
        """
        window_start = self._total - len(self._buf)
        lossy = offset < window_start
        start = max(offset, window_start) - window_start
        data = bytes(self._buf[start:])
        if lossy:
            skip = skip_partial_head(data)
            data, start = data[skip:], start + skip
        if not final:
            data = data[: complete_utf8_end(data)]
        next_offset = window_start + start + len(data)
        return data.decode("utf-8", errors="replace"), next_offset, lossy
