"""JobRegistry: background processes, their ids, their owners, and how they are reported."""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import inspect
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Final, TypeAlias

from dsh_shell import (
    NO_NEW_OUTPUT,
    ProcessRead,
    ProcessStatus,
    ShellProcess,
    process_outcome,
    render_process_read,
)
from dsh_tool_bash._errors import ForeignJobError, UnknownJobError
from dsh_tools import Disposer

__all__ = [
    "DEFAULT_WAIT",
    "MAX_WAIT",
    "Job",
    "JobListener",
    "JobRegistry",
    "job_status_line",
]

JobListener: TypeAlias = Callable[["Job", str], object]
"""Called as ``listener(job, notice)`` when a job finishes unobserved (sync or async)."""

_log = logging.getLogger(__name__)

DEFAULT_WAIT: Final = 30.0
"""Seconds `JobRegistry.output` waits for a job to settle when asked to wait without a timeout."""
MAX_WAIT: Final = 600.0
"""The longest wait `JobRegistry.output` accepts; longer requests are clamped."""

_LABEL_LIMIT: Final = 100


@dataclass(eq=False, slots=True)
class Job:
    """One background job: ``id`` (``<kind>-<n>``), what it runs, and the session owning it.

    ``owner`` is a session id, or ``None`` for a job started without an agent (open to every
    caller). ``process`` is the job's `dsh_shell.ShellProcess`; once the job has settled and
    its output was read to the end, it is replaced by a small record of the final status
    (the real process and its output buffers are released).
    """

    id: str
    kind: str
    label: str
    owner: str | None
    process: ShellProcess = field(repr=False)
    _observed: bool = field(default=False, init=False, repr=False)
    _watcher: asyncio.Task[None] | None = field(default=None, init=False, repr=False)

    @property
    def status_line(self) -> str:
        """``[status: <status>[, <detail>]]``, e.g. ``[status: completed, exit code: 0]``."""
        return job_status_line(self.process)

    @property
    def finish_notice(self) -> str:
        """What a listener tells the owner when the job finished unobserved."""
        return (
            f"background job {self.id} ({self.kind}: {_one_line(self.label)}) finished "
            f"{self.status_line}. Read its output with job_output."
        )


@dataclass(frozen=True, slots=True)
class _SettledProcess:
    """What a job keeps of a settled process once its output was read to the end.

    The process (and the output buffers it holds) is released, so a session that runs many
    background jobs does not keep every job's output in memory; the status stays readable.
    """

    status: ProcessStatus
    exit_code: int | None
    signal: str | None

    async def wait(self) -> ProcessStatus:
        return self.status

    def read_output(self) -> ProcessRead:
        return ProcessRead(delta="")

    def kill(self) -> bool:
        return False


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
        self._listeners: builtins.list[JobListener] = []

    def start(
        self, process: ShellProcess, *, label: str, owner: str | None, kind: str = "bash"
    ) -> Job:
        """Track an already started ``process`` as a new job of ``kind`` owned by ``owner``.

        Called with a running event loop, the registry also watches the job to tell the
        `on_finished` listeners when it settles.
        """
        number = self._counters.get(kind, 0) + 1
        self._counters[kind] = number
        job = Job(id=f"{kind}-{number}", kind=kind, label=label, owner=owner, process=process)
        self._jobs[job.id] = job
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return job
        job._watcher = loop.create_task(self._watch(job), name=f"dsh-job-watch-{job.id}")
        return job

    def on_finished(self, listener: JobListener) -> Disposer:
        """Call ``listener(job, job.finish_notice)`` when a job settles unobserved.

        "Unobserved": no ``job_kill`` and no read that already reported the final status came
        first, and the owner was not disposed. This is how a loop wakes an idle owner (or
        injects the notice into its next step). A raising listener is logged and skipped.
        """
        self._listeners.append(listener)

        def remove() -> None:
            for index, existing in enumerate(self._listeners):
                if existing is listener:
                    del self._listeners[index]
                    return

        return Disposer(remove)

    async def _watch(self, job: Job) -> None:
        await job.process.wait()
        if job._observed or self._jobs.get(job.id) is not job:
            return
        job._observed = True
        notice = job.finish_notice
        for listener in builtins.list(self._listeners):
            try:
                outcome = listener(job, notice)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:
                _log.exception("job listener %r failed for %s", listener, job.id)

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
        process = job.process
        settled = process.status != "running"  # then this read gets all that is left
        status = job.status_line
        text = render_process_read(process.read_output()) or NO_NEW_OUTPUT
        if settled:
            job._observed = True
            job.process = _SettledProcess(process.status, process.exit_code, process.signal)
        separator = "" if text.endswith("\n") else "\n"
        return f"{text}{separator}{status}"

    def kill(self, job_id: str, owner: str | None) -> str:
        """Ask the job to stop; the answer the ``job_kill`` tool gives."""
        job = self.get(job_id, owner)
        job._observed = True
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
        # A listener may dispose an owner from inside a watcher: never cancel or await that one.
        current = asyncio.current_task()
        watchers = [job._watcher for job in jobs if job._watcher not in (None, current)]
        for job in jobs:
            self._jobs.pop(job.id, None)
            job._observed = True
            job.process.kill()
        for watcher in watchers:
            if watcher is not None:
                watcher.cancel()
        if jobs:
            await asyncio.gather(*(job.process.wait() for job in jobs), return_exceptions=True)
            await asyncio.gather(*(w for w in watchers if w is not None), return_exceptions=True)

    async def __aenter__(self) -> JobRegistry:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
