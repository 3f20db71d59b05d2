"""What an executor author hands the contract suite: capabilities and a factory."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from dsh_shell._executor import ShellExecutor

LOCAL_PROCESSES: Final = "local_processes"
"""Commands run as processes of this host: they inherit this process's environment, share its
filesystem, and appear in this host's ``/proc`` (process-group and memory clauses)."""

BACKGROUND: Final = "background"
"""``start()`` is supported (background-process clauses)."""

SPILL: Final = "spill"
"""Spill files are local paths this process can stat and read (spill clauses)."""

CAPABILITIES: Final = frozenset({LOCAL_PROCESSES, BACKGROUND, SPILL})
"""Every capability a clause may require."""


@dataclass(frozen=True, slots=True)
class ExecutorFixture:
    """The one thing an executor author provides to the contract suite.

    ``make()`` returns a new executor for each clause (called inside the clause's running
    event loop; if the executor has an ``aclose()`` coroutine method it is awaited after the
    clause). ``capabilities`` declares what the executor supports (see `CAPABILITIES`); a
    clause needing an undeclared capability is skipped. ``spill_cap_bytes`` is the
    executor's per-stream spill cap (checked when ``spill`` is declared).
    """

    capabilities: frozenset[str]
    make: Callable[[], ShellExecutor]
    spill_cap_bytes: int = 64 * 1024 * 1024

    def __post_init__(self) -> None:
        unknown = set(self.capabilities) - CAPABILITIES
        if unknown:
            raise ValueError(
                f"unknown capabilities {sorted(unknown)}; known: {sorted(CAPABILITIES)}"
            )
        object.__setattr__(self, "capabilities", frozenset(self.capabilities))
