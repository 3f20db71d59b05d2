"""``dsh_persistence.filelock``: the flock-based writer lock the file backends share."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dsh_persistence.filelock import FileLock, LockContendedError, open_lock_file


def test_a_second_acquire_is_contended_until_release(tmp_path: Path) -> None:
    path = tmp_path / "s.lock"
    lock = FileLock.acquire(path)
    assert lock.held
    assert lock.path == path
    assert os.stat(path).st_mode & 0o777 == 0o600
    with pytest.raises(LockContendedError, match=str(path)):
        FileLock.acquire(path)
    lock.release()
    lock.release()  # idempotent
    assert not lock.held
    assert path.exists()  # the lock file stays
    FileLock.acquire(path).release()


def test_another_process_is_contended(tmp_path: Path) -> None:
    path = tmp_path / "s.lock"
    lock = FileLock.acquire(path)
    code = (
        "import sys; from pathlib import Path\n"
        "from dsh_persistence.filelock import FileLock, LockContendedError\n"
        "try:\n    FileLock.acquire(Path(sys.argv[1]))\nexcept LockContendedError:\n"
        "    sys.exit(3)\n"
    )
    assert subprocess.run([sys.executable, "-c", code, str(path)]).returncode == 3
    lock.release()
    assert subprocess.run([sys.executable, "-c", code, str(path)]).returncode == 0


def test_a_symbolic_link_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "target").write_text("")
    (tmp_path / "s.lock").symlink_to(tmp_path / "target")
    with pytest.raises(OSError, match="Too many levels of symbolic links") as raised:
        FileLock.acquire(tmp_path / "s.lock")
    assert raised.value.errno == errno.ELOOP


def test_a_file_replaced_while_locking_is_locked_anew(tmp_path: Path) -> None:
    path = tmp_path / "s.lock"
    opened: list[int] = []

    def replacing_opener(p: Path) -> int:
        fd = open_lock_file(p)
        if not opened:  # the first time, someone replaces the file under the locker
            os.replace(tmp_path / "other", p)
        opened.append(fd)
        return fd

    (tmp_path / "other").write_text("")
    lock = FileLock.acquire(path, opener=replacing_opener)
    assert len(opened) == 2  # the first inode was no longer the path's: locked again
    assert os.fstat(opened[1]).st_ino == os.lstat(path).st_ino
    lock.release()


def test_a_path_that_never_settles_is_contended(tmp_path: Path) -> None:
    path = tmp_path / "s.lock"

    def unlinking_opener(p: Path) -> int:
        fd = open_lock_file(p)
        os.unlink(p)
        return fd

    with pytest.raises(LockContendedError, match="kept changing"):
        FileLock.acquire(path, opener=unlinking_opener)


def test_the_opener_decides_what_an_odd_file_raises(tmp_path: Path) -> None:
    class Odd(Exception):
        pass

    def refusing(p: Path) -> int:
        raise Odd(str(p))

    with pytest.raises(Odd):
        FileLock.acquire(tmp_path / "s.lock", opener=refusing)
