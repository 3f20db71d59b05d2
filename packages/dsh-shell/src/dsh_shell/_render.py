"""Rendering results as model-facing text with the exact upstream markers, and parsing it back."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from dsh_shell._executor import ShellProcess
from dsh_shell._results import CollectedOutput, ProcessRead, ShellRunResult

NO_OUTPUT: Final = "(no output)"
"""The body of a foreground result whose streams are both empty."""

NO_NEW_OUTPUT: Final = "(no new output)"
"""How a job controller renders an empty background delta."""

STDERR_HEADER: Final = "[stderr]"
"""The line that introduces stderr after stdout."""

UNAVAILABLE: Final = "(unavailable)"
"""Stands for a spill path that does not exist."""

_SIGNAL_MARKER = re.compile(r"\n\[killed by signal: ([^\]\n]+)\]\Z")
_EXIT_MARKER = re.compile(r"\n\[exit code: (-?\d+)\]\Z")


def exit_code_marker(exit_code: int) -> str:
    """``[exit code: N]``."""
    return f"[exit code: {exit_code}]"


def signal_marker(signal: str) -> str:
    """``[killed by signal: X]``."""
    return f"[killed by signal: {signal}]"


def timeout_marker(timeout: float) -> str:
    """``[timed out after Nms]`` for a timeout given in seconds."""
    return f"[timed out after {round(timeout * 1000)}ms]"


def truncation_notice(spill_path: Path | None) -> str:
    """``[output truncated; full output: <path or (unavailable)>]``."""
    where = str(spill_path) if spill_path is not None else UNAVAILABLE
    return f"[output truncated; full output: {where}]"


def lossy_notice(spill_paths: Iterable[Path]) -> str:
    """``[some output was dropped from memory; full output: <paths or (unavailable)>]``."""
    where = ", ".join(str(p) for p in spill_paths) or UNAVAILABLE
    return f"[some output was dropped from memory; full output: {where}]"


def merge_streams(stdout: str, stderr: str) -> str:
    """Stdout, then (if stderr is non-empty) ``[stderr]`` and stderr.

    A newline separates them only when stdout is non-empty and lacks a trailing newline, so
    a stderr-only text starts with the header.
    """
    if not stderr:
        return stdout
    separator = "\n" if stdout and not stdout.endswith("\n") else ""
    return f"{stdout}{separator}{STDERR_HEADER}\n{stderr}"


def _stream_text(stream: CollectedOutput) -> str:
    if not stream.truncated:
        return stream.text
    return f"{stream.text}\n{truncation_notice(stream.spill_path)}"


def _with_markers(body: str, markers: list[str]) -> str:
    if not markers:
        return body
    if not body.endswith("\n"):
        body += "\n"
    return body + "\n".join(markers)


def render_result(result: ShellRunResult) -> str:
    """The model-facing text of a foreground result.

    Streams (with a truncation notice each when truncated) merged by `merge_streams`, or
    ``(no output)``; then, one per line: ``[timed out after Nms]`` when timed out, and exactly
    one of ``[killed by signal: X]`` or ``[exit code: N]`` (nonzero only). No trailing newline
    after the last marker.
    """
    body = merge_streams(_stream_text(result.stdout), _stream_text(result.stderr)) or NO_OUTPUT
    markers: list[str] = []
    if result.timed_out:
        markers.append(timeout_marker(result.timeout))
    if result.signal is not None:
        markers.append(signal_marker(result.signal))
    elif result.exit_code is not None and result.exit_code != 0:
        markers.append(exit_code_marker(result.exit_code))
    return _with_markers(body, markers)


def render_process_read(read: ProcessRead) -> str:
    """The text of a background read: the delta, plus a notice when the read was lossy.

    An empty result stays empty; the caller renders it as ``(no new output)``.
    """
    if not read.lossy:
        return read.delta
    paths = [p for p in (read.stdout_spill_path, read.stderr_spill_path) if p is not None]
    notice = lossy_notice(paths)
    if read.delta and not read.delta.endswith("\n"):
        return f"{read.delta}\n{notice}"
    return read.delta + notice


@dataclass(frozen=True, slots=True)
class ExitStatus:
    """A rendered result split into its body and final status marker."""

    body: str
    exit_code: int | None
    signal: str | None


def parse_exit_status(text: str) -> ExitStatus:
    """Split off the final status marker of a rendered result.

    ``\\n[killed by signal: X]`` is checked first, then ``\\n[exit code: N]``; either must end
    the text and follow a newline. Without one the exit code is 0. Only that final marker is
    removed; timeout and truncation markers stay in the body.
    """
    match = _SIGNAL_MARKER.search(text)
    if match is not None:
        return ExitStatus(body=text[: match.start()], exit_code=None, signal=match.group(1))
    match = _EXIT_MARKER.search(text)
    if match is not None:
        return ExitStatus(body=text[: match.start()], exit_code=int(match.group(1)), signal=None)
    return ExitStatus(body=text, exit_code=0, signal=None)


@dataclass(frozen=True, slots=True)
class ProcessOutcome:
    """How a settled background process is reported: status and a short detail."""

    status: Literal["running", "completed", "killed"]
    detail: str


def process_outcome(process: ShellProcess) -> ProcessOutcome:
    """``killed`` with ``signal: X`` (or ``killed before exit``), else ``exit code: N``."""
    if process.status == "killed":
        detail = f"signal: {process.signal}" if process.signal else "killed before exit"
        return ProcessOutcome("killed", detail)
    if process.status == "running":
        return ProcessOutcome("running", "still running")
    return ProcessOutcome("completed", f"exit code: {process.exit_code or 0}")
