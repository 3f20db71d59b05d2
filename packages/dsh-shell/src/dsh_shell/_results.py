"""What a command produced: foreground results and background reads."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias

from dsh_shell._sandbox import SandboxMode

ProcessStatus: TypeAlias = Literal["running", "completed", "killed"]
"""The status of a background process; it leaves ``running`` exactly once."""


@dataclass(frozen=True, slots=True)
class CollectedOutput:
    """One captured stream.

    ``text`` is the whole stream, or its tail when ``truncated`` (at least one byte fell out
    of memory). ``spill_path`` names a private file holding the complete stream, when one is
    available (it is absent when the stream outgrew the executor's spill cap).
    """

    text: str
    truncated: bool = False
    spill_path: Path | None = None


@dataclass(frozen=True, slots=True)
class ShellRunResult:
    """The outcome of a foreground `ShellExecutor.run`.

    ``exit_code`` is ``None`` when the command died by a signal (``signal``, e.g.
    ``"SIGTERM"``). ``timed_out`` (the executor's own deadline) and ``aborted`` (the awaiting
    task was cancelled) are mutually exclusive, first cause wins; a command that signals itself
    is neither. ``timeout`` is the effective timeout in seconds and ``duration`` the wall time
    from spawn to settlement in seconds. The two streams stay separate.

    ``sandbox_denied`` is set (to the confining mode) by a confining executor when the confined
    command failed in a way that looks like the sandbox refused it: a nonzero exit and a denial
    signature in its output (``Read-only file system``, ``Permission denied``, ``Operation not
    permitted``, or a network error such as ``Network is unreachable`` while the network is
    off). It is a hint for the model (`sandbox_denied_marker`), not proof.
    """

    exit_code: int | None
    signal: str | None
    timed_out: bool
    aborted: bool
    timeout: float
    stdout: CollectedOutput
    stderr: CollectedOutput
    duration: float
    sandbox_denied: SandboxMode | None = None

    def __post_init__(self) -> None:
        if self.timed_out and self.aborted:
            raise ValueError("a result is timed out or aborted, never both (first cause wins)")


@dataclass(frozen=True, slots=True)
class ProcessRead:
    """One consuming read of a background process's output.

    ``delta`` is the output since the previous read: stdout first, then stderr under a
    ``[stderr]`` header (see `merge_streams`). ``lossy`` is true when output fell out of the
    in-memory window since the previous read; the spill paths then name the complete streams,
    when available.
    """

    delta: str
    lossy: bool = False
    stdout_spill_path: Path | None = None
    stderr_spill_path: Path | None = None
