"""Clauses: output caps, tails, spill files, decoding, memory, and concurrent isolation."""

from __future__ import annotations

import asyncio
import contextlib
import resource
from pathlib import Path

from dsh_shell.testing._context import (
    ClauseContext,
    ContractViolation,
    expect,
    file_mode_and_size,
    read_text,
)
from dsh_shell.testing._fixture import LIVE_OUTPUT, LOCAL_PROCESSES, SPILL
from dsh_shell.testing._registry import ClauseGroup

group = ClauseGroup()
clause = group.clause

_SEQ = "seq 1 20000; echo END"
_SEQ_TEXT = "".join(f"{n}\n" for n in range(1, 20001)) + "END\n"
_GIB = 1024**3
_RSS_BUDGET = 100 * 1024 * 1024


@clause()
async def small_output_is_not_truncated(ctx: ClauseContext) -> None:
    """Output under the cap is returned whole, not truncated, without a spill file."""
    result = await ctx.run("echo hi")
    got = (result.stdout.text, result.stdout.truncated, result.stdout.spill_path)
    expect(got == ("hi\n", False, None), f"stdout {got}")


@clause()
async def output_over_the_cap_keeps_the_tail(ctx: ClauseContext) -> None:
    """Stdout over stdout_max_bytes keeps its last bytes (within the cap) and says truncated."""
    result = await ctx.run(_SEQ, stdout_max_bytes=1000)
    text = result.stdout.text
    expect(result.stdout.truncated, "over-cap output was not marked truncated")
    expect(text.endswith("19999\n20000\nEND\n"), f"the tail was not kept: {text[-40:]!r}")
    expect(len(text.encode()) <= 1000, f"{len(text.encode())} bytes kept over a 1000-byte cap")


@clause(SPILL)
async def truncated_output_is_spilled_to_a_private_file(ctx: ClauseContext) -> None:
    """A truncated stream's complete text is in a spill file readable only by its owner."""
    result = await ctx.run(_SEQ, stdout_max_bytes=1000)
    path = result.stdout.spill_path
    expect(path is not None, "a truncated stream has no spill_path")
    assert path is not None
    mode, _ = file_mode_and_size(Path(path))
    expect(mode == 0o600, f"spill file mode is {oct(mode)}, not 0o600")
    expect(read_text(Path(path)) == _SEQ_TEXT, "the spill file does not hold the whole stream")


@clause(SPILL)
async def spill_is_bounded_by_the_spill_cap(ctx: ClauseContext) -> None:
    """A stream of exactly the spill cap is spilled whole; a larger one names no spill file.

    The seam: ``spill_path`` names a file holding the complete stream, absent when the stream
    outgrew the spill cap; so a path for an over-cap stream would hold more than the cap.
    """
    cap = ctx.fixture.spill_cap_bytes
    at_cap = await ctx.run(f"head -c {cap} /dev/zero", stdout_max_bytes=1000, timeout=600)
    expect(at_cap.stdout.truncated, "over-cap output was not marked truncated")
    path = at_cap.stdout.spill_path
    expect(path is not None, f"a {cap}-byte stream (the spill cap) has no spill file")
    assert path is not None
    _, on_disk = file_mode_and_size(Path(path))
    expect(on_disk == cap, f"the spill file of a {cap}-byte stream holds {on_disk} bytes")
    size = cap + 1024 * 1024
    over = await ctx.run(f"head -c {size} /dev/zero", stdout_max_bytes=1000, timeout=600)
    expect(over.stdout.truncated, "over-cap output was not marked truncated")
    path = over.stdout.spill_path
    if path is not None:
        try:
            facts = f"{file_mode_and_size(Path(path))[1]} bytes on disk"
        except OSError:
            facts = "missing on disk"
        raise ContractViolation(
            f"a {size}-byte stream over the {cap}-byte spill cap names a spill file "
            f"({facts}); it must name none"
        )


@clause()
async def invalid_utf8_is_replaced(ctx: ClauseContext) -> None:
    """Bytes that are not UTF-8 are decoded with U+FFFD, the rest kept."""
    result = await ctx.run(r"printf 'ok\377\376end'")
    expect(result.stdout.text == "ok\ufffd\ufffdend", f"stdout {result.stdout.text!r}")


