"""Compaction's cost: the meter per step stays flat as the log grows, and mounting the Compactor
below its threshold costs the loop little.

1. **Meter flatness.** A session of 2,000 tool steps (step/start, a prompt, request/header once,
   an answer with usage and a tool call, the call and its result, step/end) is built step by
   step; after each step we time one ``TokenMeter.measure`` (which folds that step's events) and
   one pressure check (``Compactor.compact_if_needed`` below the threshold: route, policy,
   window, measure, bracket fold). Each of ``ROUNDS`` rounds builds its own session and each step
   keeps its fastest round. Bar: the mean of the last 10% of steps within 1.5x of the first 10%.
2. **Loop overhead.** The same scripted conversation (a model answering at once, no tools, no
   persistence: the cheapest step there is) run through two ``AgentLoop``s in one round, one
   with a Compactor mounted (a window so large it never compacts); the two agents take turns,
   which goes first alternating, and each one-step turn is timed alone, so both sides see the
   same host at the same moment. Bar: median per-step time with / without <= 1.2x.

Run: ``python -m nox -s bench -- compaction`` (or ``python bench/bench_compaction.py``).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from typing import Any

from dsh_agent import AgentOptions, Extensions
from dsh_agent_loop import AgentLoop
from dsh_compaction import CompactionConfig, Compactor, TokenMeter
from dsh_llm import ModelRequest
from dsh_llm.testing import ScriptedModel, text_response
from dsh_session import Session, SessionHeader

STEPS = 2_000
ROUNDS = 5
FLAT_BAR = 1.5
LOOP_TURNS = 150
LOOP_ROUNDS = 11
LOOP_BAR = 1.2
OPTIONS = AgentOptions(provider="scripted", model="m")


class _Agent:
    """What the pressure check reads of an agent."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.id = session.id
        self.options = OPTIONS
        self.status = "running"


def _step(session: Session, step: int) -> None:
    text = f"step {step}: " + "lorem ipsum " * 20
    session.append("step/start", {"turn": 1, "step": step})
    session.append(
        "user/message", {"content": [{"type": "text", "text": text}], "source": {"kind": "user"}}
    )
    if step == 1:
        tools = [{"name": "bash", "description": "run", "parameters": {"type": "object"}}]
        header = {
            "config": {"provider": "scripted", "model": "m"},
            "system": "Be brief.",
            "tools": tools,
        }
        session.append("request/header", {"header": header, "reason": "initial"})
    call = {"type": "tool-call", "id": f"c{step}", "name": "bash", "arguments": '{"command":"ls"}'}
    chunk = session.append(
        "assistant/chunk",
        {"turn": 1, "step": step, "chunk": {"type": "block-end", "index": 0, "block": call}},
    )
    session.append(
        "assistant/message",
        {
            "turn": 1,
            "step": step,
            "content": [call],
            "provenance": {"provider": "scripted", "model": "m"},
            "usage": {"inputTokens": 100 * step, "outputTokens": 10},
        },
        source_event_seqs=[chunk.seq],
    )
    tool_call = session.append(
        "tool/call",
        {"turn": 1, "step": step, "callId": f"c{step}", "name": "bash", "arguments": "{}"},
    )
    session.append(
        "tool/result",
        {
            "turn": 1,
            "step": step,
            "callId": f"c{step}",
            "content": [{"type": "text", "text": "file.txt\n" * 5}],
            "isError": False,
        },
        source_event_seqs=[tool_call.seq],
    )
    session.append("step/end", {"turn": 1, "step": step})


async def _meter_round() -> tuple[list[float], list[float]]:
    session = Session(SessionHeader(id="bench", created_at=0))
    session.append("turn/start", {"turn": 1})
    meter = TokenMeter()
    model = ScriptedModel(context_window=10**12)
    compactor = Compactor(model, CompactionConfig(), meter=TokenMeter())
    agent: Any = _Agent(session)
    measures: list[float] = []
    checks: list[float] = []
    for step in range(1, STEPS + 1):
        _step(session, step)
        started = time.perf_counter()
        meter.measure(session)
        measures.append(time.perf_counter() - started)
        started = time.perf_counter()
        result = await compactor.compact_if_needed(agent)
        checks.append(time.perf_counter() - started)
        assert result is None
    return measures, checks


def _flatness(rounds: list[list[float]]) -> tuple[float, float, float]:
    per_step = [min(samples) for samples in zip(*rounds, strict=True)]
    tenth = len(per_step) // 10
    first, last = statistics.mean(per_step[:tenth]), statistics.mean(per_step[-tenth:])
    return first, last, last / first


def _answer(request: ModelRequest) -> Any:
    return text_response("fine")


async def _loop_round() -> tuple[list[float], list[float]]:
    """One round: two agents, one loop without and one with a Compactor, taking turns (which
    goes first alternates), each turn timed alone; the per-turn times of both."""
    times: dict[bool, list[float]] = {False: [], True: []}
    loops: dict[bool, AgentLoop] = {}
    agents: dict[bool, Any] = {}
    for mounted in (False, True):
        model = ScriptedModel([_answer] * LOOP_TURNS, context_window=10**12)
        extensions = Extensions()
        if mounted:
            Compactor(model, CompactionConfig()).install(extensions)
        loops[mounted] = AgentLoop(model, extensions=extensions)
        agents[mounted] = await loops[mounted].create(f"bench-{mounted}", options=OPTIONS)
    for turn in range(LOOP_TURNS):
        for mounted in (False, True) if turn % 2 else (True, False):
            agent = agents[mounted]
            started = time.perf_counter()
            agent.followup(f"turn {turn}: " + "words " * 30)
            await agent.wait_idle()
            times[mounted].append(time.perf_counter() - started)
    for mounted, loop in loops.items():
        assert "compaction/start" not in {e.type for e in agents[mounted].session.events}
        await loop.aclose()
    return times[False], times[True]


async def main() -> int:
    measures: list[list[float]] = []
    checks: list[list[float]] = []
    for _ in range(ROUNDS):
        measure, check = await _meter_round()
        measures.append(measure)
        checks.append(check)
    print(f"bench_compaction: {STEPS} tool steps, fastest of {ROUNDS} rounds per step")
    ok = True
    for name, rounds in (("TokenMeter.measure", measures), ("pressure check", checks)):
        first, last = _flatness(rounds)[:2]
        ratio = last / first
        verdict = "ok" if ratio <= FLAT_BAR else "MISSED"
        ok = ok and ratio <= FLAT_BAR
        print(
            f"  {name:<20} first 10% {first * 1e6:7.2f} us   last 10% {last * 1e6:7.2f} us   "
            f"ratio {ratio:.3f}x  target <= {FLAT_BAR}x  {verdict}"
        )
    without: list[float] = []
    with_compactor: list[float] = []
    await _loop_round()  # warm-up
    for _ in range(LOOP_ROUNDS):
        plain, mounted = await _loop_round()
        without.extend(plain)
        with_compactor.extend(mounted)
    base, mounted_time = statistics.median(without), statistics.median(with_compactor)
    ratio = mounted_time / base
    verdict = "ok" if ratio <= LOOP_BAR else "MISSED"
    ok = ok and ratio <= LOOP_BAR
    print(
        f"  loop per step (median of {LOOP_TURNS} turns x {LOOP_ROUNDS} rounds): without "
        f"{base * 1e3:.3f} ms   with Compactor {mounted_time * 1e3:.3f} ms   "
        f"ratio {ratio:.3f}x  target <= {LOOP_BAR}x  {verdict}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) > 1:
        STEPS = int(sys.argv[1])
    raise SystemExit(asyncio.run(main()))
