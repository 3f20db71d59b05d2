"""Agent loop benchmark: per-step harness cost against a raw 1 KB write + fsync, and flatness.

Workload: one turn of N tool steps and a final answer. Each of steps 1..N is one model answer
of one text block streamed as a single delta plus one call of a trivial tool (a
``ToolDefinition`` returning a constant); step N+1 answers one text delta and stops. The model
is a ``ScriptedModel`` with no latency (it only yields to the event loop between chunks); its
chunks are built here, since ``text_response`` streams word by word. The loop runs with its
defaults (``FlushPolicy``: flush before every request, before every tool body, at turn end;
the default retry policy; no invariant companion, which rebuilds every request from the log by
design and is a test tool) and either JSONL persistence (``compression="none"``) under a fresh
root or no persistence at all. With persistence each tool step pays two fsyncs (before its
request and before its tool body).

Step time: the gaps between consecutive ``step/start`` events, stamped with
``time.perf_counter_ns`` by a session subscriber; gap k is the whole of step k. Gap 1 is left
out of every figure: it also materializes the session file (publish by ``link`` + directory
fsyncs) and logs the first request header and context, and keeping it would flatter flatness.
The raw baseline, in every round and in the same directory: ``os.write`` of 1,024 bytes +
``os.fsync``, ``RAW_WRITES`` times, median.

Bars:

1. with persistence, N = 50 and 400: mean step time <= 8x the raw write + fsync of the same
   round (the ratio's median over rounds; ranges printed).
2. every configuration: flatness — mean gap of the last 10% of the measured steps <= 1.5x the
   mean gap of the first 10% (median over rounds).

Without persistence the per-step time is also shown as a multiple of the raw fsync, for
information. Each round runs every configuration once, in an order that alternates between
rounds; ``DSH_BENCH_ROUNDS`` rounds (default 5). Prints a table; exits 1 when a bar is missed.
Usage: ``python bench/bench_agent_loop.py`` (or ``python -m nox -s bench -- agent_loop``).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from _report import ROUNDS, report
from dsh_agent import AgentOptions
from dsh_agent_loop import AgentLoop
from dsh_llm import (
    BlockEndChunk,
    BlockStartChunk,
    FinishChunk,
    FinishReason,
    StreamChunk,
    TextBlock,
    TextDeltaChunk,
    ToolCallBlock,
    ToolCallDeltaChunk,
    Usage,
    UsageChunk,
)
from dsh_llm.testing import ScriptedModel
from dsh_persistence_jsonl import JsonlPersistence
from dsh_session import SessionEvent
from dsh_tools import ToolDefinition, ToolExecution, ToolRegistry

STEPS = (50, 400)
RAW_WRITES = 200
STEP_BAR = 8.0
FLAT_BAR = 1.5
OPTIONS = AgentOptions(provider="scripted", model="bench")
TEXT = "I will call the tool once more and look at what it answers before I go on."


class NoArgs(BaseModel):
    pass


class ConstantTool(ToolDefinition[NoArgs]):
    name = "constant"
    description = "Answer a constant."
    parameters = NoArgs

    async def execute(self, args: NoArgs, execution: ToolExecution) -> str:
        return "ok"


def _text(index: int, text: str) -> list[StreamChunk]:
    return [
        BlockStartChunk(index=index, block_type="text"),
        TextDeltaChunk(index=index, text=text),
        BlockEndChunk(index=index, block=TextBlock(text=text)),
    ]


def tool_step(step: int) -> list[StreamChunk]:
    """One text block (one delta) and one call of the constant tool."""
    call = ToolCallBlock(id=f"call_{step:05d}", name="constant", arguments="{}")
    return [
        *_text(0, f"{TEXT} ({step})"),
        BlockStartChunk(index=1, block_type="tool-call"),
        ToolCallDeltaChunk(index=1, id=call.id, name=call.name, arguments_delta=call.arguments),
        BlockEndChunk(index=1, block=call),
        UsageChunk(usage=Usage(input_tokens=100 + step, output_tokens=20)),
        FinishChunk(reason=FinishReason(kind="tool-calls")),
    ]


def final_step() -> list[StreamChunk]:
    return [
        *_text(0, "Done."),
        UsageChunk(usage=Usage(input_tokens=100, output_tokens=2)),
        FinishChunk(reason=FinishReason(kind="stop")),
    ]


def raw_fsync_median(directory: Path) -> float:
    """Median seconds of one ``os.write`` of 1 KB + ``os.fsync`` in ``directory``."""
    path = directory / f"raw-{time.perf_counter_ns()}.bin"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
    payload = b"x" * 1023 + b"\n"
    times: list[float] = []
    clock = time.perf_counter
    try:
        os.write(fd, payload)
        os.fsync(fd)  # the file exists on disk before the timed writes, as a session log does
        for _ in range(RAW_WRITES):
            start = clock()
            os.write(fd, payload)
            os.fsync(fd)
            times.append(clock() - start)
    finally:
        os.close(fd)
        path.unlink()
    return statistics.median(times)


@dataclass
class Run:
    """The step gaps (seconds) of one run, gap 1 left out."""

    gaps: list[float]

    @property
    def window(self) -> int:
        return max(1, len(self.gaps) // 10)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.gaps)

    @property
    def first(self) -> float:
        """Mean gap of the first 10% of the measured steps."""
        return statistics.fmean(self.gaps[: self.window])

    @property
    def last(self) -> float:
        """Mean gap of the last 10% of the measured steps."""
        return statistics.fmean(self.gaps[-self.window :])


async def run_turn(steps: int, root: Path | None) -> Run:
    model = ScriptedModel([*(tool_step(k) for k in range(1, steps + 1)), final_step()])
    tools = ToolRegistry()
    tools.register(ConstantTool())
    persistence = JsonlPersistence(root, compression="none") if root is not None else None
    stamps: list[int] = []
    clock = time.perf_counter_ns

    def on_event(event: SessionEvent) -> None:
        if event.type == "step/start":
            stamps.append(clock())

    async with AgentLoop(model, tools, persistence=persistence) as loop:
        agent = await loop.create("bench", options=OPTIONS, cwd="/home/user/project")
        subscription = agent.session.subscribe(on_event)
        agent.followup("Call the tool until you are done.")
        await agent.wait_idle()
        subscription.close()
        last = agent.session.events[-1].to_wire()["data"]
        if last != {"turn": 1, "reason": {"kind": "completed"}}:
            raise SystemExit(f"the benchmark turn did not complete: {last}")
    if persistence is not None:
        await persistence.aclose()
    if len(stamps) != steps + 1:
        raise SystemExit(f"expected {steps + 1} steps, saw {len(stamps)}")
    gaps = [(b - a) / 1e9 for a, b in itertools.pairwise(stamps)]
    return Run(gaps[1:])


@dataclass
class Figures:
    """Per round: mean step time, its ratio to the round's raw fsync, the first and last 10%."""

    step: list[float] = field(default_factory=list)
    ratio: list[float] = field(default_factory=list)
    first: list[float] = field(default_factory=list)
    last: list[float] = field(default_factory=list)

    @property
    def flat(self) -> list[float]:
        return [last / first for first, last in zip(self.first, self.last, strict=True)]


