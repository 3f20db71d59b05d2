"""Where stdio servers' stderr goes: line by line, each under its server's name, into a text
stream or into a log file that rotates at a cap (one older file kept), so a chatty server
can never fill the disk."""

from __future__ import annotations

import codecs
import os
import sys
from pathlib import Path
from typing import BinaryIO, Protocol, TextIO

__all__ = [
    "DEFAULT_LOG_MAX_BYTES",
    "MIN_LOG_MAX_BYTES",
    "RotatingLogFile",
    "ServerLines",
    "TextSink",
    "TextStreamSink",
]

DEFAULT_LOG_MAX_BYTES = 10 * 1024 * 1024
"""The default cap of the servers' log file: it is rotated (to ``<name>.1``) before it would
grow beyond 10 MiB, so the log and its older file never hold more than 20 MiB."""

MIN_LOG_MAX_BYTES = 64 * 1024
_MAX_LINE_CHARS = 8 * 1024  # a longer line is written as several, so one write fits the cap


class TextSink(Protocol):
    """Where the prefixed lines go."""

    def write_line(self, line: str) -> None: ...
    def close(self) -> None: ...


class TextStreamSink:
    """Lines written to a text stream the caller owns (flushed after each line, never closed);
    ``None`` is whatever ``sys.stderr`` is at each line."""

    def __init__(self, stream: TextIO | None) -> None:
        self._stream = stream

    def write_line(self, line: str) -> None:
        stream = sys.stderr if self._stream is None else self._stream
        stream.write(line)
        stream.flush()

    def close(self) -> None:
        """Nothing to release: the stream belongs to the caller."""


class RotatingLogFile:
    """A log file appended to, and renamed to ``<name>.1`` (replacing an older one) before a
    line would take it past ``max_bytes``. Opened at the first line (the parent directory is
    created), so a configuration without stdio servers never creates it."""

    def __init__(self, path: str | os.PathLike[str], max_bytes: int) -> None:
        if max_bytes < MIN_LOG_MAX_BYTES:
            raise ValueError(
                f"log_max_bytes must be at least {MIN_LOG_MAX_BYTES} (64 KiB), not {max_bytes}"
            )
        self.path = Path(path)
        self.max_bytes = max_bytes
        self._file: BinaryIO | None = None

    def write_line(self, line: str) -> None:
        data = line.encode("utf-8", errors="replace")
        file = self._current()
        # the file's own size: another dsh process may append to the same log
        if os.fstat(file.fileno()).st_size + len(data) > self.max_bytes:
            file = self._rotate()
        file.write(data)
        file.flush()

    def _current(self) -> BinaryIO:
        file = self._file
        if file is not None and not self._replaced(file):
            return file
        if file is not None:
            file.close()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "ab")  # noqa: SIM115 - kept open across lines
        return self._file

    def _replaced(self, file: BinaryIO) -> bool:
        """Whether the path no longer names our file (another process rotated it)."""
        try:
            named = os.stat(self.path)
        except FileNotFoundError:
            return True
        ours = os.fstat(file.fileno())
        return (named.st_dev, named.st_ino) != (ours.st_dev, ours.st_ino)

    def _rotate(self) -> BinaryIO:
        if self._file is not None:
            self._file.close()
            self._file = None
        os.replace(self.path, self.path.with_name(self.path.name + ".1"))
        return self._current()

    def close(self) -> None:
        """Close the file (a later line opens it again)."""
        if self._file is not None:
            self._file.close()
            self._file = None


class ServerLines:
    """One server's stderr bytes as ``[server] line`` lines in a sink: decoded as UTF-8 with
    replacement, lines over 8 KiB split, a last line without newline written at ``close()``."""

    def __init__(self, server: str, sink: TextSink) -> None:
        self._prefix = f"[{server}] "
        self._sink = sink
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""

    def feed(self, data: bytes) -> None:
        """Take the next bytes the server wrote."""
        self._pending += self._decoder.decode(data)
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            self._write(line)
        while len(self._pending) > _MAX_LINE_CHARS:
            self._sink.write_line(self._prefix + self._pending[:_MAX_LINE_CHARS] + "\n")
            self._pending = self._pending[_MAX_LINE_CHARS:]

    def close(self) -> None:
        """The stream ended: write what is left."""
        self._pending += self._decoder.decode(b"", final=True)
        if self._pending:
            self._write(self._pending)
            self._pending = ""

    def _write(self, line: str) -> None:
        line = line.removesuffix("\r")
        for start in range(0, max(len(line), 1), _MAX_LINE_CHARS):
            self._sink.write_line(self._prefix + line[start : start + _MAX_LINE_CHARS] + "\n")
