"""Durable file primitives: exclusive publish by ``link``, directory fsync, append with rollback."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

from dsh_persistence_jsonl._safefs import make_dirs_below


def fsync_dir(path: Path) -> None:
    """fsync a directory so a name created in it is durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_dirs_durable(root: Path, target: Path) -> None:
    """Create ``target`` (under ``root``) mode 0700, fsyncing each parent of a new directory;
    an existing directory below the root that is a link (or not a directory) raises
    ``OddFileError`` before anything is created in it."""
    for directory in make_dirs_below(root, target):
        fsync_dir(directory.parent)


def publish_exclusive(final: Path, content: bytes) -> None:
    """Write ``content`` to a temp file, fsync it, ``link`` it to ``final`` and fsync the dir.

    Raises ``FileExistsError`` when ``final`` exists (link never overwrites). The temp file is
    removed in every case.
    """
    tmp = final.with_name(f"{final.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        try:
            write_all(fd, content)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.link(tmp, final)
        fsync_dir(final.parent)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def write_all(fd: int, data: bytes) -> None:
    """``os.write`` until every byte is written."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class AppendRollbackError(OSError):
    """An append failed and truncating the partial bytes away failed too."""


def append_with_rollback(fd: int, size_before: int, data: bytes, *, sync: bool) -> int:
    """Append ``data`` at ``size_before`` (fsync when ``sync``); on failure truncate back.

    Returns the new size. A failure to roll back raises ``AppendRollbackError`` carrying both
    errors (``__cause__`` is the write failure, ``__context__`` the rollback failure).
    """
    try:
        os.lseek(fd, size_before, os.SEEK_SET)
        write_all(fd, data)
        if sync:
            os.fsync(fd)
    except OSError as failure:
        try:
            os.ftruncate(fd, size_before)
            os.fsync(fd)
        except OSError as rollback:
            raise AppendRollbackError(
                failure.errno or 0,
                f"append failed ({failure}) and rolling back to {size_before} bytes failed "
                f"({rollback})",
            ) from failure
        raise
    return size_before + len(data)
