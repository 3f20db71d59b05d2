"""A child watched through a Linux pidfd, its pipes read straight from the event loop.

No helper thread per child and no await between fork and watching, so a spawn cannot be
interrupted halfway. Used when ``os.pidfd_open`` works; `_child.TransportChild` otherwise.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

from dsh_bash_local._child import SPAWN_FAILURES, Child, decode_returncode, spawn_error
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


class FdChild:
    """A ``Popen`` child whose exit arrives through a pidfd and whose pipes the loop reads."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        popen: subprocess.Popen[bytes],
        pidfd: int,
        readers: dict[int, OutputCollector],
        drain_bound: float,
    ) -> None:
        self._loop = loop
        self._popen = popen
        self._pidfd: int | None = pidfd
        self._readers = dict(readers)
        self._collectors = list(readers.values())
        self._settlement = Settlement(loop, set(readers), drain_bound)
        self._stdin_fd: int | None = None
        self._stdin_data = memoryview(b"")
        self.pgid = popen.pid
        loop.add_reader(pidfd, self._on_exit)
        for fd, collector in readers.items():
            loop.add_reader(fd, self._on_readable, fd, collector)

    @property
    def exited(self) -> bool:
        """Whether the shell has exited."""
        return self._settlement.exited

    def settlement(self) -> asyncio.Future[None]:
        """A new future done at settlement."""
        return self._settlement.waiter()

    @property
    def exit_status(self) -> tuple[int | None, str | None]:
        """The decoded exit status once exited."""
        return decode_returncode(self._popen.returncode)

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

    def close(self) -> None:
        """Stop reading both pipes and stdin and seal the collectors (the exit is still reaped)."""
        self._close_stdin()
        for fd in list(self._readers):
            self._close_reader(fd)
        for collector in self._collectors:
            collector.close()


def spawn_fd_child(
    shell: str,
    command: str,
    *,
    workdir: Path,
    env: dict[str, str],
    stdin: str | bytes | None,
    stdout: OutputCollector,
    stderr: OutputCollector,
    drain_bound: float,
) -> Child:
    """Start ``shell -c command`` (non-login) in a new session, synchronously."""
    loop = asyncio.get_running_loop()
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    in_read, in_write = os.pipe() if stdin is not None else (None, None)
    parent_ends = [fd for fd in (out_read, err_read, in_write) if fd is not None]
    child_ends = [fd for fd in (out_write, err_write, in_read) if fd is not None]
    try:
        popen = subprocess.Popen(
            [shell, "-c", command],
            stdin=in_read if in_read is not None else subprocess.DEVNULL,
            stdout=out_write,
            stderr=err_write,
            cwd=workdir,
            env=env,
            start_new_session=True,
        )
    except BaseException as error:
        for fd in parent_ends:
            os.close(fd)
        if isinstance(error, SPAWN_FAILURES):
            raise spawn_error(error, shell, command, workdir) from error
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
        raise ShellSpawnError(command, f"cannot watch the child: {error}") from error
    for fd in parent_ends:
        os.set_blocking(fd, False)
    child = FdChild(loop, popen, pidfd, {out_read: stdout, err_read: stderr}, drain_bound)
    if in_write is not None:
        data = stdin.encode("utf-8") if isinstance(stdin, str) else (stdin or b"")
        child.feed_stdin(in_write, data)
    return child