def _rss_bytes() -> int:
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@clause(LOCAL_PROCESSES)
async def large_output_keeps_memory_bounded(ctx: ClauseContext) -> None:
    """A command printing 1 GiB grows this process's resident memory by less than 100 MB."""
    baseline = _rss_bytes()
    peak = baseline
    done = asyncio.Event()

    async def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _rss_bytes())
            await asyncio.sleep(0.01)

    sampler = asyncio.ensure_future(sample())
    try:
        result = await ctx.run(f"head -c {_GIB} /dev/zero", timeout=600)
    finally:
        done.set()
        await sampler
    peak = max(peak, _rss_bytes())
    expect(result.exit_code == 0 and not result.timed_out, f"the 1 GiB command failed: {result}")
    expect(result.stdout.truncated, "1 GiB of output was not truncated")
    growth = peak - baseline
    expect(growth < _RSS_BUDGET, f"resident memory grew by {growth / 2**20:.0f} MiB")


@clause()
async def concurrent_runs_stay_isolated(ctx: ClauseContext) -> None:
    """Many concurrent runs each see only their own stdin, env and dsh_env."""

    async def one(index: int) -> tuple[int, str]:
        result = await ctx.run(
            'cat; echo "|$CONTRACT_INDEX|$DSH_SESSION_ID"',
            stdin=f"in-{index}\n",
            env={"CONTRACT_INDEX": str(index)},
            dsh_env={"DSH_SESSION_ID": f"session-{index}"},
        )
        return index, result.stdout.text

    outputs = await asyncio.gather(*(one(index) for index in range(16)))
    wrong = [(i, out) for i, out in outputs if out != f"in-{i}\n|{i}|session-{i}\n"]
    expect(not wrong, f"runs saw each other's input or environment: {wrong[:3]}")


class _Heard:
    """What an ``on_output`` listener was told, per stream, in order."""

    def __init__(self) -> None:
        self.pieces: list[tuple[str, str]] = []

    def __call__(self, stream: str, text: str) -> None:
        self.pieces.append((stream, text))

    def text(self, stream: str) -> str:
        return "".join(text for name, text in self.pieces if name == stream)


@clause(LIVE_OUTPUT)
async def live_output_arrives_while_the_command_runs(ctx: ClauseContext) -> None:
    """``on_output`` hears a line before the command ends: the command waits for a file that
    only the listener creates on hearing that line, so it cannot finish first."""
    flag = ctx.scratch / "heard-the-first-line"
    heard = _Heard()

    def listener(stream: str, text: str) -> None:
        heard(stream, text)
        if "first-line" in heard.text("stdout"):
            flag.touch()

    waits = int(ctx.safety_net * 20)
    command = (
        "echo first-line; i=0; "
        f'while [ ! -e "{flag}" ] && [ "$i" -lt {waits} ]; do sleep 0.05; i=$((i+1)); done; '
        f'if [ -e "{flag}" ]; then echo heard; else echo unheard; fi'
    )
    result = await ctx.run(command, on_output=listener)
    expect(
        result.stdout.text == "first-line\nheard\n",
        f"the command ended with {result.stdout.text!r}: on_output was not told "
        f"'first-line' while it ran (pieces heard: {heard.pieces[:5]!r})",
    )


@clause(LIVE_OUTPUT)
async def live_output_joins_to_the_result(ctx: ClauseContext) -> None:
    """The pieces of each stream, joined, equal the result's text: stdout and stderr kept
    apart, a UTF-8 character split between writes delivered whole."""
    heard = _Heard()
    command = (
        "printf 'caf\\303'; sleep 0.05; printf '\\251 ok\\n'; echo warn >&2; seq 1 2000; echo done"
    )
    result = await ctx.run(command, on_output=heard)
    got = (heard.text("stdout"), heard.text("stderr"))
    want = (result.stdout.text, result.stderr.text)
    expect(
        got == want,
        f"on_output joined to {got[0][:40]!r}…/{got[1]!r}, result {want[0][:40]!r}…/{want[1]!r}",
    )
    expect(want[0].startswith("café ok\n"), f"stdout begins {want[0][:12]!r}")
    names = {name for name, _ in heard.pieces}
    expect(names <= {"stdout", "stderr"}, f"unknown stream names {sorted(names)}")


@clause(LIVE_OUTPUT)
async def a_failing_listener_does_not_stop_the_command(ctx: ClauseContext) -> None:
    """An ``on_output`` that raises is ignored: the command runs to its end and its output is
    all in the result."""

    def listener(stream: str, text: str) -> None:
        raise RuntimeError("a broken display")

    result = await ctx.run("echo one; echo two", on_output=listener)
    got = (result.exit_code, result.stdout.text)
    expect(got == (0, "one\ntwo\n"), f"a raising listener gave {got}")
