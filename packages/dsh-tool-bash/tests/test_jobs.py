"""Background jobs: starting, reading, killing, listing, ownership and disposal."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from dsh_tool_bash import (
    ForeignJobError,
    JobRegistry,
    UnknownJobError,
    job_status_line,
)

BG = {
    "command": "sleep 60; echo bg-ok",
    "description": "Sleep then print",
    "run_in_background": True,
}


async def _start(call: Any, caller: Any = None, **extra: Any) -> str:
    result = await call("bash", {**BG, **extra}, caller)
    assert not result.is_error, result.text
    text: str = result.text
    return text


# -- starting -----------------------------------------------------------------------------------


async def test_starting_answers_with_the_job_id(call: Any, caller: Any) -> None:
    assert await _start(call, caller) == "started background job bash-1"
    assert await _start(call, caller) == "started background job bash-2"


async def test_a_background_request_carries_the_managed_snapshot_and_no_model_env(
    call: Any, executor: Any, caller: Any, home: Path
) -> None:
    await _start(call, caller, env={"DSH_SESSION_ID": "spoofed"}, stdin="x", stdoutMaxBytes=1)
    assert executor.run_specs == []
    assert len(executor.start_specs) == 1
    request = executor.requests[0]
    assert dict(request.dsh_env or {}) == {
        "DSH_HOME": str(home),
        "DSH_SHELL": "1",
        "DSH_SESSION_ID": "session-a",
    }
    assert request.env is None
    assert request.stdin is None
    assert request.stdout_max_bytes is None
    assert executor.start_specs[0].workdir == Path("/work/project-a")


async def test_a_background_call_without_agent_has_no_session_id(call: Any, executor: Any) -> None:
    await _start(call)
    assert "DSH_SESSION_ID" not in (executor.requests[0].dsh_env or {})


async def test_the_job_is_owned_by_the_calling_session(
    call: Any, jobs: JobRegistry, caller: Any
) -> None:
    await _start(call, caller)
    (job,) = jobs.list("session-a")
    assert (job.id, job.kind, job.owner, job.label) == (
        "bash-1",
        "bash",
        "session-a",
        BG["command"],
    )


# -- job_output ---------------------------------------------------------------------------------


async def test_reading_a_running_job_without_output_says_so(call: Any, caller: Any) -> None:
    await _start(call, caller)
    result = await call("job_output", {"job_id": "bash-1"}, caller)
    assert result.text == "(no new output)\n[status: running]"


async def test_reads_are_incremental_and_end_with_the_status(
    call: Any, executor: Any, caller: Any
) -> None:
    await _start(call, caller)
    process = executor.processes[0]
    process.emit("first\n")
    assert (await call("job_output", {"job_id": "bash-1"}, caller)).text == (
        "first\n[status: running]"
    )
    process.emit("bg-ok")
    process.finish(0)
    assert (await call("job_output", {"job_id": "bash-1"}, caller)).text == (
        "bg-ok\n[status: completed, exit code: 0]"
    )


async def test_a_nonzero_background_exit_is_completed_not_an_error(
    call: Any, executor: Any, caller: Any
) -> None:
    await _start(call, caller)
    executor.processes[0].finish(9)
    result = await call("job_output", {"job_id": "bash-1"}, caller)
    assert result.text == "(no new output)\n[status: completed, exit code: 9]"
    assert not result.is_error


async def test_a_settled_job_read_to_its_end_releases_its_process_and_keeps_its_status(
    call: Any, executor: Any, caller: Any, jobs: JobRegistry
) -> None:
    await _start(call, caller)
    executor.processes[0].emit("bg-ok\n")
    executor.processes[0].finish(3)
    first = await call("job_output", {"job_id": "bash-1"}, caller)
    again = await call("job_output", {"job_id": "bash-1"}, caller)
    listed = await call("job_list", {}, caller)
    assert first.text == "bg-ok\n[status: completed, exit code: 3]"
    assert again.text == "(no new output)\n[status: completed, exit code: 3]"
    assert listed.text.startswith("bash-1 [bash] completed — ")
    assert jobs.get("bash-1", caller.session_id).process is not executor.processes[0]


async def test_waiting_returns_once_the_job_settles(call: Any, executor: Any, caller: Any) -> None:
    await _start(call, caller)
    process = executor.processes[0]
    reading = asyncio.create_task(call("job_output", {"job_id": "bash-1", "wait": True}, caller))
    await asyncio.sleep(0)
    assert not reading.done()
    process.emit("done\n")
    process.finish(0)
    assert (await reading).text == "done\n[status: completed, exit code: 0]"


async def test_a_wait_that_times_out_reports_running(call: Any, caller: Any) -> None:
    await _start(call, caller)
    arguments = {"job_id": "bash-1", "wait": True, "timeout_ms": 0}
    assert (await call("job_output", arguments, caller)).text == (
        "(no new output)\n[status: running]"
    )


async def test_a_lossy_read_carries_the_dropped_output_notice(
    call: Any, executor: Any, caller: Any
) -> None:
    await _start(call, caller)
    process = executor.processes[0]
    process.emit("tail")
    process.lossy_next = True
    assert (await call("job_output", {"job_id": "bash-1"}, caller)).text == (
        "tail\n[some output was dropped from memory; full output: (unavailable)]\n[status: running]"
    )


async def test_an_unknown_job_is_an_error(call: Any, caller: Any) -> None:
    result = await call("job_output", {"job_id": "bash-7"}, caller)
    assert result.error is not None
    assert result.error.code == "UNKNOWN_JOB"
    assert "unknown background job 'bash-7'" in result.text


async def test_a_negative_wait_timeout_is_invalid(call: Any, caller: Any) -> None:
    await _start(call, caller)
    result = await call("job_output", {"job_id": "bash-1", "wait": True, "timeout_ms": -1}, caller)
    assert result.error is not None
    assert result.error.code == "INVALID_ARGS"


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"wait": "yes"}, "wait"),
        ({"wait": 1}, "wait"),
        ({"wait": True, "timeout_ms": True}, "timeout_ms"),
        ({"wait": True, "timeout_ms": "100"}, "timeout_ms"),
    ],
)
async def test_job_output_arguments_have_strict_types(
    call: Any, caller: Any, extra: dict[str, Any], field: str
) -> None:
    await _start(call, caller)
    result = await call("job_output", {"job_id": "bash-1", **extra}, caller)
    assert result.error is not None
    assert result.error.code == "INVALID_ARGS"
    assert f"{field}:" in result.text


async def test_a_job_id_that_is_not_a_string_is_invalid(call: Any, caller: Any) -> None:
    result = await call("job_kill", {"job_id": 1}, caller)
    assert result.error is not None
    assert result.error.code == "INVALID_ARGS"


# -- job_kill -----------------------------------------------------------------------------------


async def test_killing_requests_cancellation_and_the_status_shows_the_signal(
    call: Any, executor: Any, caller: Any
) -> None:
    await _start(call, caller)
    assert (await call("job_kill", {"job_id": "bash-1"}, caller)).text == (
        "requested cancellation of job bash-1"
    )
    assert executor.processes[0].status == "killed"
    assert (await call("job_output", {"job_id": "bash-1"}, caller)).text == (
        "(no new output)\n[status: killed, signal: SIGTERM]"
    )


async def test_killing_a_finished_job_says_it_is_not_running(
    call: Any, executor: Any, caller: Any
) -> None:
    await _start(call, caller)
    executor.processes[0].finish(0)
    assert (await call("job_kill", {"job_id": "bash-1"}, caller)).text == (
        "job bash-1 is not running [status: completed, exit code: 0]"
    )


# -- job_list -----------------------------------------------------------------------------------


async def test_job_list_shows_one_status_line_per_job(
    call: Any, executor: Any, caller: Any
) -> None:
    await _start(call, caller)
    await _start(call, caller, command="make\n  test")
    executor.processes[0].finish(0)
    assert (await call("job_list", {}, caller)).text == (
        f"bash-1 [bash] completed — {BG['command']}\nbash-2 [bash] running — make test"
    )


async def test_job_list_without_jobs_says_so(call: Any, caller: Any) -> None:
    assert (await call("job_list", {}, caller)).text == "(no background jobs)"


async def test_a_long_label_is_cut_to_one_short_line(call: Any, caller: Any) -> None:
    await _start(call, caller, command="echo " + "x" * 300)
    line = (await call("job_list", {}, caller)).text
    assert line.endswith("…")
    assert len(line) < 140
    assert "\n" not in line


# -- ownership ----------------------------------------------------------------------------------


async def test_another_session_cannot_read_a_job(
    call: Any, executor: Any, caller: Any, other_caller: Any
) -> None:
    await _start(call, caller)
    executor.processes[0].emit("secret\n")
    result = await call("job_output", {"job_id": "bash-1"}, other_caller)
    assert result.error is not None
    assert result.error.code == "FOREIGN_JOB"
    assert result.text == "Error: background job bash-1 belongs to another session"
    assert (await call("job_output", {"job_id": "bash-1"}, caller)).text.startswith("secret\n")


async def test_another_session_cannot_kill_a_job(
    call: Any, executor: Any, caller: Any, other_caller: Any
) -> None:
    await _start(call, caller)
    result = await call("job_kill", {"job_id": "bash-1"}, other_caller)
    assert result.error is not None
    assert result.error.code == "FOREIGN_JOB"
    assert executor.processes[0].kill_calls == 0


async def test_a_call_without_agent_cannot_touch_an_owned_job(call: Any, caller: Any) -> None:
    await _start(call, caller)
    result = await call("job_output", {"job_id": "bash-1"})
    assert result.error is not None
    assert result.error.code == "FOREIGN_JOB"


async def test_another_session_does_not_see_the_job_in_its_list(
    call: Any, caller: Any, other_caller: Any
) -> None:
    await _start(call, caller)
    assert (await call("job_list", {}, other_caller)).text == "(no background jobs)"


async def test_a_job_started_without_agent_is_open_to_every_session(call: Any, caller: Any) -> None:
    await _start(call)
    assert (await call("job_output", {"job_id": "bash-1"}, caller)).text == (
        "(no new output)\n[status: running]"
    )


def test_the_registry_refuses_foreign_and_unknown_ids_directly(jobs: JobRegistry) -> None:
    with pytest.raises(UnknownJobError):
        jobs.get("bash-1", "session-a")


# -- disposal -----------------------------------------------------------------------------------


async def test_disposing_an_owner_kills_and_forgets_only_its_jobs(
    call: Any, executor: Any, jobs: JobRegistry, caller: Any, other_caller: Any
) -> None:
    await _start(call, caller)
    await _start(call, other_caller)
    assert await jobs.dispose_owner("session-a") == ["bash-1"]
    mine, theirs = executor.processes
    assert (mine.status, theirs.status) == ("killed", "running")
    with pytest.raises(UnknownJobError):
        jobs.get("bash-1", "session-a")
    assert [job.id for job in jobs.list("session-b")] == ["bash-2"]


async def test_aclose_kills_every_job(
    call: Any, executor: Any, jobs: JobRegistry, caller: Any
) -> None:
    await _start(call, caller)
    await _start(call)
    await jobs.aclose()
    assert [process.status for process in executor.processes] == ["killed", "killed"]
    assert jobs.list(None) == []


async def test_leaving_the_registry_context_kills_its_jobs(caller: Any, executor: Any) -> None:
    async with JobRegistry() as jobs:
        process = executor.start(None)
        jobs.start(process, label="sleep 60", owner="session-a")
    assert process.status == "killed"


def test_a_job_without_signal_reports_killed_before_exit(executor: Any) -> None:
    process = executor.start(None)
    process._status = "killed"
    assert job_status_line(process) == "[status: killed, killed before exit]"


def test_foreign_job_error_does_not_reveal_the_owner(jobs: JobRegistry, executor: Any) -> None:
    jobs.start(executor.start(None), label="x", owner="secret-session")
    with pytest.raises(ForeignJobError) as info:
        jobs.get("bash-1", "session-a")
    assert "secret-session" not in str(info.value)


# -- completion notices -------------------------------------------------------------------------


class Notices:
    """Collects (job id, notice) pairs; ``next()`` waits for the next one."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        self.seen: list[str] = []

    def __call__(self, job: Any, notice: str) -> None:
        self.seen.append(job.id)
        self.queue.put_nowait((job.id, notice))

    async def next(self) -> tuple[str, str]:
        return await asyncio.wait_for(self.queue.get(), 30)


