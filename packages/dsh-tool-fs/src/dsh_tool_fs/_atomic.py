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


def write_atomic(path: Path, data: bytes, existing: os.stat_result | None) -> os.stat_result:
    """Make ``path`` hold ``data`` (creating missing parent directories); ``existing`` is the
    file's status when it exists (its mode is kept). Returns the new file's status."""
    path.parent.mkdir(parents=True, exist_ok=True)
    directory = open_verified(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    temporary = f".{path.name}.{secrets.token_hex(6)}.dsh-tmp"
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
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(temporary, path.name, src_dir_fd=directory, dst_dir_fd=directory)
        os.fsync(directory)
        return os.stat(path.name, dir_fd=directory, follow_symlinks=False)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=directory)
        raise
    finally:
        os.close(directory)
