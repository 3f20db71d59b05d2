"""`WorkspacePin`: a session's workspace, pinned by real path and device/inode.

A session's workspace is pinned when the session starts or resumes. Before every confined run
(a sandboxed command, a file tool call) the pin is verified: the pinned path must still
resolve to itself (no component became a symlink, nothing moved) and still be the same
directory (``st_dev``/``st_ino`` of ``lstat``). Once it resolves elsewhere the run is refused,
closed, with `WorkspaceChangedError`: a sibling that swaps the folder for a symlink cannot
re-point where the session writes.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

from dsh_shell._errors import ShellError, ShellValueError

__all__ = ["WorkspaceChangedError", "WorkspacePin", "WorkspacePinLookup"]


class WorkspaceChangedError(ShellError):
    """A session's pinned workspace no longer is what was pinned; nothing was run.

    ``path`` is the pinned real path, ``now`` what it resolves to now (or why it cannot be
    resolved), ``session_id`` the session whose workspace it is (``None`` when not known).
    """

    def __init__(self, path: str, now: str, session_id: str | None = None) -> None:
        self.path = path
        self.now = now
        self.session_id = session_id
        owner = f"session {session_id!r}" if session_id is not None else "the session"
        super().__init__(
            f"the workspace of {owner} was pinned at {path!r} and now {now}; refused (a "
            "confined run never follows a workspace that moved). Restore the folder, or start "
            "a new session in the folder you mean"
        )


@dataclass(frozen=True, slots=True)
class WorkspacePin:
    """A workspace pinned by its real ``path`` and the ``device``/``inode`` it had then."""

    path: Path
    device: int
    inode: int

    @classmethod
    def of(cls, path: str | os.PathLike[str], *, session_id: str | None = None) -> WorkspacePin:
        """Pin ``path`` as it is now. It must be absolute, already be its own real path (no
        symlink, no ``..``: pinning never silently follows a link) and be a directory;
        otherwise `WorkspaceChangedError` names what it resolves to."""
        raw = os.fspath(path)
        if not isinstance(raw, str) or "\0" in raw or not os.path.isabs(raw):
            raise ShellValueError("workspace", path, "an absolute path")
        lexical = os.path.normpath(raw)
        info = _identity(lexical, session_id, pinned=raw)
        return cls(Path(lexical), info.st_dev, info.st_ino)

    def verify(self, *, session_id: str | None = None) -> None:
        """Raise `WorkspaceChangedError` unless the pinned path still resolves to itself and
        is still the same directory (same ``st_dev`` and ``st_ino``)."""
        info = _identity(str(self.path), session_id, pinned=str(self.path))
        if (info.st_dev, info.st_ino) != (self.device, self.inode):
            raise WorkspaceChangedError(
                str(self.path),
                f"is another directory (device/inode {info.st_dev}/{info.st_ino}, pinned "
                f"{self.device}/{self.inode})",
                session_id,
            )

    def open(self, *, session_id: str | None = None) -> int:
        """A read-only directory descriptor of the pinned directory (close-on-exec), opened
        without following a final symlink and checked to be the pinned device/inode; a
        confining executor binds the directory through it, so a rename after the check
        cannot change what is bound."""
        self.verify(session_id=session_id)
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(self.path, flags)
        except OSError as error:
            raise WorkspaceChangedError(
                str(self.path), f"cannot be opened ({error.strerror})", session_id
            ) from None
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) != (self.device, self.inode):
            os.close(fd)
            raise WorkspaceChangedError(
                str(self.path), "was replaced while it was opened", session_id
            )
        return fd


WorkspacePinLookup: TypeAlias = Callable[[str], WorkspacePin | None]
"""The pinned workspace of a session id (``None``: the session has none; the caller then
resolves the workspace itself). It may raise `WorkspaceChangedError` for a session whose
workspace could not be pinned."""


def _identity(path: str, session_id: str | None, *, pinned: str) -> os.stat_result:
    """``lstat`` of ``path`` once it is known to resolve to itself and be a directory."""
    real = os.path.realpath(path)
    if real != path:
        raise WorkspaceChangedError(pinned, f"resolves to {real!r}", session_id)
    try:
        info = os.lstat(path)
    except OSError as error:
        raise WorkspaceChangedError(
            pinned, f"cannot be read ({error.strerror})", session_id
        ) from None
    if not stat.S_ISDIR(info.st_mode):
        raise WorkspaceChangedError(pinned, "is not a directory", session_id)
    return info
