"""``read``: a text file with line numbers, a window of lines, a byte cap; images as images."""

from __future__ import annotations

import base64
import os
import stat
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from dsh_llm import ImageBlock, TextBlock
from dsh_tool_fs._base import FileTool
from dsh_tool_fs._confinement import EscalationArgs, open_verified
from dsh_tool_fs._errors import FsToolError, NotTextError
from dsh_tool_fs._observations import OBSERVED_META_KEY, Observation
from dsh_tools import ToolExecution, ToolResult

__all__ = [
    "MAX_IMAGE_BYTES",
    "READ_LIMIT",
    "READ_MAX_BYTES",
    "READ_MAX_LINE",
    "ReadArgs",
    "ReadTool",
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

_OptionalLine = Annotated[int | None, WithJsonSchema({"type": "integer", "minimum": 1})]


class ReadArgs(BaseModel):
    """The ``read`` tool's parameters."""

    model_config = ConfigDict(title="read", extra="forbid")

    file_path: str = Field(description="The file to read: absolute, or relative to the workspace.")
    offset: _OptionalLine = Field(
        default=None, ge=1, description="The first line to show (1-based). Default: 1."
    )
    limit: _OptionalLine = Field(
        default=None,
        ge=1,
        le=READ_LIMIT,
        description=f"How many lines to show, at most {READ_LIMIT} (the default).",
    )


class ReadSandboxArgs(EscalationArgs, ReadArgs):
    """The ``read`` tool's parameters under a sandbox."""

    model_config = ConfigDict(title="read", extra="forbid")


def _image_type(head: bytes) -> str | None:
    for magic, mime in _IMAGE_MAGIC:
        if head.startswith(magic):
            return mime
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


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


def _lines(fd: int, size: int) -> tuple[list[str], bytes | None, bool]:
    """The file's lines (without their ends), its whole content when it was read whole, and
    whether it is valid UTF-8. A NUL in the first 8 KiB marks a binary file."""
    if size <= WHOLE_FILE_BYTES:
        data = read_file_bytes(fd, WHOLE_FILE_BYTES + 1)
        if b"\0" in data[:8192]:
            raise NotTextError("binary file")
        try:
            text, valid = data.decode("utf-8"), True
        except UnicodeDecodeError:
            text, valid = data.decode("utf-8", errors="replace"), False
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return [line.removesuffix("\r") for line in lines], data, valid
    with os.fdopen(os.dup(fd), "rb") as stream:
        head = stream.read(8192)
        if b"\0" in head:
            raise NotTextError("binary file")
        stream.seek(0)
        collected: list[str] = []
        valid = True
        for raw in stream:
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                line, valid = raw.decode("utf-8", errors="replace"), False
            collected.append(line.rstrip("\n").removesuffix("\r"))
        return collected, None, valid


class ReadTool(FileTool):
    """``read``: see the module docs and the package README for the output's shape."""

    name = "read"
    description = (
        "Read a text file (numbered lines; use offset and limit to page through a long one) or "
        "an image (PNG, JPEG, GIF, WebP). Use it rather than cat, head or tail. Read a file "
        "before you edit or overwrite it."
    )
    plain_args = ReadArgs
    sandbox_args = ReadSandboxArgs

    def is_concurrency_safe(self, args: Any) -> bool:
        """Reads may run alongside each other."""
        return True

    async def execute(self, args: Any, execution: ToolExecution) -> ToolResult:
        """Read the file (see the module docs)."""
        path = self.target(args, execution, args.file_path, "read", "file_path")
        shown = str(path)
        try:
            fd = open_verified(path, os.O_RDONLY)
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
            if stat.S_ISDIR(status.st_mode):
                raise FsToolError(
                    f"{shown} is a directory; use glob to list it", code="FS_NOT_A_FILE", path=shown
                )
            if not stat.S_ISREG(status.st_mode):
                raise FsToolError(
                    f"{shown} is not a regular file", code="FS_NOT_A_FILE", path=shown
                )
            head = os.pread(fd, 16, 0)
            mime = _image_type(head)
            if mime is not None:
                return self._image(fd, status, shown, mime, execution)
            try:
                lines, content, valid = _lines(fd, status.st_size)
            except NotTextError:
                raise NotTextError(
                    f"{shown} is a binary file; read shows text files and images", path=shown
                ) from None
        finally:
            os.close(fd)
        observation = Observation.of(shown, status, content)
        self.settings.observations.record(execution, observation)
        text = _render(shown, lines, args.offset or 1, args.limit or READ_LIMIT, valid)
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


def _render(shown: str, lines: list[str], offset: int, limit: int, valid: bool) -> str:
    total = len(lines)
    header = f"<path>{shown}</path>\n<type>file</type>\n<content>\n"
    note = "" if valid else "(The file is not valid UTF-8: invalid bytes are shown as U+FFFD.)\n"
    if total == 0:
        return f"{header}{note}(The file is empty.)\n</content>"
    if offset > total:
        raise FsToolError(
            f"offset {offset} is past the end of {shown} ({_lines_count(total)})",
            code="FS_BAD_OFFSET",
            path=shown,
        )
    shown_lines: list[str] = []
    used = 0
    last = offset - 1
    capped = False
    for number in range(offset, min(total, offset + limit - 1) + 1):
        line = lines[number - 1]
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
    if capped:
        footer = (
            f"(Output capped at {READ_MAX_BYTES // 1024} KiB: showing lines {offset}-{last} of "
            f"{total}. Continue with offset={last + 1}.)"
        )
    elif last < total:
        footer = f"(Showing lines {offset}-{last} of {total}. Continue with offset={last + 1}.)"
    else:
        footer = f"(End of file: {_lines_count(total)} in total.)"
    body = "\n".join(shown_lines)
    return f"{header}{note}{body}\n\n{footer}\n</content>"
