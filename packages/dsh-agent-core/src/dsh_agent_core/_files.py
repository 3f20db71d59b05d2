"""Reading a file the configuration makes dsh read: regular files only, bounded, never blocking.

The config file, project instructions and skills are opened with ``O_NONBLOCK`` (a FIFO opens
at once instead of waiting for a writer, and is then refused: nothing is ever read from it) and
``fstat``-ed on the open descriptor: only a regular file is read (a symbolic link to one is
followed, as links in a dotfiles setup are normal; a link to ``/dev/zero`` is refused as the
device it is), and never more than the caller's bound. Every refusal is an
`UnreadableFileError` naming the path and what is wrong with it.
"""

from __future__ import annotations

import os
import stat

from dsh_agent_core._errors import ConfigError

__all__ = ["MAX_CONFIG_BYTES", "UnreadableFileError", "read_regular_file", "read_regular_head"]

MAX_CONFIG_BYTES = 1024 * 1024
"""The largest config file read (1 MiB)."""

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class UnreadableFileError(ConfigError):
    """A file dsh was configured to read that it will not read: ``path`` names it, ``problem``
    says why (not a regular file, over the bound, or an ``OSError``)."""

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        super().__init__(str(path), problem)
        self.path = str(path)
        self.problem = problem


def _kind_of(mode: int) -> str:
    """What a file of ``mode`` is, in words (``"a FIFO"``, ``"a character device"``, …)."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "an unknown kind of file"


def _open_regular(path: str | os.PathLike[str]) -> tuple[int, os.stat_result]:
    """The descriptor and ``fstat`` of ``path`` when it is a regular file (links followed);
    ``FileNotFoundError`` passes through, anything else is an `UnreadableFileError`."""
    try:
        fd = os.open(path, _FLAGS)
    except FileNotFoundError:
        raise
    except OSError as error:
        raise UnreadableFileError(path, f"cannot be read ({error.strerror})") from None
    try:
        status = os.fstat(fd)
    except OSError as error:
        os.close(fd)
        raise UnreadableFileError(path, f"cannot be read ({error.strerror})") from None
    if not stat.S_ISREG(status.st_mode):
        os.close(fd)
        raise UnreadableFileError(
            path, f"is {_kind_of(status.st_mode)}, not a regular file: it is not read"
        )
    return fd, status


def _read_at_most(fd: int, count: int) -> bytes:
    chunks: list[bytes] = []
    left = count
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 16))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_regular_file(path: str | os.PathLike[str], limit: int) -> bytes:
    """The whole content of the regular file ``path`` (a link to one is followed), at most
    ``limit`` bytes. Raises `UnreadableFileError` naming it when it is anything else (a FIFO,
    a device, a directory — never waited on, never read), is over ``limit`` bytes, or cannot
    be read; ``FileNotFoundError`` when it does not exist."""
    fd, status = _open_regular(path)
    try:
        if status.st_size > limit:
            raise UnreadableFileError(path, f"is {status.st_size} bytes; at most {limit} are read")
        try:
            data = _read_at_most(fd, limit + 1)
        except OSError as error:
            raise UnreadableFileError(path, f"cannot be read ({error.strerror})") from None
        if len(data) > limit:  # it grew while it was read
            raise UnreadableFileError(path, f"is over {limit} bytes; at most {limit} are read")
        return data
    finally:
        os.close(fd)


def read_regular_head(path: str | os.PathLike[str], limit: int) -> tuple[bytes, bool]:
    """At most the first ``limit`` bytes of the regular file ``path`` and whether it holds
    more; refuses what `read_regular_file` refuses, except a larger file (it is cut)."""
    fd, status = _open_regular(path)
    try:
        try:
            data = _read_at_most(fd, limit)
            more = len(data) == limit and (status.st_size > limit or bool(os.read(fd, 1)))
        except OSError as error:
            raise UnreadableFileError(path, f"cannot be read ({error.strerror})") from None
        return data, more
    finally:
        os.close(fd)