def spread(values: list[float], unit: str, scale: float = 1.0) -> str:
    """``median (min-max)`` of ``values`` times ``scale``."""
    low, high, middle = (scale * v for v in (min(values), max(values), statistics.median(values)))
    return f"{middle:.2f}{unit} ({low:.2f}-{high:.2f})"


async def main() -> int:
    configs = [(steps, persisted) for steps in STEPS for persisted in (True, False)]
    figures = {config: Figures() for config in configs}
    raws: list[float] = []
    with tempfile.TemporaryDirectory(
        prefix="dsh-bench-agent-loop-", dir=os.environ.get("TMPDIR")
    ) as tmp:
        base = Path(tmp)
        await run_turn(20, base / "warm-up")  # imports, first-call caches: not measured
        await run_turn(20, None)
        for round_number in range(ROUNDS):
            raw = raw_fsync_median(base)
            raws.append(raw)
            order = configs if round_number % 2 == 0 else configs[::-1]
            for steps, persisted in order:
                root = base / f"r{round_number}-n{steps}" if persisted else None
                run = await run_turn(steps, root)
                got = figures[(steps, persisted)]
                got.step.append(run.mean)
                got.ratio.append(run.mean / raw)
                got.first.append(run.first)
                got.last.append(run.last)
    rows: list[tuple[str, str, str, str, bool]] = []
    raw_text = f"raw 1 KB write+fsync {spread(raws, ' ms', 1e3)}"
    for steps, persisted in configs:
        got = figures[(steps, persisted)]
        label = f"N={steps}, {'JSONL, default checkpoints' if persisted else 'no persistence'}"
        ratio = statistics.median(got.ratio)
        rows.append(
            (
                f"{label}: mean step / raw fsync" + ("" if persisted else " (info)"),
                raw_text,
                f"step {spread(got.step, ' ms', 1e3)}",
                f"{spread(got.ratio, 'x')}"
                + (f", bar <= {STEP_BAR:g}" if persisted else ", no bar"),
                ratio <= STEP_BAR or not persisted,
            )
        )
        flat = statistics.median(got.flat)
        rows.append(
            (
                f"{label}: last 10% / first 10% of steps",
                f"first {spread(got.first, ' ms', 1e3)}",
                f"last {spread(got.last, ' ms', 1e3)}",
                f"{spread(got.flat, 'x')}, bar <= {FLAT_BAR:g}",
                flat <= FLAT_BAR,
            )
        )
    return report("bench_agent_loop", rows)


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
