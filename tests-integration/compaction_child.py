"""Child process of test_compaction_loop.py: an agent over JSONL that dies mid-compaction.

argv: ``root session_id mode``. The child creates session ``session_id`` under ``root`` (see
``open_store``) with a ``Compactor`` mounted, runs one turn with a prompt worth more than 80% of
the model's window, and then starts a compaction whose summary call never answers. The summary
call first flushes the agent, so the ``compaction/start`` is durable, then says
``SUMMARY_CALLED`` (one line on stdout, flushed at once) and waits forever; the parent SIGKILLs
the child. Modes:

- ``manual``: the compaction is ``compact_now`` under ``maintenance()`` (an owner-less bracket);
- ``pressure``: a second followup; the compaction is the pressure trigger before its first step
  (a bracket owned by turn 2).

The parent imports this module for ``open_store``, ``OPTIONS``, ``SYSTEM``, ``WINDOW`` and
``PROMPT``, so both sides agree on names.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dsh_agent import AgentOptions, Extensions
from dsh_agent_loop import AgentLoop, LoopAgent
from dsh_compaction import CompactionConfig, Compactor, Summary, SummaryRequest
from dsh_llm import Model
from dsh_llm.testing import ScriptedModel, text_response
from dsh_persistence_jsonl import JsonlPersistence

MODES = ("manual", "pressure")
OPTIONS = AgentOptions(provider="scripted", model="demo")
SYSTEM = "You are a test agent."
WINDOW = 1024
PROMPT = "hello " * 600  # 920 tokens with its answer: past 80% of WINDOW


def open_store(root: Path) -> JsonlPersistence:
    """A fresh JSONL instance over the sessions kept under ``root``."""
    return JsonlPersistence(root / "sessions", compression="none")


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def main(root: Path, session_id: str, mode: str) -> None:
    if mode not in MODES:
        raise SystemExit(f"unknown mode {mode!r}; one of {MODES}")
    agent: LoopAgent | None = None

    def hanging(model: Model) -> Callable[[SummaryRequest], Any]:
        async def summarize(request: SummaryRequest) -> Summary:
            assert agent is not None
            await agent.flush()  # the compaction/start is on disk before the process dies
            say("SUMMARY_CALLED")
            await asyncio.Event().wait()
            raise AssertionError("unreachable")  # pragma: no cover - the parent kills first

        return summarize

    model = ScriptedModel([text_response("hi"), text_response("never sent")], context_window=WINDOW)
    extensions = Extensions()
    config = CompactionConfig(retain_tokens=5, auto=mode == "pressure")
    compactor = Compactor(model, config, summarizer=hanging)
    compactor.install(extensions)
    loop = AgentLoop(
        model, persistence=open_store(root), extensions=extensions, check_requests=True
    )
    agent = await loop.create(session_id, options=OPTIONS, system=SYSTEM)
    agent.followup(PROMPT)
    await agent.wait_idle()
    await agent.flush()
    say("READY")
    if mode == "manual":
        async with agent.maintenance():
            await compactor.compact_now(agent)
    else:
        agent.followup("and now?")
        await agent.wait_idle()
    # Only a bug gets here: every mode ends with the parent's SIGKILL.
    say(f"DONE {loop.invariant_failures!r}")
    await loop.aclose()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2], sys.argv[3]))
