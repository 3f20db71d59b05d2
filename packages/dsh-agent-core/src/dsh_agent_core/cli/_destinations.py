"""Where an export may be written: never into the session store, always whole or not at all.

``dsh sessions export ID -o FILE`` once opened ``FILE`` for writing before reading the log, so
naming the session's own log emptied it, and naming the SQLite database wiped every session.
:func:`store_parts` lists what the store is made of (the JSONL roots, plain and zstd, with their
session folders and lock files; the SQLite database with its ``-wal``, ``-shm`` and
``-journal`` files and its lock folder), :func:`check_destination` refuses a destination that is
one of them (compared resolved, through symbolic links, and by device and inode, through hard
links), and :func:`write_atomically` writes through a temporary file in the destination's folder
renamed over it only once the export is complete, so a failed export leaves an existing file as
it was.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TypeVar

from dsh_agent_core._config import Config
from dsh_agent_core._errors import DshError
from dsh_agent_core._persistence_config import default_jsonl_root, default_sqlite_path

__all__ = [
    "DestinationError",
    "StoreDestinationError",
    "StorePart",
    "check_destination",
    "check_stream",
    "store_parts",
    "write_atomically",
]

T = TypeVar("T")

_SQLITE_FILES = (
    ("", "the SQLite database"),
    ("-wal", "the SQLite database's write-ahead log"),
    ("-shm", "the SQLite database's shared-memory file"),
    ("-journal", "the SQLite database's journal"),
)


class StoreDestinationError(DshError):
    """An export's destination is part of the session store: writing it would destroy the
    logs being exported. ``destination`` is the path as given, ``store`` the store part it
    belongs to (a root folder or a database file), ``how`` in what way."""

    def __init__(self, destination: str, store: str, how: str) -> None:
        super().__init__(
            f"refusing to write {destination}: it is {how + ' ' if how else ''}{store}, part "
            "of the session store (writing it would destroy the logs); choose a file outside it"
        )
        self.destination = destination
        self.store = store
        self.how = how


class DestinationError(DshError):
    """An export's destination cannot be written (its folder is missing, not writable…)."""

    def __init__(self, destination: str, reason: str) -> None:
        super().__init__(f"cannot write {destination}: {reason}")
        self.destination = destination
        self.reason = reason


@dataclass(frozen=True)
class StorePart:
    """One piece of the session store: ``path`` (absolute, as configured), what it is
    (``name``), and whether it is a folder whose whole content is the store's."""

    path: Path
    name: str
    folder: bool

    def describe(self) -> str:
        """``the plain JSONL root /home/u/.dsh/sessions-plain``."""
        return f"{self.name} {self.path}"


def store_parts(config: Config) -> list[StorePart]:
    """Every file and folder of the session store ``config`` names, and the default ones of its
    DSH home (another profile, or ``dsh sessions migrate``, uses those)."""
    home = config.home()
    location = config.persistence_location()
    parts: list[StorePart] = []
    if location.backend == "jsonl":
        kind = "plain" if location.compression == "none" else "zstd"
        parts.append(StorePart(location.root, f"the {kind} JSONL root", True))
    parts.append(StorePart(default_jsonl_root(home, "none"), "the plain JSONL root", True))
    parts.append(StorePart(default_jsonl_root(home, "zstd"), "the zstd JSONL root", True))
    databases = [default_sqlite_path(home)]
    if location.backend == "sqlite":
        databases.insert(0, location.path)
    for database in databases:
        for suffix, name in _SQLITE_FILES:
            parts.append(StorePart(database.with_name(database.name + suffix), name, False))
        locks = database.with_name(database.name + "-locks")
        parts.append(StorePart(locks, "the SQLite database's lock folder", True))
    unique: dict[Path, StorePart] = {}
    for part in parts:
        unique.setdefault(part.path, part)
    return list(unique.values())


