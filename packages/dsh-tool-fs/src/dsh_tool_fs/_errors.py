"""The file tools' errors: each a `dsh_tools.ToolError` with a stable code, naming the path."""

from __future__ import annotations

import stat

from dsh_tools import ToolError

__all__ = [
    "FileChangedError",
    "FileNotReadError",
    "FsToolError",
    "NotTextError",
    "SandboxDeniedError",
    "SearchError",
]


class FsToolError(ToolError):
    """Base of the file tools' errors; ``path`` is the file or directory concerned (as the
    model named it, resolved), or ``None``."""

    default_code = "FS_ERROR"

    def __init__(self, message: str, *, code: str | None = None, path: str | None = None) -> None:
        super().__init__(message, code=code)
        self.path = path


class SandboxDeniedError(FsToolError):
    """The sandbox policy of the session refuses this access (``FS_SANDBOX_DENIED``)."""

    default_code = "FS_SANDBOX_DENIED"


class FileNotReadError(FsToolError):
    """``write`` over an existing file, or ``edit``, before this session read it
    (``FS_NOT_READ``)."""

    default_code = "FS_NOT_READ"


class FileChangedError(FsToolError):
    """The file changed on disk since this session read it (``FS_CHANGED``)."""

    default_code = "FS_CHANGED"


class NotTextError(FsToolError):
    """A binary or non-UTF-8 file where text is needed (``FS_NOT_TEXT``)."""

    default_code = "FS_NOT_TEXT"


class SearchError(FsToolError):
    """``glob`` or ``grep`` failed (``SEARCH_INVALID_PATTERN``, ``SEARCH_FAILED``, ...)."""

    default_code = "SEARCH_FAILED"


def require_regular_file(mode: int, shown: str) -> None:
    """Refuse (``FS_NOT_A_FILE``, naming ``shown``) a file whose ``st_mode`` is a directory
    (use glob to list it) or anything else that is not a regular file (a FIFO, a device)."""
    if stat.S_ISDIR(mode):
        raise FsToolError(
            f"{shown} is a directory; use glob to list it", code="FS_NOT_A_FILE", path=shown
        )
    if not stat.S_ISREG(mode):
        raise FsToolError(f"{shown} is not a regular file", code="FS_NOT_A_FILE", path=shown)
