"""One captured stream: a bounded window in memory, the whole stream in a private spill file."""

from __future__ import annotations

import codecs
import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from dsh_shell import CollectedOutput


class SpillDirectory:
    """A private (0700) directory for spill files, made on first use, removed by `remove`."""

    def __init__(self, parent: Path | None) -> None:
        self._parent = parent
        self._path: Path | None = None

    def new_file(self, label: str) -> tuple[BinaryIO, Path]:
        """A new, empty spill file (mode 0600) open for writing, and its path."""
        if self._path is None:
            self._path = Path(tempfile.mkdtemp(prefix="dsh-subprocess-spill-", dir=self._parent))
        fd, name = tempfile.mkstemp(prefix=f"{label}-", suffix=".out", dir=self._path)
        return os.fdopen(fd, "wb"), Path(name)

    def remove(self) -> None:
        """Delete the directory and every spill file in it."""
        if self._path is not None:
            shutil.rmtree(self._path, ignore_errors=True)
            self._path = None


def _without_partial_character(data: bytes) -> bytes:
    """Drop the UTF-8 continuation bytes a cut left at the front (at most three)."""
    start = 0
    while start < min(3, len(data)) and 0x80 <= data[start] <= 0xBF:
        start += 1
    return data[start:]


class StreamCapture:
    """What one stream (stdout or stderr) produced, bounded in memory.

    The last ``max_bytes`` bytes stay in memory. The whole stream also goes to a spill file
    while it is at most ``spill_cap`` bytes long; once it outgrows the cap the file is deleted,
    so a spill path always names the complete stream. A foreground capture opens its spill file
    only when the stream first overflows memory (everything so far is still in the window then);
    a background capture (``eager_spill``) opens it at the first byte, because reads consume
    the window. A capture that never dropped a byte deletes its spill file on `close`.
    ``on_text`` (a foreground run's ``spec.on_output``, bound to this stream) hears the stream
    as it arrives, decoded; a listener that raises is ignored.
    """

    def __init__(
        self,
        label: str,
        max_bytes: int,
        spill: SpillDirectory,
        spill_cap: int,
        *,
        eager_spill: bool = False,
        on_text: Callable[[str], None] | None = None,
    ) -> None:
        self._label = label
        self._on_text = on_text
        self._live_decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._max_bytes = max_bytes
        self._spill = spill
        self._spill_cap = spill_cap
        self._eager_spill = eager_spill
        self._window = bytearray()
        self._file: BinaryIO | None = None
        self._spill_path: Path | None = None
        self._spill_lost = spill_cap <= 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._lossy = False  # bytes were dropped since the last `take`
        self.total = 0
        """Bytes the stream produced so far."""
        self.truncated = False
        """Whether any byte ever fell out of the window."""
        self.closed = False
        """Whether the stream has ended (`close` was called)."""

    def feed(self, data: bytes) -> None:
        """Add bytes the command wrote."""
        if not data:
            return
        if self._on_text is not None:
            self._tell(self._live_decoder.decode(data))
        self._spill_write(data)
        self.total += len(data)
        self._window += data
        excess = len(self._window) - self._max_bytes
        if excess > 0:
            del self._window[:excess]
            self.truncated = self._lossy = True

    def _spill_write(self, data: bytes) -> None:
        if self._spill_lost:
            return
        if self.total + len(data) > self._spill_cap:
            self._drop_spill()  # the stream outgrew the cap: no file may claim to be complete
            return
        if self._file is None:
            if not self._eager_spill and len(self._window) + len(data) <= self._max_bytes:
                return  # still fits in memory: no file needed yet
            self._file, self._spill_path = self._spill.new_file(self._label)
            self._file.write(self._window)  # the whole stream so far (nothing was dropped yet)
        self._file.write(data)

    def _drop_spill(self) -> None:
        self._spill_lost = True
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._spill_path is not None:
            with contextlib.suppress(OSError):
                self._spill_path.unlink()
            self._spill_path = None

    @property
    def spill_path(self) -> Path | None:
        """The file holding the complete stream, if there is one."""
        return None if self._spill_lost else self._spill_path

    def _tell(self, text: str) -> None:
        if text and self._on_text is not None:
            with contextlib.suppress(Exception):  # for display only: the stream goes on
                self._on_text(text)

    def close(self) -> None:
        """The stream ended: flush the spill file, or delete it when memory held everything."""
        if self._on_text is not None:
            self._tell(self._live_decoder.decode(b"", final=True))
        self.closed = True
        if self._file is not None:
            self._file.close()
            self._file = None
        if not self.truncated:
            self._drop_spill()

    def collected(self) -> CollectedOutput:
        """The foreground view: the window (the tail, when truncated) and the spill path."""
        data = bytes(self._window)
        if self.truncated:
            data = _without_partial_character(data)
        text = data.decode("utf-8", errors="replace")
        return CollectedOutput(text, truncated=self.truncated, spill_path=self.spill_path)

    def take(self) -> tuple[str, bool]:
        """The background view: the text since the previous take, and whether bytes were lost."""
        data = bytes(self._window)
        self._window.clear()
        lossy, self._lossy = self._lossy, False
        if lossy:  # the front was cut off: restart decoding at a character boundary
            self._decoder.reset()
            data = _without_partial_character(data)
        return self._decoder.decode(data, final=self.closed), lossy
