"""Files read and written for one session somewhere other than the local disk.

An editor that runs dsh through the Agent Client Protocol holds the files the user has open,
unsaved changes included: a session it drives reads and writes them through the editor
(``fs/read_text_file``, ``fs/write_text_file``), so the model reads what the user sees and its
edits land in the editor's buffers. `FileAccess` is that other place, as the file tools see it;
`FileAccessRoutes` says which session goes through which one (`FileTools.route_access`).

The tools keep every rule of the disk path: the path is resolved and checked by the session's
confinement before the access is asked anything, so a refused call sends no request. What an
access answers is untrusted: a text over `WHOLE_FILE_BYTES` (the largest file the tools read
whole) is refused, every request is bounded in time (``access_timeout``), cancelling the call
cancels the request, and a failure of any kind fails that call with `FileAccessError` naming
the path (the turn goes on).

An access opens files by name and follows links, which the disk path never does (it opens with
``O_NOFOLLOW`` and checks the descriptor). So right before and right after each request the
path is resolved again (`still_in_place`): a component swapped for a link since the check (a
model's background command can make links inside its workspace) refuses the call, and an
existing path that is not a regular file (a FIFO, a device, a directory) is never sent. What
stays open: a swap made and undone between those two checks, around the access's own open (a
folder renamed away, a link put in its place, then the folder put back), leaves the path
resolving to itself both times, so a write redirected that way is not seen from here. Only the
access itself could close that (opening without following links); the editors guide says so.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable
from pathlib import Path
from typing import Protocol, TypeVar

from dsh_tool_fs._errors import FsToolError, SandboxDeniedError, require_regular_file
from dsh_tools import Disposer, ToolExecution

__all__ = [
    "ACCESS_TIMEOUT",
    "FileAccess",
    "FileAccessError",
    "FileAccessRoutes",
    "still_in_place",
    "through_access",
]

T = TypeVar("T")

ACCESS_TIMEOUT = 30.0
"""Seconds one request to a `FileAccess` may take by default before its call fails."""

_DETAIL_CHARS = 300
"""The most characters of an access's own error message quoted in a tool error."""


class FileAccess(Protocol):
    """Where one session's text files are read and written instead of the local disk (an
    editor's buffers). ``reads`` / ``writes`` say which halves it offers: the tools use it only
    when it offers both (a version must be read where it is written, or one edit would be made
    on a copy the next one never sees), else the session stays on the disk. ``name`` says who
    answers, in error messages (``"the editor"``).

    ``path`` is always absolute and already checked by the session's sandbox. ``read_text``
    returns the file's whole current text; ``write_text`` replaces it whole. Either raises
    whatever it likes on failure: the tools turn it into `FileAccessError`."""

    @property
    def name(self) -> str:
        """Who answers, as an error message names it."""
        ...

    @property
    def reads(self) -> bool:
        """Whether ``read_text`` is offered."""
        ...

    @property
    def writes(self) -> bool:
        """Whether ``write_text`` is offered."""
        ...

    async def read_text(self, path: Path) -> str:
        """The whole current text of ``path``."""
        ...

    async def write_text(self, path: Path, content: str) -> None:
        """Make ``path`` hold ``content``."""
        ...


class FileAccessError(FsToolError):
    """A `FileAccess` failed, did not answer in time, or answered what cannot be used
    (``FS_ACCESS_FAILED``); ``path`` names the file."""

    default_code = "FS_ACCESS_FAILED"


class FileAccessRoutes:
    """Per session id, the `FileAccess` its file tools go through (none: the local disk)."""

    def __init__(self) -> None:
        self._routes: dict[str, FileAccess] = {}

    def route(self, session_id: str, access: FileAccess) -> Disposer:
        """Send ``session_id``'s file tools through ``access`` until the disposer is called.
        A session has one route at a time: a second one is a `ValueError` naming the session."""
        if session_id in self._routes:
            raise ValueError(f"session {session_id!r} already has a file access")
        self._routes[session_id] = access

        def withdraw() -> None:
            if self._routes.get(session_id) is access:
                del self._routes[session_id]

        return Disposer(withdraw)

    def get(self, execution: ToolExecution) -> FileAccess | None:
        """The access of ``execution``'s session (``None``: the local disk)."""
        session_id = execution.session_id
        return self._routes.get(session_id) if session_id is not None else None


def still_in_place(path: Path, *, missing_ok: bool) -> None:
    """Refuse ``path`` (resolved and checked when the call began) unless it still resolves to
    itself (`SandboxDeniedError`: a link was swapped in) and, when it exists, is a regular file
    (``FS_NOT_A_FILE``); a missing one is ``FS_NOT_FOUND`` unless ``missing_ok``."""
    shown = str(path)
    actual = os.path.realpath(path)
    if actual != shown:
        raise SandboxDeniedError(
            f"{shown} changed while this call used it (it now leads to {actual}); refused",
            path=shown,
        )
    try:
        status = os.stat(path)
    except FileNotFoundError:
        if missing_ok:
            return
        raise FsToolError(f"{shown} does not exist", code="FS_NOT_FOUND", path=shown) from None
    except OSError as error:
        raise FsToolError(
            f"{shown} cannot be read: {error.strerror or error}", code="FS_IO", path=shown
        ) from None
    require_regular_file(status.st_mode, shown)


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= _DETAIL_CHARS else text[: _DETAIL_CHARS - 1] + "…"


async def through_access(
    access: FileAccess, verb: str, path: Path, request: Awaitable[T], within: float
) -> T:
    """``request`` (a call of ``access`` for ``path``) awaited at most ``within`` seconds; a
    failure of any kind is a `FileAccessError` naming ``path`` and saying it could not be
    ``verb`` (``"read"``, ``"written"``). Cancelling the caller cancels the request."""
    shown = str(path)
    try:
        async with asyncio.timeout(within):
            return await request
    except TimeoutError:
        raise FileAccessError(
            f"{shown} could not be {verb} through {access.name}: no answer within {within:g} s",
            path=shown,
        ) from None
    except FsToolError:
        raise
    except Exception as error:
        raise FileAccessError(
            f"{shown} could not be {verb} through {access.name}: {_one_line(error)}", path=shown
        ) from None
