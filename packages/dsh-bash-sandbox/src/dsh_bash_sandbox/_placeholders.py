"""Placeholders: a protected path that does not exist yet is held by an empty read-only folder.

A read-only mount needs something to mount on. For a protected name that is missing from a
writable root (no ``.claude`` yet), the executor creates a placeholder there — an empty
directory with mode `PLACEHOLDER_MODE` (sticky, read and search only), which no user makes —
and mounts it read-only, so ``mkdir .claude`` fails inside the sandbox. A confined command
cannot remove it (inside, it is a mount point); the executor removes it once no confined
command of any process uses it. Every user holds a shared ``flock`` on the directory for as
long as its command runs; the last one takes it exclusively and removes it (only if it is
still an empty placeholder, so nothing is ever lost). A user that finds the placeholder
removed while it waited makes a new one.

A placeholder whose every holder was killed (``kill -9`` of the harness) would stay in the
user's project, an empty read-only ``.git`` in the way of ``git init``. So each one made is
recorded in a `PlaceholderRegistry` (a small folder of records: path, device, inode) until it
is removed, and each executor sweeps the registry when it starts: a recorded placeholder that
is still the very directory made, still an empty placeholder, and that no process holds (its
``flock`` is free: a holder's lock ends with its process) is removed.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Final

PLACEHOLDER_MODE: Final = 0o1555
"""The mode of a placeholder directory: sticky, readable and searchable, never writable."""

_ATTEMPTS = 16


def is_placeholder(facts: os.stat_result) -> bool:
    """Whether ``facts`` (of ``lstat`` or ``fstat``) describe a placeholder directory: sticky
    and without any write bit (what ``mkdir`` with `PLACEHOLDER_MODE` makes under any umask)."""
    mode = stat.S_IMODE(facts.st_mode)
    return stat.S_ISDIR(facts.st_mode) and bool(mode & stat.S_ISVTX) and not mode & 0o222


def default_registry_dir() -> Path:
    """Where placeholders are recorded by default: ``$XDG_STATE_HOME/dsh/sandbox-placeholders``
    (``~/.local/state`` when unset); one folder per user, shared by every executor."""
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(state) / "dsh" / "sandbox-placeholders"


class PlaceholderRegistry:
    """The placeholders made and not yet removed, one small record file each in ``directory``
    (created 0700 on first use). Bookkeeping only: a record that cannot be written or read is
    skipped, never in the way of a command."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def record(self, path: Path, facts: os.stat_result) -> None:
        """Record the placeholder made at ``path`` (``facts``: its ``lstat``)."""
        entry = {"path": str(path), "device": facts.st_dev, "inode": facts.st_ino}
        with contextlib.suppress(OSError):
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=self.directory, prefix=".record-")
            with os.fdopen(fd, "w") as out:
                json.dump(entry, out)
            os.replace(temp, self._file(path, facts.st_dev, facts.st_ino))

    def forget(self, path: Path, facts: os.stat_result) -> None:
        """Drop the record of the placeholder ``facts`` describe (it was removed)."""
        with contextlib.suppress(OSError):
            os.unlink(self._file(path, facts.st_dev, facts.st_ino))

    def sweep(self) -> list[Path]:
        """Remove every recorded placeholder no process holds any more (its holders were
        killed); return their paths. One that is no longer the directory made, no longer an
        empty placeholder, or that a live command holds, is never touched."""
        removed: list[Path] = []
        try:
            names = [n for n in os.listdir(self.directory) if n.endswith(".json")]
        except OSError:
            return removed
        for name in names:
            record = self.directory / name
            try:
                entry = json.loads(record.read_text())
                path, device, inode = Path(entry["path"]), int(entry["device"]), int(entry["inode"])
            except (OSError, ValueError, KeyError, TypeError):
                with contextlib.suppress(OSError):
                    os.unlink(record)
                continue
            state = _remove_if_stale(path, device, inode)
            if state == "removed":
                removed.append(path)
            if state != "held":
                with contextlib.suppress(OSError):
                    os.unlink(record)
        return removed

    def _file(self, path: Path, device: int, inode: int) -> Path:
        key = hashlib.sha256(f"{path}\0{device}\0{inode}".encode()).hexdigest()[:32]
        return self.directory / f"{key}.json"


