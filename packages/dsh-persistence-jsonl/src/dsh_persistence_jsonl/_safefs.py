"""Below the root, only real directories and regular files.

Every log and lock is opened with ``O_NOFOLLOW`` (a symbolic link is refused, never followed: a
link to a file outside the root is not appended to, a dangling ``session.lock`` link does not get
its target created, a link to ``/dev/zero`` is never read) and ``O_NONBLOCK`` (a FIFO opens at once
instead of waiting for a writer), then ``fstat``-ed: anything but a regular file is refused. The
directories below the root are checked with ``lstat`` before anything is created in them, so a
project or session directory that is a link cannot lead writes outside the root. (The root
itself may be a link: it is the caller's choice.)
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from dsh_persistence_jsonl._scan import LogDamage

_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def kind_of(mode: int) -> str:
    """What a file of ``mode`` is, in words (``"a regular file"``, ``"a FIFO"``, …)."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "an unknown kind of file"


class OddFileError(LogDamage):
    """Something below the root that is not what the layout allows there (a link, a FIFO, a
    device, a directory where a file belongs, a file where a directory belongs); ``path``
    names it. A ``LogDamage``, so every read path reports it as corruption of the session."""

    def __init__(self, path: str | Path, what: str, expected: str = "a regular file") -> None:
        super().__init__(
            None,
            f"{path} is {what}, not {expected}: refused (below a JSONL root only real "
            "directories and regular files are used, never followed or read through)",
        )
        self.path = str(path)


def open_regular(
    path: str | Path, flags: int, *, dir_fd: int | None = None, mode: int = 0o600
) -> tuple[int, os.stat_result]:
    """Open ``path`` (relative to ``dir_fd`` when given) without following a final symbolic
    link and without blocking on a FIFO; return the fd and its ``fstat``. Raises
    ``OddFileError`` unless it is a regular file, and ``OSError`` as ``os.open`` does."""
    try:
        fd = os.open(
            path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode, dir_fd=dir_fd
        )
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise OddFileError(path, "a symbolic link") from None
        if error.errno == errno.EISDIR:
            raise OddFileError(path, "a directory") from None
        if error.errno == errno.ENXIO:  # a FIFO opened for writing with no reader, a socket
            raise OddFileError(path, _lkind(path, dir_fd)) from None
        raise
    try:
        st = os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise OddFileError(path, kind_of(st.st_mode))
    return fd, st


_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def read_small_regular(
    path: str, limit: int, *, dir_fd: int
) -> tuple[bytes, os.stat_result] | None:
    """The whole content and ``fstat`` of a regular file of at most ``limit`` bytes, opened as
    ``open_regular`` opens it (a final link never followed, a FIFO never waited on); ``None``
    for anything else (missing, not a regular file, larger, shorter than its ``fstat``, an
    ``OSError``), which the caller then judges through ``open_regular``. The listing's common
    case in four system calls and no exception."""
    try:
        fd = os.open(path, _READ_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        data = os.pread(fd, st.st_size, 0)
    except OSError:
        return None
    finally:
        os.close(fd)
    return (data, st) if len(data) == st.st_size else None


def _lkind(path: str | Path, dir_fd: int | None) -> str:
    try:
        return kind_of(os.lstat(path, dir_fd=dir_fd).st_mode)
    except OSError:
        return "not openable"


def check_directory(path: str | Path) -> bool:
    """``True`` when ``path`` is a real directory, ``False`` when it does not exist; raises
    ``OddFileError`` when it is anything else (a link to a directory included)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        raise OddFileError(path, kind_of(st.st_mode), "a directory")
    return True


def check_below(root: Path, directory: Path) -> None:
    """Check every existing directory from just below ``root`` down to ``directory``."""
    for part in _below(root, directory):
        if not check_directory(part):
            return


def _below(root: Path, directory: Path) -> list[Path]:
    relative = directory.relative_to(root)
    parts: list[Path] = []
    current = root
    for name in relative.parts:
        current = current / name
        parts.append(current)
    return parts


def make_dirs_below(root: Path, directory: Path) -> list[Path]:
    """Create the missing directories from ``root`` down to ``directory`` (mode 0700), each
    existing one checked to be a real directory below the root; return those created (in
    order, so the caller can fsync their parents)."""
    created: list[Path] = []
    if not root.is_dir():  # the root itself (a link is allowed there)
        missing: list[Path] = []
        probe = root
        while not probe.exists():
            missing.append(probe)
            if probe == probe.parent:
                break
            probe = probe.parent
        for path in reversed(missing):
            try:
                path.mkdir(mode=0o700)
            except FileExistsError:
                continue
            created.append(path)
    for part in _below(root, directory):
        try:
            part.mkdir(mode=0o700)
        except FileExistsError:
            check_directory(part)
            continue
        created.append(part)
    return created
