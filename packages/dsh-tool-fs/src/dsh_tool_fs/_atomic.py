"""Replacing a file whole and safely: a temporary file beside it, fsync, rename, fsync the
directory. The file keeps its permission bits; a crash leaves the old or the new content."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

from dsh_tool_fs._confinement import open_verified

__all__ = ["write_atomic"]


def _open_parent(path: Path) -> int:
    """A descriptor of ``path``'s parent directory, creating missing folders one level at a
    time below the nearest existing (verified) ancestor, never through a symlink."""
    missing: list[str] = []
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        missing.append(folder.name)
        folder = folder.parent
    fd = open_verified(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in reversed(missing):
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o777, dir_fd=fd)
            child = os.open(
                name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd
            )
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_atomic(path: Path, data: bytes, existing: os.stat_result | None) -> os.stat_result:
    """Make ``path`` hold ``data`` (creating missing parent folders); ``existing`` is the file's
    status when it exists (its mode, and its owner where this process may set it, are kept).
    A file that appeared after ``existing`` was taken as "none" is not replaced
    (`FileExistsError`). Returns the new file's status."""
    directory = _open_parent(path)
    temporary = f".dsh-{secrets.token_hex(8)}.tmp"  # short: any valid name gets a temp beside it
    try:
        fd = os.open(
            temporary,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o666,
            dir_fd=directory,
        )
        try:
            if existing is not None:
                os.fchmod(fd, stat.S_IMODE(existing.st_mode))
                with contextlib.suppress(PermissionError):
                    os.fchown(fd, existing.st_uid, existing.st_gid)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        if existing is None:  # create only: never replace what appeared since the check
            os.link(temporary, path.name, src_dir_fd=directory, dst_dir_fd=directory)
            os.unlink(temporary, dir_fd=directory)
        else:
            os.rename(temporary, path.name, src_dir_fd=directory, dst_dir_fd=directory)
        os.fsync(directory)
        return os.stat(path.name, dir_fd=directory, follow_symlinks=False)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=directory)
        raise
    finally:
        os.close(directory)
