"""A search ends within its time budget and stops when cancelled, whatever the pattern: the
Python work of a search runs in a worker process that is killed, so the harness's event loop
keeps running while a catastrophic regular expression, glob or ignore line is matched."""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from dsh_shell import SandboxPolicy
from dsh_tool_fs import FileTools
from dsh_tools import ToolResult
from support import Caller, Tools, code

SAFETY = 60.0
"""Seconds a call may take before the test calls it hung: a safety net, not a speed bar."""
BUDGET = 1.0
"""The small budget the timed-out searches run under (their patterns would take years)."""

CATASTROPHIC = "(a+)+$"
LINE = "a" * 40 + "!\n"  # (a+)+$ backtracks 2**40 ways at each start before failing
GLOB = "*a*a*a*a*a*a*a*a*a*a*a*a*b"  # a gitignore-style glob that backtracks as badly
NAME = "a" * 100 + ".txt"


def tools(
    work: Path,
    *,
    rg: str | None = None,
    sandbox: SandboxPolicy | None = None,
    budget: float = BUDGET,
) -> Tools:
    return Tools(FileTools(sandbox, ripgrep=rg, search_budget=budget), Caller.at(work))


async def ticking(call: Awaitable[ToolResult]) -> tuple[ToolResult, int]:
    """``call``'s result and how often another coroutine ran meanwhile (the loop is alive)."""
    ticks = 0
    done = False

    async def tick() -> None:
        nonlocal ticks
        while not done:
            ticks += 1
            await asyncio.sleep(0.01)

    ticker = asyncio.create_task(tick())
    try:
        result = await asyncio.wait_for(call, SAFETY)
    finally:
        done = True
        await ticker
    return result, ticks


def workers() -> list[int]:
    """This process's search workers (children running this package's worker)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as status:
                ppid = int(status.read().rsplit(b")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                argv = cmdline.read()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == os.getpid() and b"dsh_tool_fs._worker" in argv:
            found.append(int(entry))
    return found


async def until(condition: Callable[[], object], what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SAFETY
    while not condition():
        assert loop.time() < deadline, f"gave up waiting until {what}"
        await asyncio.sleep(0.01)


def assert_timed_out(result: ToolResult, *named: str) -> None:
    assert code(result) == "SEARCH_TIMEOUT", result.text
    assert f"time budget of {BUDGET:g} s" in result.text
    for name in named:
        assert name in result.text


@pytest.mark.parametrize("mode", ["files_with_matches", "content", "count"])
async def test_a_catastrophic_pattern_under_the_sandbox_ends_at_its_budget(
    tmp_path: Path, mode: str
) -> None:
    (tmp_path / "a.txt").write_text(LINE)
    assert shutil.which("rg")  # present, but a confined grep runs the Python engine
    t = tools(tmp_path, rg="rg", sandbox=SandboxPolicy(mode="workspace-write"))
    result, ticks = await ticking(t.call("grep", pattern=CATASTROPHIC, output_mode=mode))
    assert_timed_out(result, repr(CATASTROPHIC), str(tmp_path))
    assert ticks > 0  # the event loop ran all along
    assert workers() == []


async def test_a_catastrophic_pattern_in_one_named_file_ends_at_its_budget(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.txt").write_text(LINE)
    t = tools(tmp_path)
    result, ticks = await ticking(
        t.call("grep", pattern=CATASTROPHIC, path="a.txt", case_insensitive=True)
    )
    assert_timed_out(result, repr(CATASTROPHIC))
    assert ticks > 0


async def test_cancelling_a_catastrophic_search_kills_its_worker(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(LINE)
    t = tools(tmp_path, budget=3600.0)
    task = asyncio.create_task(t.call("grep", pattern=CATASTROPHIC))
    await until(workers, "the worker runs")
    running = workers()
    task.cancel()
    result, ticks = await ticking(task)
    assert code(result) == "ABORTED"
    assert ticks > 0
    assert workers() == []
    for pid in running:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # killed and reaped


@pytest.mark.parametrize("rg", [None, "rg"])
async def test_a_catastrophic_glob_ends_at_its_budget(tmp_path: Path, rg: str | None) -> None:
    (tmp_path / NAME).write_text("x\n")
    result, ticks = await ticking(tools(tmp_path, rg=rg).call("glob", pattern=GLOB))
    assert_timed_out(result, repr(GLOB))
    assert ticks > 0
    include, _ = await ticking(tools(tmp_path, rg=rg).call("grep", pattern="x", include=GLOB))
    assert_timed_out(include, "'x'")


@pytest.mark.parametrize("rg", [None, "rg"])
async def test_a_hostile_ignore_file_ends_at_its_budget(tmp_path: Path, rg: str | None) -> None:
    (tmp_path / ".gitignore").write_text(GLOB + "\n")
    (tmp_path / NAME).write_text("needle\n")
    t = tools(tmp_path, rg=rg)
    for name, arguments in (("glob", {"pattern": "*"}), ("grep", {"pattern": "needle"})):
        result, ticks = await ticking(t.call(name, **arguments))
        assert_timed_out(result)
        assert ticks > 0


async def test_ripgrep_is_bounded_in_time_too(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / ".ignore")  # ripgrep opens it to read its rules and waits forever
    (tmp_path / "a.txt").write_text("needle\n")
    t = tools(tmp_path, rg="rg")
    for name, arguments in (("grep", {"pattern": "needle"}), ("glob", {"pattern": "*"})):
        result, ticks = await ticking(t.call(name, **arguments))
        assert_timed_out(result)
        assert ticks > 0


async def test_a_ripgrep_past_its_budget_is_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "rg.pid"
    fake = tmp_path / "fake-rg"
    fake.write_text(f'#!/bin/sh\necho $$ > "{pid_file}"\nexec sleep 3600\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    result, _ = await ticking(tools(tmp_path, rg=str(fake)).call("grep", pattern="x"))
    assert_timed_out(result, "'x'")
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


async def test_the_engines_still_agree_through_the_worker(tmp_path: Path) -> None:
    (tmp_path / "b.txt").write_text("alpha\nbeta\n")
    (tmp_path / "c.py").write_text("beta = 1\n")
    results: dict[str | None, list[Any]] = {}
    for rg in (None, "rg"):
        t = tools(tmp_path, rg=rg, budget=SAFETY)
        results[rg] = [
            (await t.call("grep", pattern="beta", output_mode="content")).text,
            (await t.call("glob", pattern="*.{txt,py}")).text,
        ]
    assert results[None] == results["rg"]
    assert "b.txt\n2: beta" in results[None][0]


@pytest.mark.parametrize("budget", [0, -1.0, float("inf"), float("nan"), "60", True])
def test_a_search_budget_is_a_positive_number_of_seconds(budget: Any) -> None:
    with pytest.raises(ValueError, match="search_budget"):
        FileTools(search_budget=budget)
