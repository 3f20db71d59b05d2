"""What a clause works with: a fresh executor, a scratch directory, and process probes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from dsh_shell._executor import ShellExecutor
from dsh_shell._request import ShellExecRequest
from dsh_shell._results import ShellRunResult
from dsh_shell.testing._fixture import ExecutorFixture

SAFETY_NET = 60.0
"""Seconds a clause waits for a state before failing; never a speed requirement."""


class ContractViolation(AssertionError):
    """A clause of the executor contract does not hold; the message says which fact failed."""


def expect(condition: bool, message: str) -> None:
    """Raise `ContractViolation` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise ContractViolation(message)


def process_alive(pid: int) -> bool:
    """Whether /proc shows ``pid`` as a live (non-zombie) process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    state = stat[stat.rfind(b")") + 2 :].split()[:1]
    return state not in ([b"Z"], [b"X"])


def read_pids(directory: Path, *names: str) -> dict[str, int]:
    """The pids the command wrote to ``directory/<name>`` (missing files are left out)."""
    pids: dict[str, int] = {}
    for name in names:
        with contextlib.suppress(OSError, ValueError):
            pids[name] = int((directory / name).read_text().strip())
    return pids


def env_lines(text: str) -> dict[str, str]:
    """Parse ``env`` output (one ``NAME=value`` per line) into a mapping."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        if sep:
            found[name] = value
    return found


class ClauseContext:
    """One clause's world: the fixture, a new executor, a scratch dir, cleanup of leftovers."""

    def __init__(
        self,
        fixture: ExecutorFixture,
        executor: ShellExecutor,
        scratch: Path,
        *,
        safety_net: float = SAFETY_NET,
    ) -> None:
        self.fixture = fixture
        self.executor = executor
        self.scratch = scratch
        self.safety_net = safety_net
        self._tracked: set[int] = set()

    async def run(self, command: str, **fields: object) -> ShellRunResult:
        """Resolve and run ``command`` with request ``fields`` (workdir defaults to scratch)."""
        fields.setdefault("workdir", self.scratch)
        fields.setdefault("timeout", 60.0)
        request = ShellExecRequest(command, **fields)  # type: ignore[arg-type]
        return await self.executor.run(self.executor.resolve(request))

    def track(self, pids: Mapping[str, int]) -> None:
        """Remember pids to SIGKILL at the end of the clause if they are still alive."""
        self._tracked.update(pids.values())

    async def eventually(self, predicate: Callable[[], bool], what: str) -> None:
        """Wait until ``predicate()`` holds (within the safety net); fail naming ``what``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.safety_net
        while not predicate():
            if loop.time() > deadline:
                raise ContractViolation(f"{what} did not happen within {self.safety_net:g} s")
            await asyncio.sleep(0.02)

    async def all_dead(self, pids: Mapping[str, int], what: str) -> None:
        """Wait until every pid is gone or a zombie; fail naming the survivors."""
        try:
            await self.eventually(lambda: not any(map(process_alive, pids.values())), what)
        except ContractViolation as error:
            alive = {name: pid for name, pid in pids.items() if process_alive(pid)}
            raise ContractViolation(f"{error}; still alive: {alive}") from None

    def cleanup(self) -> None:
        """SIGKILL every tracked process that survived the clause."""
        for pid in self._tracked:
            if process_alive(pid):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def ambient_environment(values: Mapping[str, str]) -> Iterator[None]:
    """Set variables in this process's environment for the block, restoring them after."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, old in saved.items():
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old


def file_mode_and_size(path: Path) -> tuple[int, int]:
    """Permission bits and size of a file."""
    facts = path.stat()
    return facts.st_mode & 0o777, facts.st_size


def read_text(path: Path) -> str:
    """The text of a small local file."""
    return path.read_text()


def real_path(path: Path) -> str:
    """``path`` with symlinks resolved, as the shell's ``pwd -P`` prints it."""
    return os.path.realpath(path)
