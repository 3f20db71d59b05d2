"""Sandboxed `echo hi` through SandboxExecutor(LocalBashExecutor) vs raw bwrap, same run.

The raw baseline is `asyncio.create_subprocess_exec` of the very argv the executor builds
(`bwrap_argv`: `/` read-only, `/dev`, `/proc`, the workspace and `$TMPDIR` bound, every
namespace unshared, `--die-with-parent --new-session --cap-drop ALL`, the same seccomp filter
file on `--seccomp`, opened per call as the executor's shell opens it) with stdout/stderr pipes
and `communicate()`: the namespaces cost the same on both sides, so the ratio is what our
wrapper adds (resolve, the policy, the inner executor, its `bash -c` around bwrap). Calls
alternate between the sides so drift hits both equally. Reports p50 and p99 per call, the p50
ratio (bar: <= 1.3x raw) and, as information, the plain LocalBashExecutor's p50 (no sandbox):
the setup cost of confinement. The workspace holds every protected name (`.git`, `.dsh`,
`.claude`, `.codex`), so both sides mount the same; in a workspace without them the executor
also holds a read-only placeholder for each missing one, whose cost is reported as information
too. As information too: the probe's cost (``bwrap --version`` and
the canary that proves confinement, paid once per process) next to one raw bwrap call.

Run: ``python -m nox -s bench -- sandbox`` (or ``python bench/bench_sandbox.py [N]``).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dsh_bash_local import LocalBashExecutor
from dsh_bash_sandbox import (
    SandboxExecutor,
    bwrap_argv,
    clear_probe_cache,
    probe_sandbox,
    seccomp_filter,
)
from dsh_shell import DEFAULT_PROTECTED_NAMES, SandboxPolicy, ShellExecRequest

COMMAND = "echo hi"
PROBES = 10
CALLS = 200
WARMUP = 20
TARGET = 1.3


async def _raw(argv: list[str], workdir: Path, rules: Path | None) -> float:
    started = time.perf_counter()
    fd = os.open(rules, os.O_RDONLY) if rules is not None else None
    try:
        process = await asyncio.create_subprocess_exec(
            *(a if a != "{fd}" else str(fd) for a in argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=workdir,
            pass_fds=() if fd is None else (fd,),
        )
    finally:
        if fd is not None:
            os.close(fd)
    out, err = await process.communicate()
    elapsed = time.perf_counter() - started
    assert out == b"hi\n", (out, err)
    return elapsed


async def _ours(executor: SandboxExecutor | LocalBashExecutor, workdir: Path) -> float:
    started = time.perf_counter()
    result = await executor.run(executor.resolve(ShellExecRequest(COMMAND, workdir=workdir)))
    elapsed = time.perf_counter() - started
    assert result.stdout.text == "hi\n", result
    return elapsed


def _percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


async def main(calls: int, workdir: Path) -> int:
    probe = probe_sandbox()
    if not probe.available:
        print(f"bench_sandbox: sandbox unavailable: {probe.cause}; fix: {probe.fix}")
        return 1
    raw: list[float] = []
    ours: list[float] = []
    local: list[float] = []
    async with (
        SandboxExecutor(LocalBashExecutor()) as sandbox,
        LocalBashExecutor() as plain,
    ):
        for name in DEFAULT_PROTECTED_NAMES:  # as in a project: the same mounts on both sides
            (workdir / name).mkdir(exist_ok=True)
        spec = sandbox.resolve(ShellExecRequest(COMMAND, workdir=workdir))
        assert spec.sandbox is not None
        policy = SandboxPolicy(
            workspace=spec.sandbox.workspace, temp_dir=sandbox.temp_dir_for(spec)
        )
        filter_bytes = seccomp_filter()  # the filter the executor hands bwrap, as a file
        rules = workdir / "filter.bpf" if filter_bytes is not None else None
        if rules is not None and filter_bytes is not None:
            rules.write_bytes(filter_bytes)
        argv = bwrap_argv(policy, workdir=workdir, command=COMMAND, bwrap=probe.path or "bwrap")
        if rules is not None:  # the same --seccomp, on whatever descriptor the raw side opens
            argv[13:13] = ["--seccomp", "{fd}"]
        for _ in range(WARMUP):
            await _raw(argv, workdir, rules)
            await _ours(sandbox, workdir)
            await _ours(plain, workdir)
        for index in range(calls):
            if index % 2:
                raw.append(await _raw(argv, workdir, rules))
                ours.append(await _ours(sandbox, workdir))
            else:
                ours.append(await _ours(sandbox, workdir))
                raw.append(await _raw(argv, workdir, rules))
            local.append(await _ours(plain, workdir))
        bare = workdir / "bare"  # a workspace with none of the protected names
        bare.mkdir()
        placeholders = [await _ours(sandbox, bare) for _ in range(max(calls // 4, 10))]
    ratio = statistics.median(ours) / statistics.median(raw)
    print(
        f"bench_sandbox: {calls} calls of {COMMAND!r} each (after {WARMUP} warm-up), "
        f"{probe.version}"
    )
    rows = (
        ("raw bwrap (same flags)", raw),
        ("SandboxExecutor(local)", ours),
        ("LocalBashExecutor alone", local),
    )
    for name, samples in rows:
        p50, p99 = _percentile(samples, 0.50), _percentile(samples, 0.99)
        print(f"  {name:<24} p50 {p50 * 1e3:7.3f} ms   p99 {p99 * 1e3:7.3f} ms")
    verdict = "ok" if ratio <= TARGET else "MISSED"
    print(f"  ratio (p50 ours / p50 raw bwrap): {ratio:.3f}x  target <= {TARGET}x  {verdict}")
    setup = statistics.median(ours) - statistics.median(local)
    print(
        f"  information: confinement over the plain local executor: +{setup * 1e3:.3f} ms p50 "
        f"({statistics.median(ours) / statistics.median(local):.2f}x)"
    )
    extra = statistics.median(placeholders) - statistics.median(ours)
    print(
        f"  information: in a workspace without the {len(DEFAULT_PROTECTED_NAMES)} protected "
        f"names (placeholders held and mounted): p50 {statistics.median(placeholders) * 1e3:.3f}"
        f" ms ({extra * 1e3:+.3f} ms)"
    )
    probes: list[float] = []
    for _ in range(PROBES):  # what a process pays once, before its first confined command
        clear_probe_cache()
        started = time.perf_counter()
        assert probe_sandbox().available
        probes.append(time.perf_counter() - started)
    print(
        f"  information: the probe (--version and the canary, once per process): "
        f"p50 {statistics.median(probes) * 1e3:.3f} ms = "
        f"{statistics.median(probes) / statistics.median(raw):.2f}x one raw bwrap call"
    )
    return 0 if ratio <= TARGET else 1


def run(calls: int) -> int:
    """Run in a fresh scratch workspace; the exit status says whether the bar was met."""
    with tempfile.TemporaryDirectory() as scratch:
        return asyncio.run(main(calls, Path(os.path.realpath(scratch))))


if __name__ == "__main__":
    raise SystemExit(run(int(sys.argv[1]) if len(sys.argv) > 1 else CALLS))