def _identity(path: Path | str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def check_destination(destination: Path, parts: list[StorePart]) -> Path:
    """The resolved path to write ``destination`` to; raises :class:`StoreDestinationError`
    when it is part of the store: a store file, anything inside a store folder (whether it
    exists or not), reached through symbolic links or not, or a hard link to a store file."""
    given = str(destination)
    target = Path(os.path.realpath(os.path.expanduser(destination)))
    for part in parts:
        real = Path(os.path.realpath(part.path))
        if part.folder and (target == real or target.is_relative_to(real)):
            raise StoreDestinationError(given, part.describe(), "inside")
        if not part.folder and target == real:
            raise StoreDestinationError(given, part.describe(), "")
    # the same folders or files reached another way (a bind mount, a case-folding file system)
    folders = {_identity(p.path): p for p in parts if p.folder}
    folders.pop(None, None)
    for ancestor in [target, *target.parents]:
        found = folders.get(_identity(ancestor))
        if found is not None:
            raise StoreDestinationError(given, found.describe(), "inside")
    try:
        st = os.stat(target)
    except OSError:
        return target
    _check_identity(given, st, parts, stream=False)
    return target


def check_stream(fd: int, name: str, parts: list[StorePart]) -> None:
    """Refuse to write the open file ``fd`` (standard output redirected into the store:
    ``>> session.jsonl`` would append the log to itself) when it is a file of the store."""
    try:
        st = os.fstat(fd)
    except OSError:
        return
    if stat.S_ISREG(st.st_mode):
        _check_identity(name, st, parts, stream=True)


def _check_identity(
    given: str, st: os.stat_result, parts: list[StorePart], *, stream: bool
) -> None:
    identity = (st.st_dev, st.st_ino)
    for part in parts:
        if not part.folder and _identity(part.path) == identity:
            raise StoreDestinationError(given, part.describe(), "")
    if not stat.S_ISREG(st.st_mode) or (not stream and st.st_nlink < 2):
        return  # a path outside every store folder with one link is not the store's file
    how = "the file {} in" if stream else "a hard link to {} in"
    for part in parts:
        if not part.folder:
            continue
        for path in _files_on(part.path, st.st_dev):
            if _identity(path) == identity:
                raise StoreDestinationError(given, part.describe(), how.format(path))


def _files_on(folder: Path, device: int) -> Iterator[str]:
    """Every file under ``folder`` when it is on ``device`` (symbolic links not followed)."""
    if (_identity(folder) or (None, None))[0] != device:
        return
    for parent, _dirs, files in os.walk(folder):
        for file in files:
            yield os.path.join(parent, file)


async def write_atomically(
    target: Path, write: Callable[[BinaryIO], Awaitable[T]], *, name: str | None = None
) -> T:
    """Run ``write`` on a temporary file beside ``target``, then rename it over ``target``
    (flushed to disk first; an existing file keeps its permissions). When ``write`` fails the
    temporary file is removed and ``target`` is left as it was. A ``target`` that exists and is
    no regular file (``/dev/null``, a named pipe) is written directly. ``name``: the
    destination as the user gave it, for :class:`DestinationError`."""
    try:
        st: os.stat_result | None = os.stat(target)
    except OSError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        with open(target, "wb") as stream:  # noqa: ASYNC230  # a bulk job, like the export
            return await write(stream)
    partial = target.with_name(f".{target.name}.{secrets.token_hex(4)}.partial")
    try:
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    except OSError as error:
        reason = error.strerror or str(error)
        raise DestinationError(name or str(target), reason) from None
    try:
        with os.fdopen(fd, "wb") as stream:
            result = await write(stream)
            stream.flush()
            os.fsync(stream.fileno())
        if st is not None:
            os.chmod(partial, stat.S_IMODE(st.st_mode))
        os.replace(partial, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise
    with contextlib.suppress(OSError):  # the rename itself made durable
        folder = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
    return result
