"""`echo hi` through LocalBashExecutor (resolve + run) vs raw asyncio subprocesses, same run.

The raw baseline is `asyncio.create_subprocess_exec("bash", "-c", ...)` with stdout/stderr
pipes and `communicate()`. Calls alternate between the two so drift hits both equally.
Reports p50 and p99 per call for each, and the p50 ratio; exits 1 when the ratio is above the
target (1.15x raw).

Run: ``python -m nox -s bench -- shell`` (or ``python bench/bench_shell_exec.py [N]``).
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dsh_bash_local import LocalBashExecutor
from dsh_shell import ShellExecRequest

COMMAND = "echo hi"
CALLS = 200
WARMUP = 20
TARGET = 1.15


async def _raw(workdir: Path) -> float:
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        COMMAND,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=workdir,
    )
    out, _ = await process.communicate()
    elapsed = time.perf_counter() - started
    assert out == b"hi\n", out
    return elapsed


async def _ours(executor: LocalBashExecutor, workdir: Path) -> float:
    started = time.perf_counter()
    result = await executor.run(executor.resolve(ShellExecRequest(COMMAND, workdir=workdir)))
    elapsed = time.perf_counter() - started
    assert result.stdout.text == "hi\n", result
    return elapsed


def _percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


async def main(calls: int) -> int:
    raw: list[float] = []
    ours: list[float] = []
    with tempfile.TemporaryDirectory() as scratch:
        workdir = Path(scratch)
        async with LocalBashExecutor() as executor:
            for _ in range(WARMUP):
                await _raw(workdir)
                await _ours(executor, workdir)
            for index in range(calls):
                if index % 2:
                    raw.append(await _raw(workdir))
                    ours.append(await _ours(executor, workdir))
                else:
                    ours.append(await _ours(executor, workdir))
                    raw.append(await _raw(workdir))
    ratio = statistics.median(ours) / statistics.median(raw)
    print(f"bench_shell_exec: {calls} calls of {COMMAND!r} each (after {WARMUP} warm-up)")
    for name, samples in (("raw asyncio subprocess", raw), ("LocalBashExecutor", ours)):
        p50, p99 = _percentile(samples, 0.50), _percentile(samples, 0.99)
        print(f"  {name:<24} p50 {p50 * 1e3:7.3f} ms   p99 {p99 * 1e3:7.3f} ms")
    verdict = "ok" if ratio <= TARGET else "MISSED"
    print(f"  ratio (p50 ours / p50 raw): {ratio:.3f}x  target <= {TARGET}x  {verdict}")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else CALLS)))
