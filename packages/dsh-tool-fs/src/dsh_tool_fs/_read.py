"""``read``: a text file with line numbers, a window of lines, a byte cap; images as images."""

from __future__ import annotations

import asyncio
import base64
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, BinaryIO

from pydantic import BaseModel, Field, WithJsonSchema

from dsh_llm import ImageBlock, TextBlock
from dsh_tool_fs._access import FileAccess, FileAccessError, still_in_place, through_access
from dsh_tool_fs._base import FileTool
from dsh_tool_fs._confinement import EscalationArgs, open_verified
from dsh_tool_fs._errors import FsToolError, NotTextError, require_regular_file
from dsh_tool_fs._observations import OBSERVED_META_KEY, Observation
from dsh_tool_fs._schema import args_config
from dsh_tools import ToolExecution, ToolResult

__all__ = [
    "MAX_IMAGE_BYTES",
    "READ_LIMIT",
    "READ_MAX_BYTES",
    "READ_MAX_LINE",
    "ReadArgs",
    "ReadTool",
    "accessed_bytes",
    "read_file_bytes",
]

READ_LIMIT = 2000
"""Lines one ``read`` returns at most (and by default)."""
READ_MAX_LINE = 2000
"""Characters kept of one line."""
READ_MAX_BYTES = 50 * 1024
"""UTF-8 bytes of the numbered lines one ``read`` returns at most."""
MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""The largest image ``read`` returns as an image block."""
WHOLE_FILE_BYTES = 16 * 1024 * 1024
"""A file up to this size is read whole (and its digest kept); a larger one is streamed."""

_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)

_IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})
"""Files ``read`` takes from the disk even through a `FileAccess` (it gives text only)."""

_OptionalLine = Annotated[int | None, WithJsonSchema({"type": "integer", "minimum": 1})]


class ReadArgs(BaseModel):
    """The ``read`` tool's parameters."""

    model_config = args_config("read")

    file_path: str = Field(description="Absolute, or relative to the workspace.")
    offset: _OptionalLine = Field(default=None, ge=1, description="First line (1-based).")
    limit: _OptionalLine = Field(
        default=None,
        ge=1,
        le=READ_LIMIT,
        description=f"Lines to show (default and most: {READ_LIMIT}).",
    )


class ReadSandboxArgs(EscalationArgs, ReadArgs):
    """The ``read`` tool's parameters under a sandbox."""

    model_config = args_config("read")


def _image_type(head: bytes) -> str | None:
    for magic, mime in _IMAGE_MAGIC:
        if head.startswith(magic):
            return mime
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def accessed_bytes(access: FileAccess, path: Path, text: object) -> bytes:
    """What ``access`` answered for ``path`` as UTF-8, checked: a text (`FileAccessError`
    otherwise) of at most `WHOLE_FILE_BYTES` (``FS_TOO_LARGE``)."""
    shown = str(path)
    if not isinstance(text, str):
        raise FileAccessError(
            f"{shown}: {access.name} answered {type(text).__name__}, not text", path=shown
        )
    if len(text) > WHOLE_FILE_BYTES:  # a character is at least one byte: over before encoding
        data = text[: WHOLE_FILE_BYTES + 1].encode("utf-8", errors="surrogatepass")
    else:
        data = text.encode("utf-8", errors="surrogatepass")
    if len(data) > WHOLE_FILE_BYTES:
        raise FsToolError(
            f"{shown} as {access.name} holds it is over the {WHOLE_FILE_BYTES} bytes read takes "
            "through it",
            code="FS_TOO_LARGE",
            path=shown,
        )
    return data


def read_file_bytes(fd: int, limit: int) -> bytes:
    """At most ``limit`` bytes from ``fd``'s current offset."""
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


_STREAM_LINE_CAP = READ_MAX_LINE * 4 + 8
"""Bytes of one line a streamed read keeps at most (2,000 characters of UTF-8 and a margin)."""


