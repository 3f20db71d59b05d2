"""What an executor author hands the contract suite: capabilities and a factory."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from dsh_shell._executor import ShellExecutor

LOCAL_PROCESSES: Final = "local_processes"
"""Commands run as processes of this host: they inherit this process's environment, share its
filesystem, and appear in this host's ``/proc`` (process-group and memory clauses)."""

BACKGROUND: Final = "background"
"""``start()`` is supported (background-process clauses)."""

SPILL: Final = "spill"
"""Spill files are local paths this process can stat and read (spill clauses)."""

CHILD_PROCESS: Final = "child_process"
"""``child_factory`` rebuilds the executor in a child Python process (clauses about what a
command inherits from the process running the executor, such as its stdin)."""

HOST_PIDS: Final = "host_pids"
"""A command's ``$$`` and ``$!`` are pids of this process's PID namespace, so the suite can
look them up in ``/proc`` and signal them (the clauses that follow a command's process family by
pid). An executor that runs each command in its own PID namespace does not declare it; it must
show the same cleanup through its namespace in its own tests (nothing of the command is left)."""

LIVE_OUTPUT: Final = "live_output"
"""A foreground ``run`` tells the spec's ``on_output`` the output while the command runs."""

CAPABILITIES: Final = frozenset(
    {LOCAL_PROCESSES, BACKGROUND, SPILL, CHILD_PROCESS, HOST_PIDS, LIVE_OUTPUT}
)
"""Every capability a clause may require."""


@dataclass(frozen=True, slots=True)
class ExecutorFixture:
    """The one thing an executor author provides to the contract suite.

    ``make()`` returns a new executor for each clause (called inside the clause's running
    event loop; if the executor has an ``aclose()`` coroutine method it is awaited after the
    clause). ``capabilities`` declares what the executor supports (see `CAPABILITIES`); a
    clause needing an undeclared capability is skipped. ``spill_cap_bytes`` is the
    executor's per-stream spill cap (checked when ``spill`` is declared).

    ``child_factory`` and ``child_args`` (needed by ``child_process``): ``"module:function"``
    (or ``"/path/to/file.py:function"``) called in a child Python process as
    ``function(child_args)`` (sync or async; ``child_args`` JSON-serializable) to build the
    same executor there. The child sees this process's ``sys.path``.
    """

    capabilities: frozenset[str]
    make: Callable[[], ShellExecutor]
    spill_cap_bytes: int = 64 * 1024 * 1024
    child_factory: str | None = None
    child_args: Any = None

    def __post_init__(self) -> None:
        unknown = set(self.capabilities) - CAPABILITIES
        if unknown:
            raise ValueError(
                f"unknown capabilities {sorted(unknown)}; known: {sorted(CAPABILITIES)}"
            )
        object.__setattr__(self, "capabilities", frozenset(self.capabilities))
        if CHILD_PROCESS in self.capabilities and not self.child_factory:
            raise ValueError("capability 'child_process' needs child_factory ('module:function')")
        if self.child_factory is not None and ":" not in self.child_factory:
            raise ValueError(
                f"child_factory must look like 'module:function', got {self.child_factory!r}"
            )
