"""Workdirs the executor cannot enter raise ShellWorkdirError naming them, never PermissionError.

The permission cases need a process that permission checks apply to: as root, the check runs in
a child with CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH dropped (``setpriv``); the contract clause
``unenterable_workdir_raises_naming_it`` covers the other cases in this process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_PROBE = """
import asyncio, json, sys
from dsh_bash_local import LocalBashExecutor
from dsh_shell import ShellExecRequest
from dsh_shell.testing import ExecutorFixture, validate

async def outcome(executor, workdir):
    try:
        await executor.run(executor.resolve(ShellExecRequest("true", workdir=workdir)))
    except Exception as error:
        return [type(error).__name__, str(error)]
    return ["ran", ""]

async def background(executor, workdir):
    process = executor.start(executor.resolve(ShellExecRequest("true", workdir=workdir)))
    return [await process.wait(), process.read_output().delta]

async def main():
    async with LocalBashExecutor() as executor:
        runs = {w: await outcome(executor, w) for w in sys.argv[1:]}
        started = {w: await background(executor, w) for w in sys.argv[1:]}
    return runs, started

runs, started = asyncio.run(main())
local = frozenset({"local_processes"})
fixture = lambda: ExecutorFixture(capabilities=local, make=LocalBashExecutor)
clause = validate(fixture, only=["unenterable_workdir_raises_naming_it"]).clauses[0]
print(json.dumps({"runs": runs, "started": started, "clause": [clause.status, clause.message]}))
"""


def _without_permission_override() -> list[str]:
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip(
            "running as root without setpriv: no process here is subject to directory "
            "permissions (the clause still covers missing, file and through-a-file workdirs)"
        )
    drop = "-dac_override,-dac_read_search"
    return [setpriv, f"--bounding-set={drop}", f"--inh-caps={drop}"]


@pytest.fixture
def locked(tmp_path: Path) -> Iterator[Path]:
    directory = tmp_path / "locked"
    (directory / "below").mkdir(parents=True)
    directory.chmod(0)
    yield directory
    directory.chmod(0o700)


def test_a_workdir_without_search_permission_raises_workdir_error_naming_it(
    locked: Path,
) -> None:
    workdirs = [str(locked), str(locked / "below")]
    argv = [*_without_permission_override(), sys.executable, "-c", _PROBE, *workdirs]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=True)
    report = json.loads(done.stdout)
    for workdir in workdirs:
        kind, message = report["runs"][workdir]
        assert kind == "ShellWorkdirError", (workdir, kind, message)
        assert workdir in message
        status, delta = report["started"][workdir]
        assert status == "killed"
        assert f"spawn failed: workdir {workdir!r} is unusable" in delta
    assert report["clause"] == ["pass", ""]