@dataclass(frozen=True, slots=True)
class _Window:
    """The lines to show (from line ``first``), how many lines the file has (``None``: more
    lines follow the window, how many is not known without reading the rest), its whole content
    when it was read whole, whether it is valid UTF-8, and the line (``endless``) whose end was
    not found within `_COUNT_AHEAD` bytes: the window stops at it."""

    lines: list[str]
    first: int
    total: int | None
    content: bytes | None
    valid: bool
    endless: int | None = None


class _ReadCancelled(Exception):
    """The ``read`` call was cancelled; its worker thread stops at the next check."""


class _LineTooLong(Exception):
    """Line ``number`` (before the window) goes on past `_COUNT_AHEAD` bytes, ending at no
    line end that far: the window cannot be reached without reading the whole of it."""

    def __init__(self, number: int, position: int) -> None:
        super().__init__(number, position)
        self.number = number
        self.position = position


_COUNT_AHEAD = 16 * 1024 * 1024
"""Bytes a streamed read looks past its window for the end of the file, to give the total, and
at most skips of one over-long line (one cut at `_STREAM_LINE_CAP`) for its end."""


def _decode(raw: bytes) -> tuple[str, bool]:
    try:
        return raw.decode("utf-8"), True
    except UnicodeDecodeError:
        return raw.decode("utf-8", errors="replace"), False


def _skip_line(stream: BinaryIO, stop: threading.Event) -> bool:
    """Read on to just past the end of the current line, at most `_COUNT_AHEAD` bytes; whether
    that end (a newline or the end of the file) was found."""
    skipped = 0
    while skipped <= _COUNT_AHEAD:
        if stop.is_set():
            raise _ReadCancelled
        rest = stream.readline(1 << 20)
        if not rest or rest.endswith(b"\n"):
            return True
        skipped += len(rest)
    return False


def _whole_window(data: bytes, offset: int, limit: int) -> _Window:
    """The lines ``offset`` .. ``offset + limit - 1`` of a whole file's ``data``; a NUL in its
    first 8 KiB marks a binary file (`NotTextError`)."""
    if b"\0" in data[:8192]:
        raise NotTextError("binary file")
    text, valid = _decode(data)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    shown = [line.removesuffix("\r") for line in lines[offset - 1 : offset - 1 + limit]]
    return _Window(shown, offset, len(lines), data, valid)


def _window(fd: int, size: int, offset: int, limit: int, stop: threading.Event) -> _Window:
    """The lines ``offset`` .. ``offset + limit - 1``. A file up to `WHOLE_FILE_BYTES` is read
    whole; a larger one is streamed up to the end of the window only (keeping at most
    `_STREAM_LINE_CAP` bytes of any line), then at most `_COUNT_AHEAD` bytes more for the
    total. The end of a line cut at that cap is looked for only when a line after it is needed,
    and then at most `_COUNT_AHEAD` bytes on: a window stops at a line without an end that
    far (`_Window.endless`), and a line before the window without one raises `_LineTooLong`.
    A NUL in the first 8 KiB marks a binary file. ``stop`` set: `_ReadCancelled`."""
    if size <= WHOLE_FILE_BYTES:
        return _whole_window(read_file_bytes(fd, WHOLE_FILE_BYTES + 1), offset, limit)
    with os.fdopen(os.dup(fd), "rb") as stream:
        if b"\0" in stream.read(8192):
            raise NotTextError("binary file")
        stream.seek(0)
        kept: list[str] = []
        valid, total = True, 0
        end = offset + limit - 1
        while total < end and (raw := stream.readline(_STREAM_LINE_CAP)):
            if stop.is_set():
                raise _ReadCancelled
            total += 1
            cut = len(raw) == _STREAM_LINE_CAP and not raw.endswith(b"\n")
            if total >= offset:
                line, ok = _decode(raw)
                valid = valid and ok
                kept.append(line.rstrip("\n").removesuffix("\r"))
            if not cut:
                continue
            if total == end:  # the window's last line: its end is not needed
                following = stream.read(1)
                if following == b"":
                    return _Window(kept, offset, total, None, valid)
                if following != b"\n":
                    return _Window(kept, offset, None, None, valid)
                break  # it ended right at the cap: count what follows
            if not _skip_line(stream, stop):
                if total < offset:
                    raise _LineTooLong(total, stream.tell())
                return _Window(kept, offset, None, None, valid, endless=total)
        return _Window(kept, offset, _count_rest(stream, total), None, valid)