async def test_a_job_finishing_unobserved_notifies_the_listeners(
    call: Any, executor: Any, jobs: JobRegistry, caller: Any
) -> None:
    notices = Notices()
    jobs.on_finished(notices)
    await _start(call, caller)
    executor.processes[0].finish(0)
    assert await notices.next() == (
        "bash-1",
        f"background job bash-1 (bash: {BG['command']}) finished "
        "[status: completed, exit code: 0]. Read its output with job_output.",
    )


async def test_a_killed_job_sends_no_notice(
    call: Any, executor: Any, jobs: JobRegistry, caller: Any
) -> None:
    notices = Notices()
    jobs.on_finished(notices)
    await _start(call, caller)
    await _start(call, caller)
    await call("job_kill", {"job_id": "bash-1"}, caller)
    executor.processes[1].finish(0)  # settles after bash-1, so its watcher runs after bash-1's
    assert (await notices.next())[0] == "bash-2"
    assert notices.seen == ["bash-2"]


async def test_a_read_that_reports_the_final_status_suppresses_the_notice(
    call: Any, executor: Any, jobs: JobRegistry, caller: Any
) -> None:
    notices = Notices()
    jobs.on_finished(notices)
    await _start(call, caller)
    await _start(call, caller)
    executor.processes[0].finish(0)
    await call("job_output", {"job_id": "bash-1"}, caller)
    executor.processes[1].finish(0)
    assert (await notices.next())[0] == "bash-2"
    assert notices.seen == ["bash-2"]


