"""``edit``: an exact string replaced in a UTF-8 text file the session has read."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from dsh_tool_fs._base import FileTool
from dsh_tool_fs._confinement import EscalationArgs
from dsh_tool_fs._errors import FsToolError, NotTextError
from dsh_tool_fs._read import WHOLE_FILE_BYTES
from dsh_tool_fs._schema import args_config
from dsh_tool_fs._write import (
    current_file,
    current_version,
    encode_text,
    store_text,
    store_version,
)
from dsh_tools import InvalidToolArgumentsError, ToolExecution, ToolResult

__all__ = ["EditArgs", "EditTool"]


class EditArgs(BaseModel):
    """The ``edit`` tool's parameters."""

    model_config = args_config("edit")

    file_path: str = Field(description="Absolute, or relative to the workspace.")
    old_string: str = Field(description="Exact text to replace, whitespace included.")
    new_string: str = Field(description="The replacement.")
    replace_all: bool = Field(
        default=False,
        description="Replace every occurrence.",
    )


class EditSandboxArgs(EscalationArgs, EditArgs):
    """The ``edit`` tool's parameters under a sandbox."""

    model_config = args_config("edit")


class EditTool(FileTool):
    """``edit``: see the module docs."""

    name = "edit"
    description = (
        "Replace old_string with new_string in a file you have read. old_string must match "
        "exactly and be unique unless replace_all."
    )
    plain_args = EditArgs
    sandbox_args = EditSandboxArgs

    async def execute(self, args: Any, execution: ToolExecution) -> ToolResult:
        """Edit the file (see the module docs), on the disk off the event loop, or through the
        session's `FileAccess`."""
        if args.old_string == "":
            raise InvalidToolArgumentsError(
                self.name, ["old_string: must not be empty (use write to create a file)"]
            )
        if args.old_string == args.new_string:
            raise InvalidToolArgumentsError(
                self.name, ["new_string: is the same as old_string; nothing would change"]
            )
        path = self.target(args, execution, args.file_path, "write", "file_path")
        access = self.access(execution)
        if access is not None:
            existing = await current_version(self, access, execution, path)
            edited = await asyncio.to_thread(self._edited, args, execution, path, existing)
            return await store_version(self, access, execution, path, *edited)
        return await asyncio.to_thread(self._edit, args, execution, path)

    def _edit(self, args: Any, execution: ToolExecution, path: Path) -> ToolResult:
        existing = current_file(path)
        data, message = self._edited(args, execution, path, existing)
        status = existing[0] if existing is not None else None
        return store_text(self, execution, path, data, status, message)

    def _edited(
        self,
        args: Any,
        execution: ToolExecution,
        path: Path,
        existing: tuple[os.stat_result | None, bytes | None] | None,
    ) -> tuple[bytes, str]:
        """The new content of ``path`` (whose current version is ``existing``) and the
        answer, once the session is known to have seen that version."""
        shown = str(path)
        if existing is None:
            raise FsToolError(
                f"{shown} does not exist; use write to create it", code="FS_NOT_FOUND", path=shown
            )
        status, content = existing
        if content is None:  # a file on disk over WHOLE_FILE_BYTES (an access's is refused)
            size = f"{status.st_size} bytes" if status is not None else "too large"
            raise FsToolError(
                f"{shown} is {size}, over the {WHOLE_FILE_BYTES} bytes edit changes",
                code="FS_TOO_LARGE",
                path=shown,
            )
        self.settings.observations.require_current(execution, shown, status, content, action="edit")
        if b"\0" in content:
            raise NotTextError(
                f"{shown} is a binary file; edit changes UTF-8 text only", path=shown
            )
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError as error:
            raise NotTextError(
                f"{shown} is not valid UTF-8 (byte {error.start}); edit changes UTF-8 text only",
                path=shown,
            ) from None
        found = text.count(args.old_string)
        if found == 0:
            raise FsToolError(
                f"old_string was not found in {shown}; read the file and copy the text exactly",
                code="FS_NO_MATCH",
                path=shown,
            )
        if found > 1 and not args.replace_all:
            raise FsToolError(
                f"old_string occurs {found} times in {shown}; give more surrounding text to make "
                "it unique, or set replace_all to replace all of them",
                code="FS_MULTIPLE_MATCHES",
                path=shown,
            )
        updated = text.replace(args.old_string, args.new_string)
        data = encode_text(self.name, "new_string", updated)
        count = found if args.replace_all else 1
        noun = "occurrence" if count == 1 else "occurrences"
        return data, f"Edited {shown}: replaced {count} {noun}."
