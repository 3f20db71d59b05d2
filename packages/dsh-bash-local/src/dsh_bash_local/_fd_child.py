"""A child watched through a Linux pidfd, its pipes read straight from the event loop.

No helper thread per child and no await between fork and watching, so a spawn cannot be
interrupted halfway. Used when ``os.pidfd_open`` works; `_transport_child.TransportChild`
otherwise.
"""

from __future__ import annotations

import asyncio
import os
import subprocess

from dsh_bash_local._child import SPAWN_FAILURES, Child, Launch
from dsh_bash_local._collector import OutputCollector
from dsh_bash_local._group import kill_group_now
from dsh_bash_local._settle import Settlement
from dsh_shell import ShellSpawnError

_READ_SIZE = 256 * 1024
_READS_PER_WAKEUP = 16


def _pidfd_works() -> bool:
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return False
    try:
        os.close(pidfd_open(os.getpid()))
    except OSError:
        return False
    return True


PIDFD_AVAILABLE = _pidfd_works()
"""Whether this host supports pidfds (Linux 5.3+)."""


class FdChild(Child):
    """A ``Popen`` child whose exit arrives through a pidfd and whose pipes the loop reads."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        popen: subprocess.Popen[bytes],
        pidfd: int,
        readers: dict[int, OutputCollector],
        launch: Launch,
    ) -> None:
        super().__init__(popen.pid, Settlement(loop, set(readers), launch.grace), launch)
        self._loop = loop
        self._popen = popen
        self._pidfd: int | None = pidfd
        self._readers = dict(readers)
        self._stdin_fd: int | None = None
        self._stdin_data = memoryview(b"")
        loop.add_reader(pidfd, self._on_exit)
        for fd, collector in readers.items():
            loop.add_reader(fd, self._on_readable, fd, collector)

    def _returncode(self) -> int | None:
        return self._popen.returncode

    def feed_stdin(self, fd: int, data: bytes) -> None:
        """Write ``data`` to the child's stdin without blocking, then close it."""
        self._stdin_fd = fd
        self._stdin_data = memoryview(data)
        if data:
            self._loop.add_writer(fd, self._on_writable)
        else:
            self._close_stdin()

    def _on_writable(self) -> None:
        assert self._stdin_fd is not None
        try:
            written = os.write(self._stdin_fd, self._stdin_data[:_READ_SIZE])
        except BlockingIOError:
            return
        except OSError:  # the command closed its stdin (EPIPE): the rest is not wanted
            written = len(self._stdin_data)
        self._stdin_data = self._stdin_data[written:]
        if not self._stdin_data:
            self._close_stdin()

    def _close_stdin(self) -> None:
        if self._stdin_fd is not None:
            self._loop.remove_writer(self._stdin_fd)
            os.close(self._stdin_fd)
            self._stdin_fd = None

    def _on_readable(self, fd: int, collector: OutputCollector) -> None:
        for _ in range(_READS_PER_WAKEUP):
            try:
                data = os.read(fd, _READ_SIZE)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self._close_reader(fd)
                self._settlement.stream_closed(fd)
                return
            collector.feed(data)

    def _close_reader(self, fd: int) -> None:
        if self._readers.pop(fd, None) is not None:
            self._loop.remove_reader(fd)
            os.close(fd)

    def _on_exit(self) -> None:
        try:
            pid, status = os.waitpid(self.pgid, os.WNOHANG)
        except ChildProcessError:  # reaped by someone else: the status is lost
            pid, status = self.pgid, 255 << 8
        if pid == 0:
            return
        self._popen.returncode = os.waitstatus_to_exitcode(status)
        if self._pidfd is not None:
            self._loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None
        self._settlement.process_exited()

    def _stop_reading(self) -> None:
        # The pidfd stays watched: the exit is still reaped.
        self._close_stdin()
        for fd in list(self._readers):
            self._close_reader(fd)


def spawn_fd_child(launch: Launch) -> Child:
    """Start ``launch`` in a new session, synchronously."""
    loop = asyncio.get_running_loop()
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    in_read, in_write = os.pipe() if launch.stdin is not None else (None, None)
    parent_ends = [fd for fd in (out_read, err_read, in_write) if fd is not None]
    child_ends = [fd for fd in (out_write, err_write, in_read) if fd is not None]
    try:
        popen = subprocess.Popen(
            launch.argv,
            stdin=in_read if in_read is not None else subprocess.DEVNULL,
            stdout=out_write,
            stderr=err_write,
            cwd=launch.workdir,
            env=launch.env,
            start_new_session=True,
        )
    except BaseException as error:
        for fd in parent_ends:
            os.close(fd)
        if isinstance(error, SPAWN_FAILURES):
            raise launch.spawn_error(error) from error
        raise
    finally:
        for fd in child_ends:
            os.close(fd)
    try:
        pidfd = os.pidfd_open(popen.pid)
    except OSError as error:  # out of descriptors: do not leave a child nobody watches
        kill_group_now(popen.pid)
        popen.wait()
        for fd in parent_ends:
            os.close(fd)
        raise ShellSpawnError(launch.command, f"cannot watch the child: {error}") from error
    for fd in parent_ends:
        os.set_blocking(fd, False)
    readers = {out_read: launch.stdout, err_read: launch.stderr}
    child = FdChild(loop, popen, pidfd, readers, launch)
    if in_write is not None:
        child.feed_stdin(in_write, launch.stdin or b"")
    return child