def _count_rest(stream: BinaryIO, counted: int) -> int | None:
    """``counted`` plus the lines after ``stream``'s position (at a line start) when the file
    ends within `_COUNT_AHEAD` bytes; ``None`` when it goes on."""
    looked = 0
    last = b"\n"
    while looked <= _COUNT_AHEAD:
        chunk = stream.read(1 << 20)
        if not chunk:
            return counted + (last != b"\n")
        counted += chunk.count(b"\n")
        looked += len(chunk)
        last = chunk[-1:]
    return None


class ReadTool(FileTool):
    """``read``: see the module docs and the package README for the output's shape."""

    name = "read"
    description = (
        "Read a text file as numbered lines (page with offset/limit), or an image. Read a file "
        "before editing or overwriting it."
    )
    plain_args = ReadArgs
    sandbox_args = ReadSandboxArgs

    def is_concurrency_safe(self, args: Any) -> bool:
        """Reads may run alongside each other."""
        return True

    async def execute(self, args: Any, execution: ToolExecution) -> ToolResult:
        """Read the file (see the module docs), off the event loop, or through the session's
        `FileAccess` when it reads (images always from the disk)."""
        path = self.target(args, execution, args.file_path, "read", "file_path")
        access = self.access(execution)
        if access is not None and path.suffix.lower() not in _IMAGE_SUFFIXES:
            return await self._read_through(access, args, execution, path)
        stop = threading.Event()
        try:
            return await asyncio.to_thread(self._read, args, execution, path, stop)
        except asyncio.CancelledError:
            stop.set()  # the worker thread stops reading at its next line
            raise

    async def _read_through(
        self, access: FileAccess, args: Any, execution: ToolExecution, path: Path
    ) -> ToolResult:
        shown = str(path)
        still_in_place(path, missing_ok=True)  # the editor may hold a buffer not yet saved
        text = await through_access(
            access, "read", path, access.read_text(path), self.settings.access_timeout
        )
        still_in_place(path, missing_ok=True)  # what was read is what was checked
        # up to 16 MiB to encode, split and hash: off the event loop, as the disk path
        data, rendered = await asyncio.to_thread(self._render_text, access, args, path, text)
        observation = Observation.of_content(shown, data)
        self.settings.observations.record(execution, observation)
        return ToolResult.ok(rendered, meta={OBSERVED_META_KEY: observation.to_meta()})

    def _render_text(
        self, access: FileAccess, args: Any, path: Path, text: object
    ) -> tuple[bytes, str]:
        shown = str(path)
        data = accessed_bytes(access, path, text)
        try:
            window = _whole_window(data, args.offset or 1, args.limit or READ_LIMIT)
        except NotTextError:
            raise NotTextError(
                f"{shown} is a binary file; read shows text files and images", path=shown
            ) from None
        return data, _render(shown, window)  # an offset past the end raises: nothing was read

    def _read(
        self, args: Any, execution: ToolExecution, path: Path, stop: threading.Event
    ) -> ToolResult:
        shown = str(path)
        try:
            fd = open_verified(path, os.O_RDONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            raise FsToolError(f"{shown} does not exist", code="FS_NOT_FOUND", path=shown) from None
        except IsADirectoryError:
            raise FsToolError(
                f"{shown} is a directory; use glob to list it", code="FS_NOT_A_FILE", path=shown
            ) from None
        except OSError as error:
            raise FsToolError(
                f"{shown} cannot be read: {error.strerror}", code="FS_IO", path=shown
            ) from None
        try:
            status = os.fstat(fd)
            require_regular_file(status.st_mode, shown)
            head = os.pread(fd, 16, 0)
            mime = _image_type(head)
            if mime is not None:
                return self._image(fd, status, shown, mime, execution)
            try:
                window = _window(
                    fd, status.st_size, args.offset or 1, args.limit or READ_LIMIT, stop
                )
            except NotTextError:
                raise NotTextError(
                    f"{shown} is a binary file; read shows text files and images", path=shown
                ) from None
            except _LineTooLong as long:
                raise FsToolError(
                    f"line {long.number} of {shown} is longer than {_COUNT_AHEAD} bytes (read "
                    f"stopped at byte {long.position} without finding its end), so the lines "
                    "after it cannot be reached by offset; use grep to search the file",
                    code="FS_TOO_LARGE",
                    path=shown,
                ) from None
        finally:
            os.close(fd)
        text = _render(shown, window)  # an offset past the end raises: nothing was read
        observation = Observation.of(shown, status, window.content)
        self.settings.observations.record(execution, observation)
        return ToolResult.ok(text, meta={OBSERVED_META_KEY: observation.to_meta()})

    def _image(
        self, fd: int, status: os.stat_result, shown: str, mime: str, execution: ToolExecution
    ) -> ToolResult:
        if status.st_size > MAX_IMAGE_BYTES:
            raise FsToolError(
                f"{shown} is an image of {status.st_size} bytes, over the {MAX_IMAGE_BYTES} "
                "bytes read returns",
                code="FS_TOO_LARGE",
                path=shown,
            )
        data = read_file_bytes(fd, MAX_IMAGE_BYTES + 1)
        observation = Observation.of(shown, status, data)
        self.settings.observations.record(execution, observation)
        blocks: list[TextBlock | ImageBlock] = [
            TextBlock(text=f"<path>{shown}</path>\n<type>image</type> ({mime}, {len(data)} bytes)"),
            ImageBlock(data=base64.b64encode(data).decode("ascii"), mime_type=mime),
        ]
        return ToolResult.ok(blocks, meta={OBSERVED_META_KEY: observation.to_meta()})


def _lines_count(total: int) -> str:
    return "1 line" if total == 1 else f"{total} lines"


def _render(shown: str, window: _Window) -> str:
    total, offset = window.total, window.first
    header = f"<path>{shown}</path>\n<type>file</type>\n<content>\n"
    note = (
        ""
        if window.valid
        else ("(The file is not valid UTF-8: invalid bytes are shown as U+FFFD.)\n")
    )
    if total == 0:
        return f"{header}{note}(The file is empty.)\n</content>"
    if total is not None and offset > total:
        raise FsToolError(
            f"offset {offset} is past the end of {shown} ({_lines_count(total)})",
            code="FS_BAD_OFFSET",
            path=shown,
        )
    shown_lines: list[str] = []
    used = 0
    last = offset - 1
    capped = False
    for number, line in enumerate(window.lines, offset):
        if len(line) > READ_MAX_LINE:
            line = line[:READ_MAX_LINE] + f"... (line truncated to {READ_MAX_LINE} characters)"
        entry = f"{number}: {line}"
        size = len(entry.encode("utf-8", errors="surrogatepass")) + 1
        if shown_lines and used + size > READ_MAX_BYTES:
            capped = True
            break
        shown_lines.append(entry)
        used += size
        last = number
    # a streamed file's total is known only when it ends soon after the window
    of_total = "; more lines follow" if total is None else f" of {total}"
    if capped:
        footer = (
            f"(Output capped at {READ_MAX_BYTES // 1024} KiB: showing lines {offset}-{last}"
            f"{of_total}. Continue with offset={last + 1}.)"
        )
    elif window.endless is not None and last == window.endless:
        footer = (
            f"(Showing lines {offset}-{last}; line {last} is longer than {_COUNT_AHEAD} bytes, "
            "so the lines after it are not shown: use grep to search the rest.)"
        )
    elif total is None or last < total:
        footer = f"(Showing lines {offset}-{last}{of_total}. Continue with offset={last + 1}.)"
    else:
        footer = f"(End of file: {_lines_count(total)} in total.)"
    body = "\n".join(shown_lines)
    return f"{header}{note}{body}\n\n{footer}\n</content>"