def _remove_if_stale(path: Path, device: int, inode: int) -> str:
    """``removed``, ``held`` (a live command holds it), or ``gone`` (not ours any more)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return "gone"
    try:
        facts = os.fstat(fd)
        if (facts.st_dev, facts.st_ino) != (device, inode) or not is_placeholder(facts):
            return "gone"
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return "held"
        now = os.lstat(path)
        if (now.st_dev, now.st_ino) != (device, inode):
            return "gone"
        os.rmdir(path)  # not empty: OSError, left as it is
        return "removed"
    except OSError:
        return "gone"
    finally:
        os.close(fd)


class PlaceholderHold:
    """Placeholders one confined command uses; `release` once the command has ended. With a
    ``registry``, each placeholder it makes is recorded there until it is removed."""

    def __init__(self, registry: PlaceholderRegistry | None = None) -> None:
        self._registry = registry
        self._held: list[tuple[Path, int]] = []
        self._names: dict[Path, Path] = {}
        self._then: list[Callable[[], None]] = []

    def on_release(self, action: Callable[[], None]) -> None:
        """Call ``action`` once, at the next `release` (after the placeholders are dropped)."""
        self._then.append(action)

    @property
    def paths(self) -> list[Path]:
        """The placeholders held (each an empty read-only directory while held)."""
        return [self._names.get(path, path) for path, _ in self._held]

    def hold(self, path: Path, *, name: Path | None = None) -> None:
        """Create (or join) the placeholder at ``path`` when nothing else is there (``name``:
        the path it is recorded by, when ``path`` reaches it another way, through a
        descriptor's ``/proc/self/fd/<n>``).

        Nothing happens when ``path`` exists as anything but a placeholder (it is then guarded
        as it is) or when its parent is not a directory; an `OSError` creating it propagates.
        """
        for _ in range(_ATTEMPTS):
            try:
                os.mkdir(path, PLACEHOLDER_MODE)  # recognizable from its first instant
            except FileExistsError:
                pass
            except (FileNotFoundError, NotADirectoryError):
                return
            else:
                if self._registry is not None:
                    with contextlib.suppress(OSError):
                        self._registry.record(name or path, os.lstat(path))
            try:
                fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except FileNotFoundError:
                continue  # removed meanwhile: make it again
            except OSError as error:
                if error.errno in (errno.ENOTDIR, errno.ELOOP):
                    return  # a file or a symlink: not a placeholder, guarded as it is
                raise
            facts = os.fstat(fd)
            if not is_placeholder(facts):
                os.close(fd)
                return
            fcntl.flock(fd, fcntl.LOCK_SH)  # waits while the last user removes it
            try:
                now = os.lstat(path)
            except OSError:
                now = None
            if now is not None and (now.st_dev, now.st_ino) == (facts.st_dev, facts.st_ino):
                self._held.append((path, fd))
                if name is not None:
                    self._names[path] = name
                return
            os.close(fd)  # it was removed (and maybe made again) while this one waited
        raise OSError(errno.EAGAIN, "the placeholder kept changing", str(path))

    def release(self) -> None:
        """Drop every hold; remove each placeholder no other command holds (idempotent)."""
        held, self._held = self._held, []
        then, self._then = self._then, []
        try:
            self._drop(held)
        finally:
            for action in then:
                action()

    def _drop(self, held: list[tuple[Path, int]]) -> None:
        for path, fd in held:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)  # another command still uses it: the last one removes it
                continue
            try:
                facts = os.fstat(fd)
                now = os.lstat(path)
                same = (now.st_dev, now.st_ino) == (facts.st_dev, facts.st_ino)
                if same and is_placeholder(now):
                    with contextlib.suppress(OSError):  # not empty: nothing is removed
                        os.rmdir(path)
                        if self._registry is not None:
                            self._registry.forget(self._names.get(path, path), now)
            except OSError:
                pass
            finally:
                os.close(fd)
