"""JobRegistry: background processes, their ids, their owners, and how they are reported."""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import math
from dataclasses import dataclass, field
from types import TracebackType
from typing import Final

from dsh_shell import NO_NEW_OUTPUT, ShellProcess, process_outcome, render_process_read
from dsh_tool_bash._errors import ForeignJobError, UnknownJobError

__all__ = ["DEFAULT_WAIT", "MAX_WAIT", "Job", "JobRegistry", "job_status_line"]

DEFAULT_WAIT: Final = 30.0
"""Seconds `JobRegistry.output` waits for a job to settle when asked to wait without a timeout."""
MAX_WAIT: Final = 600.0
"""The longest wait `JobRegistry.output` accepts; longer requests are clamped."""

_LABEL_LIMIT: Final = 100


@dataclass(eq=False, slots=True)
class Job:
    """One background job: ``id`` (``<kind>-<n>``), what it runs, and the session owning it.

    ``owner`` is a session id, or ``None`` for a job started without an agent (open to every
    caller). ``process`` is the running `dsh_shell.ShellProcess`.
    """

    id: str
    kind: str
    label: str
    owner: str | None
    process: ShellProcess = field(repr=False)

    @property
    def status_line(self) -> str:
        """``[status: <status>[, <detail>]]``, e.g. ``[status: completed, exit code: 0]``."""
        return job_status_line(self.process)


def job_status_line(process: ShellProcess) -> str:
    """``[status: running]``, ``[status: completed, exit code: N]``, ``[status: killed, …]``."""
    outcome = process_outcome(process)
    if outcome.status == "running":
        return "[status: running]"
    return f"[status: {outcome.status}, {outcome.detail}]"


def _one_line(label: str) -> str:
    text = " ".join(label.split())
    return text if len(text) <= _LABEL_LIMIT else text[: _LABEL_LIMIT - 1] + "…"


class JobRegistry:
    """The background jobs of every session, each owned by the session that started it.

    Ids count per kind from 1 (``bash-1``, ``bash-2``, …) and are predictable, so every access
    names the calling session: a job owned by another session raises `ForeignJobError`
    (``belongs to another session``); a job without owner is open to all. `dispose_owner`
    kills a session's jobs when that session goes away, and `aclose` (or ``async with``) kills
    every job.
    """

    def __init__(self) -> None:
        self._jobs: dict[str, Job] = {}
        self._counters: dict[str, int] = {}

    def start(
        self, process: ShellProcess, *, label: str, owner: str | None, kind: str = "bash"
    ) -> Job:
        """Track an already started ``process`` as a new job of ``kind`` owned by ``owner``."""
        number = self._counters.get(kind, 0) + 1
        self._counters[kind] = number
        job = Job(id=f"{kind}-{number}", kind=kind, label=label, owner=owner, process=process)
        self._jobs[job.id] = job
        return job

    def get(self, job_id: str, owner: str | None) -> Job:
        """The job ``job_id`` as seen by session ``owner`` (``None``: a call without agent).

        Raises `UnknownJobError` for an id never issued or already forgotten, and
        `ForeignJobError` for a job another session owns.
        """
        job = self._jobs.get(job_id)
        if job is None:
            raise UnknownJobError(job_id)
        if job.owner is not None and job.owner != owner:
            raise ForeignJobError(job_id)
        return job

    def list(self, owner: str | None) -> builtins.list[Job]:
        """The jobs session ``owner`` may see (its own and unowned ones), oldest first."""
        return [job for job in self._jobs.values() if job.owner is None or job.owner == owner]

    def list_lines(self, owner: str | None) -> str:
        """What ``job_list`` shows: ``<id> [<kind>] <status> — <label>`` per job."""
        jobs = self.list(owner)
        if not jobs:
            return "(no background jobs)"
        return "\n".join(
            f"{job.id} [{job.kind}] {job.process.status} — {_one_line(job.label)}" for job in jobs
        )

    async def output(
        self,
        job_id: str,
        owner: str | None,
        *,
        wait: bool = False,
        wait_timeout: float | None = None,
    ) -> str:
        """The job's output since the previous read, then its status line.

        With ``wait`` it first waits until the job settles or ``wait_timeout`` seconds pass
        (default `DEFAULT_WAIT`, at most `MAX_WAIT`); a job still running then reports
        ``[status: running]``. An empty delta reads ``(no new output)``.
        """
        job = self.get(job_id, owner)
        if wait and job.process.status == "running":
            limit = DEFAULT_WAIT if wait_timeout is None else wait_timeout
            limit = min(limit, MAX_WAIT) if math.isfinite(limit) else MAX_WAIT
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(job.process.wait(), max(limit, 0.0))
        status = job.status_line
        text = render_process_read(job.process.read_output()) or NO_NEW_OUTPUT
        separator = "" if text.endswith("\n") else "\n"
        return f"{text}{separator}{status}"

    def kill(self, job_id: str, owner: str | None) -> str:
        """Ask the job to stop; the answer the ``job_kill`` tool gives."""
        job = self.get(job_id, owner)
        if job.process.kill():
            return f"requested cancellation of job {job.id}"
        return f"job {job.id} is not running {job.status_line}"

    async def dispose_owner(self, owner: str) -> builtins.list[str]:
        """Kill every job session ``owner`` started, wait for them, forget them; their ids."""
        jobs = [job for job in self._jobs.values() if job.owner == owner]
        await self._end(jobs)
        return [job.id for job in jobs]

    async def aclose(self) -> None:
        """Kill every job (whatever its owner), wait for them to settle, and forget them."""
        await self._end(builtins.list(self._jobs.values()))

    async def _end(self, jobs: builtins.list[Job]) -> None:
        for job in jobs:
            self._jobs.pop(job.id, None)
            job.process.kill()
        if jobs:
            await asyncio.gather(*(job.process.wait() for job in jobs), return_exceptions=True)

    async def __aenter__(self) -> JobRegistry:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
