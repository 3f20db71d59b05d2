"""A spawned child as the executor sees it: what to launch, and what both spawn paths share."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from dsh_bash_local._collector import OutputCollector
from dsh_bash_local._settle import Settlement
from dsh_shell import ShellNotFoundError, ShellSpawnError, ShellWorkdirError

SPAWN_FAILURES = (OSError, ValueError, subprocess.SubprocessError)
"""What ``subprocess.Popen`` raises when it cannot start a child."""


@dataclass(frozen=True, slots=True)
class Launch:
    """One ``<shell> -c <command>`` to start: where, with which environment, stdin and sinks.

    ``grace`` bounds the wait for pipes a grandchild still holds after the shell exits (and is
    the executor's TERM-to-KILL grace).
    """

    shell: str
    command: str
    workdir: Path
    env: dict[str, str]
    stdin: bytes | None
    stdout: OutputCollector
    stderr: OutputCollector
    grace: float

    @property
    def argv(self) -> list[str]:
        """``[shell, "-c", command]``: a non-login, non-interactive shell."""
        return [self.shell, "-c", self.command]

    def spawn_error(self, error: Exception) -> Exception:
        """The `ShellError` a failed spawn stands for (workdir, missing shell, or other)."""
        if isinstance(error, FileNotFoundError | PermissionError | NotADirectoryError):
            if error.filename is not None and os.fspath(error.filename) == os.fspath(self.workdir):
                return ShellWorkdirError(self.workdir, error.strerror or str(error))
            return ShellNotFoundError(self.shell, error.strerror or str(error))
        return ShellSpawnError(self.command, str(error))


def encode_stdin(stdin: str | bytes | None) -> bytes | None:
    """Stdin as the bytes written to the child (UTF-8 for text); ``None`` means /dev/null."""
    return stdin.encode("utf-8") if isinstance(stdin, str) else stdin


class Child:
    """A running ``<shell> -c`` child: its group, its settlement, its exit status.

    Subclasses (one per spawn path) report the raw return code and stop reading on `close`.
    """

    def __init__(self, pid: int, settlement: Settlement, launch: Launch) -> None:
        self.pgid = pid
        """The process group id (the shell's pid)."""
        self._settlement = settlement
        self._launch = launch

    @property
    def exited(self) -> bool:
        """Whether the shell process (the group leader) has exited."""
        return self._settlement.exited

    def settlement(self) -> asyncio.Future[None]:
        """A new future done once the shell exited and its pipes closed (or were given up)."""
        return self._settlement.waiter()

    @property
    def exit_status(self) -> tuple[int | None, str | None]:
        """``(exit_code, None)`` or ``(None, signal name)`` once exited."""
        return decode_returncode(self._returncode())

    def _returncode(self) -> int | None:
        raise NotImplementedError

    def _stop_reading(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Stop reading (abandoning pipes a grandchild holds) and seal both collectors."""
        self._stop_reading()
        self._launch.stdout.close()
        self._launch.stderr.close()


async def settle(child: Child) -> None:
    """Wait for settlement (a cancellation is held until then), then close the child."""
    while True:
        waiter = child.settlement()
        if waiter.done():
            break
        with contextlib.suppress(asyncio.CancelledError):
            await waiter
    child.close()


def decode_returncode(code: int | None) -> tuple[int | None, str | None]:
    """``(exit_code, None)`` for a normal exit, ``(None, signal name)`` for a signal death."""
    if code is None or code >= 0:
        return code, None
    try:
        return None, signal.Signals(-code).name
    except ValueError:
        return None, f"signal {-code}"


def check_workdir(workdir: Path) -> None:
    """Raise `ShellWorkdirError` naming ``workdir`` unless this process can enter it.

    Missing, not a directory, below a file or an unsearchable directory, or a directory this
    process may not search (``chdir`` would fail): never a bare `OSError`.
    """
    try:
        facts = workdir.stat()
    except FileNotFoundError:
        raise ShellWorkdirError(workdir, "it does not exist") from None
    except NotADirectoryError:
        raise ShellWorkdirError(workdir, "a part of its path is not a directory") from None
    except OSError as error:
        raise ShellWorkdirError(workdir, error.strerror or str(error)) from None
    if not stat.S_ISDIR(facts.st_mode):
        raise ShellWorkdirError(workdir, "it is not a directory")
    if not _may_enter(workdir):
        raise ShellWorkdirError(workdir, "permission denied: this process cannot enter it")


def _may_enter(directory: Path) -> bool:
    if os.access in os.supports_effective_ids:
        return os.access(directory, os.X_OK, effective_ids=True)
    return os.access(directory, os.X_OK)
