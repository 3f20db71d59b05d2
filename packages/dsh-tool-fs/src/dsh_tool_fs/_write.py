"""``write``: create a file, or replace one the session has read, whole and atomically."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from dsh_tool_fs._access import FileAccess, still_in_place, through_access
from dsh_tool_fs._atomic import write_atomic
from dsh_tool_fs._base import FileTool
from dsh_tool_fs._confinement import EscalationArgs, open_verified
from dsh_tool_fs._errors import FileChangedError, FsToolError
from dsh_tool_fs._observations import OBSERVED_META_KEY, Observation
from dsh_tool_fs._read import WHOLE_FILE_BYTES, accessed_bytes, read_file_bytes
from dsh_tool_fs._schema import args_config
from dsh_tools import InvalidToolArgumentsError, ToolExecution, ToolResult

__all__ = [
    "WriteArgs",
    "WriteTool",
    "current_file",
    "current_version",
    "encode_text",
    "store_text",
    "store_version",
]


class WriteArgs(BaseModel):
    """The ``write`` tool's parameters."""

    model_config = args_config("write")

    file_path: str = Field(description="Absolute, or relative to the workspace.")
    content: str = Field(description="The whole new content.")


class WriteSandboxArgs(EscalationArgs, WriteArgs):
    """The ``write`` tool's parameters under a sandbox."""

    model_config = args_config("write")


def encode_text(tool: str, field: str, text: str) -> bytes:
    """``text`` as UTF-8; a lone surrogate is an argument error naming ``field``."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidToolArgumentsError(tool, [f"{field}: holds a lone surrogate"]) from None


def current_file(path: Path) -> tuple[os.stat_result, bytes | None] | None:
    """The status (and the content, when at most `WHOLE_FILE_BYTES`) of the regular file at
    ``path``, or ``None`` when nothing is there."""
    shown = str(path)
    try:
        fd = open_verified(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO never blocks
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise FsToolError(f"{shown} is a directory", code="FS_NOT_A_FILE", path=shown) from None
    except OSError as error:
        raise FsToolError(
            f"{shown} cannot be opened: {error.strerror}", code="FS_IO", path=shown
        ) from None
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise FsToolError(f"{shown} is not a regular file", code="FS_NOT_A_FILE", path=shown)
        content = (
            read_file_bytes(fd, status.st_size + 1) if status.st_size <= WHOLE_FILE_BYTES else None
        )
        return status, content
    finally:
        os.close(fd)


class WriteTool(FileTool):
    """``write``: see the module docs."""

    name = "write"
    description = (
        "Create or overwrite a file (read an existing one first). Prefer edit for changes."
    )
    plain_args = WriteArgs
    sandbox_args = WriteSandboxArgs

    async def execute(self, args: Any, execution: ToolExecution) -> ToolResult:
        """Write the file (see the module docs), off the event loop, or through the session's
        `FileAccess`."""
        path = self.target(args, execution, args.file_path, "write", "file_path")
        access = self.access(execution)
        if access is not None:
            return await self._write_through(access, args, execution, path)
        return await asyncio.to_thread(self._write, args, execution, path)

    async def _write_through(
        self, access: FileAccess, args: Any, execution: ToolExecution, path: Path
    ) -> ToolResult:
        shown = str(path)
        data = encode_text(self.name, "content", args.content)
        existing = await current_version(self, access, execution, path)
        if existing is not None:
            status, content = existing
            self.settings.observations.require_current(
                execution, shown, status, content, action="overwrite"
            )
        verb = "Replaced" if existing is not None else "Created"
        message = f"{verb} {shown} ({len(data)} bytes)."
        return await store_version(self, access, execution, path, data, message)

    def _write(self, args: Any, execution: ToolExecution, path: Path) -> ToolResult:
        shown = str(path)
        data = encode_text(self.name, "content", args.content)
        existing = current_file(path)
        if existing is not None:
            status, content = existing
            self.settings.observations.require_current(
                execution, shown, status, content, action="overwrite"
            )
        verb = "Replaced" if existing is not None else "Created"
        return store_text(
            self, execution, path, data, existing[0] if existing else None,
            f"{verb} {shown} ({len(data)} bytes).",
        )  # fmt: skip


def store_text(
    tool: FileTool,
    execution: ToolExecution,
    path: Path,
    data: bytes,
    existing: os.stat_result | None,
    message: str,
) -> ToolResult:
    """Write ``data`` to ``path`` atomically, record what this session now knows of the file,
    and answer ``message`` with that version in the result's ``meta``."""
    shown = str(path)
    try:
        written = write_atomic(path, data, existing)
    except FileExistsError:
        raise FileChangedError(
            f"{shown} was created by something else while this call ran; read it first",
            path=shown,
        ) from None
    except OSError as error:
        raise FsToolError(
            f"{shown} cannot be written: {error.strerror or error}", code="FS_IO", path=shown
        ) from None
    observation = Observation.of(shown, written, data)
    tool.settings.observations.record(execution, observation)
    return ToolResult.ok(message, meta={OBSERVED_META_KEY: observation.to_meta()})


async def current_version(
    tool: FileTool, access: FileAccess, execution: ToolExecution, path: Path
) -> tuple[os.stat_result | None, bytes | None] | None:
    """The current version of ``path`` for a session that goes through ``access``: the text it
    holds (status ``None``) once the session has seen the file, else what the disk holds
    (``None``: no file; a file the session never saw is left to ``require_current`` to refuse,
    without asking the access anything)."""
    shown = str(path)
    if tool.settings.observations.get(execution, shown) is not None:
        still_in_place(path, missing_ok=True)
        text = await through_access(
            access, "read", path, access.read_text(path), tool.settings.access_timeout
        )
        still_in_place(path, missing_ok=True)
        return None, accessed_bytes(access, path, text)
    return await asyncio.to_thread(current_file, path)


async def store_version(
    tool: FileTool,
    access: FileAccess,
    execution: ToolExecution,
    path: Path,
    data: bytes,
    message: str,
) -> ToolResult:
    """Write ``data`` through ``access`` (the disk is not touched); record what the session
    now knows and answer ``message``."""
    shown = str(path)
    text = data.decode("utf-8", errors="surrogatepass")
    still_in_place(path, missing_ok=True)
    await through_access(
        access, "written", path, access.write_text(path, text), tool.settings.access_timeout
    )
    still_in_place(path, missing_ok=True)  # a swap during the write refuses the call, told
    observation = Observation.of_content(shown, data)
    tool.settings.observations.record(execution, observation)
    return ToolResult.ok(message, meta={OBSERVED_META_KEY: observation.to_meta()})
