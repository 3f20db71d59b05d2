"""``todo_write`` through the real agent loop over the real JSONL backend: a scripted model's
calls append ``todo/write`` inside the call (between ``tool/call`` and ``tool/result``, inside
the open turn) with the invariant companion on; the file holds exactly the session's events;
a resume in a fresh loop folds the standing plan back, the next turn clears it; ``dsh sessions
verify`` passes and every line is in the TypeScript harness's terms."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh_agent import AgentOptions
from dsh_agent_loop import AgentLoop
from dsh_llm.testing import ScriptedModel, text_response, tool_call_response
from dsh_persistence_jsonl import JsonlPersistence
from dsh_session import CORE_EVENT_TYPES, PLUGIN_EVENT_TYPES, encode_event, message_parts
from dsh_tool_todo import TodoItem, TodoWriteTool, standing_plan
from dsh_tools import ToolRegistry

DSH = Path(sys.executable).parent / "dsh"
OPTIONS = AgentOptions(provider="scripted", model="demo")
FIRST = [
    {"content": "Read the failing test", "status": "in_progress"},
    {"content": "Fix the parser", "status": "pending"},
]
SECOND = [
    {"content": "Read the failing test", "status": "completed"},
    {"content": "Fix the parser", "status": "in_progress"},
]


def _call(call_id: str, todos: list[dict[str, str]]) -> Any:
    return tool_call_response((call_id, "todo_write", json.dumps({"todos": todos})))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "dsh-home"
    folder.mkdir()
    return folder


def _loop(home: Path, model: ScriptedModel) -> tuple[AgentLoop, JsonlPersistence]:
    tools = ToolRegistry()
    tools.register(TodoWriteTool(allow_parallel_in_progress=False))
    persistence = JsonlPersistence(home / "sessions-plain", compression="none")
    loop = AgentLoop(model, tools, persistence=persistence, check_requests=True)
    return loop, persistence


async def test_todo_write_through_the_loop_on_disk_resume_and_verify(
    home: Path, tmp_path: Path
) -> None:
    model = ScriptedModel(
        [_call("c1", FIRST), _call("c2", SECOND), text_response("Fixing the parser now.")]
    )
    loop, persistence = _loop(home, model)
    try:
        agent = await loop.create(options=OPTIONS, cwd=str(tmp_path))
        agent.followup("Fix the parser")
        await agent.wait_idle()
        events = list(agent.session.events)
        session_id = agent.id
        log_path = persistence.log_path(agent.session.header)
        await agent.aclose()
    finally:
        await loop.aclose()
        await persistence.aclose()
    assert loop.invariant_failures == []

    kinds = [e.type for e in events if e.type != "assistant/chunk"]
    assert kinds.count("todo/write") == 2
    for event in events:
        if event.type == "todo/write":
            before, after = events[event.seq - 1], events[event.seq + 1]
            assert (before.type, after.type) == ("tool/call", "tool/result")
            parts = message_parts("tool/result", after.data)
            assert parts is not None
            assert not parts.is_error
    turn_start = next(e.seq for e in events if e.type == "turn/start")
    turn_end = next(e.seq for e in events if e.type == "turn/end")
    writes = [e for e in events if e.type == "todo/write"]
    assert all(turn_start < w.seq < turn_end for w in writes)  # inside the open turn
    # the model saw its calls and the results, never the event
    sent = json.dumps([m.to_wire() for m in model.requests[-1].messages])
    assert "Task list updated: 2 tasks (1 completed, 1 in progress, 0 pending)." in sent
    assert "todo/write" not in sent

    # on disk: exactly the session's events; each todo/write line in the TypeScript shape
    lines = log_path.read_bytes().splitlines()[1:]
    assert lines == [encode_event(e) for e in events]
    written = [json.loads(line) for line in lines if b'"type":"todo/write"' in line]
    assert [w["data"] for w in written] == [{"todos": FIRST}, {"todos": SECOND}]
    assert all(list(w) == ["type", "seq", "time", "data"] for w in written)
    assert {json.loads(line)["type"] for line in lines} <= CORE_EVENT_TYPES | PLUGIN_EVENT_TYPES

    # resume in a fresh loop: the standing plan folds back; the next turn clears it
    model = ScriptedModel([text_response("Done.")])
    loop, persistence = _loop(home, model)
    try:
        resumed = await loop.resume(session_id, options=OPTIONS)
        assert standing_plan(resumed.session.events) == [TodoItem.model_validate(t) for t in SECOND]
        resumed.followup("Anything else?")
        await resumed.wait_idle()
        assert standing_plan(resumed.session.events) is None
        await resumed.aclose()
    finally:
        await loop.aclose()
        await persistence.aclose()
    assert loop.invariant_failures == []

    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "DSH_HOME": str(home),
        "LANG": "C.UTF-8",
    }
    verify = await asyncio.create_subprocess_exec(
        str(DSH), "sessions", "verify", session_id, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    async with asyncio.timeout(120):
        out, err = await verify.communicate()
    assert verify.returncode == 0, (out + err).decode()
    assert "1 ok, 0 damaged" in err.decode()