async def test_an_async_listener_is_awaited_and_a_raising_one_does_not_stop_others(
    call: Any, executor: Any, jobs: JobRegistry, caller: Any, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(job: Any, notice: str) -> None:
        raise RuntimeError("listener broke")

    notices = Notices()

    async def relay(job: Any, notice: str) -> None:
        notices(job, notice)

    jobs.on_finished(broken)
    jobs.on_finished(relay)
    await _start(call, caller)
    executor.processes[0].finish(3)
    assert (await notices.next())[0] == "bash-1"
    assert "listener broke" in caplog.text


async def test_a_disposed_listener_is_not_called(
    call: Any, executor: Any, jobs: JobRegistry, caller: Any
) -> None:
    removed, kept = Notices(), Notices()
    jobs.on_finished(removed).dispose()
    jobs.on_finished(kept)
    await _start(call, caller)
    executor.processes[0].finish(0)
    await kept.next()
    assert removed.seen == []


async def test_disposing_the_owner_sends_no_notice(
    call: Any, executor: Any, jobs: JobRegistry, caller: Any, other_caller: Any
) -> None:
    notices = Notices()
    jobs.on_finished(notices)
    await _start(call, caller)
    await _start(call, other_caller)
    await jobs.dispose_owner("session-a")
    executor.processes[1].finish(0)
    assert (await notices.next())[0] == "bash-2"
    assert notices.seen == ["bash-2"]


async def test_a_listener_may_dispose_the_owner_of_the_finished_job(
    call: Any, executor: Any, jobs: JobRegistry, caller: Any
) -> None:
    disposed: list[list[str]] = []

    async def close_owner(job: Any, notice: str) -> None:
        disposed.append(await jobs.dispose_owner(job.owner))

    notices = Notices()
    jobs.on_finished(close_owner)
    jobs.on_finished(notices)
    await _start(call, caller)
    executor.processes[0].finish(0)
    await notices.next()
    assert disposed == [["bash-1"]]
