"""Child process of test_agent_loop_jsonl.py: one agent over JSONL persistence, until it dies.

argv: ``root session_id mode``. The child creates session ``session_id`` under ``root`` (see
``open_store``) with the default checkpoints, sends one followup, and reports on stdout, one
line each, flushed at once. Modes:

- ``block``: the model calls ``block`` (call ``c1``), whose body says ``TOOL_RUNNING`` and then
  waits forever. The body runs after the ``before-tool`` checkpoint, so the ``tool/call`` is
  durable by the time the line is written; the parent SIGKILLs the child.
- ``hang-model``: the model says ``MODEL_CALLED`` when the request reaches it and then never
  answers (the ``before-request`` checkpoint has flushed everything logged before it); the
  parent SIGKILLs the child.
- ``kill-before-call``: the model calls ``quick`` (``c1``) then ``block`` (``c2``) in one
  answer. The checkpoint policy SIGKILLs the process itself at ``c2``'s ``before-tool``
  checkpoint: ``c2``'s ``tool/call`` has just committed in memory and nothing has appended it
  (the call is logged and its checkpoint entered with no await in between), while ``c1``'s
  ``before-tool`` flush made the ``assistant/message`` naming both calls durable. The line
  ``KILLING`` comes first.

The parent imports this module for ``open_store``, ``tool_registry``, ``OPTIONS`` and the
script pieces, so both sides agree on names.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from pydantic import BaseModel

from dsh_agent import Agent, AgentOptions, CheckpointPoint, Flush
from dsh_agent_loop import AgentLoop, FlushPolicy
from dsh_llm import ModelRequest, StreamChunk
from dsh_llm.testing import ScriptedModel, tool_call_response
from dsh_persistence_jsonl import JsonlPersistence
from dsh_tools import ToolDefinition, ToolExecution, ToolRegistry

MODES = ("block", "hang-model", "kill-before-call")
OPTIONS = AgentOptions(provider="scripted", model="demo")
SYSTEM = "You are a test agent."
PROMPT = "run the tools"


def open_store(root: Path) -> JsonlPersistence:
    """A fresh JSONL instance over the sessions kept under ``root``."""
    return JsonlPersistence(root / "sessions", compression="none")


def cwd_of(root: Path) -> str:
    """The session cwd every test uses (it names the project directory of the log)."""
    return str(root / "project")


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class NoArgs(BaseModel):
    pass


class BlockTool(ToolDefinition[NoArgs]):
    """Says ``TOOL_RUNNING`` and then waits forever (in the child); not called by the parent."""

    name = "block"
    description = "Wait forever."
    parameters = NoArgs

    async def execute(self, args: NoArgs, execution: ToolExecution) -> str:
        say("TOOL_RUNNING")
        await asyncio.Event().wait()
        return "unreachable"


class QuickTool(ToolDefinition[NoArgs]):
    """Answers ``done`` at once."""

    name = "quick"
    description = "Answer at once."
    parameters = NoArgs

    async def execute(self, args: NoArgs, execution: ToolExecution) -> str:
        return "done"


def tool_registry() -> ToolRegistry:
    tools = ToolRegistry()
    tools.register(BlockTool())
    tools.register(QuickTool())
    return tools


async def _hang(request: ModelRequest) -> AsyncIterator[StreamChunk]:
    say("MODEL_CALLED")
    await asyncio.Event().wait()
    yield tool_call_response(("never", "quick", {}))[0]  # pragma: no cover - never reached


class KillAtSecondCall:
    """The default checkpoints, but the ``before-tool`` checkpoint of call ``c2`` kills the
    process (SIGKILL, no flush)."""

    def __init__(self) -> None:
        self._flush = FlushPolicy()

    async def checkpoint(self, point: CheckpointPoint, agent: Agent, flush: Flush) -> None:
        if point == "before-tool":
            last = agent.session.events[-1]
            if last.type == "tool/call" and last.to_wire()["data"]["callId"] == "c2":
                say("KILLING")
                os.kill(os.getpid(), signal.SIGKILL)
        await self._flush.checkpoint(point, agent, flush)


async def main(root: Path, session_id: str, mode: str) -> None:
    if mode == "block":
        model = ScriptedModel([tool_call_response(("c1", "block", {}))])
        policy = None
    elif mode == "hang-model":
        model = ScriptedModel([_hang])
        policy = None
    elif mode == "kill-before-call":
        model = ScriptedModel([tool_call_response(("c1", "quick", {}), ("c2", "block", {}))])
        policy = KillAtSecondCall()
    else:
        raise SystemExit(f"unknown mode {mode!r}; one of {MODES}")
    loop = AgentLoop(
        model, tool_registry(), persistence=open_store(root), checkpoints=policy,
        check_requests=True,
    )  # fmt: skip
    agent = await loop.create(session_id, options=OPTIONS, cwd=cwd_of(root), system=SYSTEM)
    say("READY")
    agent.followup(PROMPT)
    await agent.wait_idle()
    # Only a bug gets here: every mode ends with the parent's (or its own) SIGKILL.
    say(f"IDLE {loop.invariant_failures!r}")
    await loop.aclose()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2], sys.argv[3]))
