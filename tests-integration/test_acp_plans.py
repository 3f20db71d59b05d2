"""Plans in an editor, driven as an editor drives ``dsh acp`` (the installed console script, the
SDK's client side, the scripted loopback model; helpers from ``test_acp``): the model's
``todo_write`` calls arrive as ACP ``plan`` updates, a later call replaces the plan, the next
turn clears it, and ``session/load`` in a new process shows the plan still standing. Every log
written passes ``dsh sessions verify`` and holds ``todo/write`` as the TypeScript harness
writes it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import acp
from acp.schema import AgentPlanUpdate, ToolCallStart

from test_acp import TIMEOUT, Editor, Project, loopback, server, tool_call

__all__ = ["server"]  # the loopback model fixture, used by name

FIRST = [
    {"content": "Read the failing test", "status": "in_progress"},
    {"content": "Fix the parser", "status": "pending"},
    {"content": "Run the suite", "status": "pending"},
]
SECOND = [
    {"content": "Read the failing test", "status": "completed"},
    {"content": "Fix the parser", "status": "in_progress"},
    {"content": "Run the suite", "status": "pending"},
]


def plans(editor: Editor) -> list[list[tuple[str, str, str]]]:
    """Each plan the editor was sent: its entries as (content, status, priority)."""
    return [
        [(e.content, e.status, e.priority) for e in update.entries]
        for update in editor.of(AgentPlanUpdate)
    ]


def entries(todos: list[dict[str, str]]) -> list[tuple[str, str, str]]:
    return [(t["content"], t["status"], "medium") for t in todos]


def tool_names(body: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in body.get("tools") or []]


async def _prompt(conn: Any, session_id: str, text: str) -> Any:
    async with asyncio.timeout(TIMEOUT):
        return await conn.prompt(session_id=session_id, prompt=[acp.text_block(text)])


async def test_the_models_task_list_is_the_editors_plan_live_and_on_load(
    tmp_path: Path, server: Any
) -> None:
    server.scripts = [
        tool_call("todo_write", {"todos": FIRST}, "call-1"),
        tool_call("todo_write", {"todos": SECOND}, "call-2"),
        loopback.text_answer("Parser fixed; running the suite next."),
    ]
    project = Project(tmp_path, server)
    editor = Editor()
    async with project.acp(editor) as (conn, _process):
        async with asyncio.timeout(TIMEOUT):
            session = await conn.new_session(cwd=str(project.cwd), mcp_servers=[])
        answer = await _prompt(conn, session.session_id, "Fix the parser")
        assert answer.stop_reason == "end_turn"
    # the tool was offered (dsh acp shows plans), and each call's whole list became the plan
    assert "todo_write" in tool_names(server.bodies[0])
    assert plans(editor) == [entries(FIRST), entries(SECOND)]
    starts = {u.tool_call_id: u for u in editor.of(ToolCallStart)}
    assert (starts["call-1"].kind, starts["call-1"].title) == ("think", "Update the plan")
    # the log: todo/write between each call and its result, in the TypeScript harness's shape
    events = project.verified(session.session_id)
    kinds = [e["type"] for e in events]
    writes = [e for e in events if e["type"] == "todo/write"]
    assert [w["data"] for w in writes] == [{"todos": FIRST}, {"todos": SECOND}]
    for write in writes:
        assert set(write) == {"type", "seq", "time", "data"}  # no surfaceOp: not model history
        assert kinds[write["seq"] - 1] == "tool/call"
        assert kinds[write["seq"] + 1] == "tool/result"

    # a new process loads the session: the conversation, then only the standing plan
    server.scripts = [loopback.text_answer("All done.")]
    loaded = Editor()
    async with project.acp(loaded) as (conn, _process):
        async with asyncio.timeout(TIMEOUT):
            await conn.load_session(
                cwd=str(project.cwd), session_id=session.session_id, mcp_servers=[]
            )
        assert plans(loaded) == [entries(SECOND)]
        assert isinstance(loaded.updates[-1][1], AgentPlanUpdate)
        # the next prompt starts a turn: the plan no longer stands, so it is cleared
        answer = await _prompt(conn, session.session_id, "Anything else?")
        assert answer.stop_reason == "end_turn"
        assert plans(loaded) == [entries(SECOND), []]

    # and a later load has no plan to show
    again = Editor()
    async with project.acp(again) as (conn, _process):
        async with asyncio.timeout(TIMEOUT):
            await conn.load_session(
                cwd=str(project.cwd), session_id=session.session_id, mcp_servers=[]
            )
        assert again.text() == "Parser fixed; running the suite next.All done."
        assert plans(again) == []
    project.verified(session.session_id)


async def test_a_refused_list_is_an_error_the_model_reads_and_sends_no_plan(
    tmp_path: Path, server: Any
) -> None:
    both = [
        {"content": "Build", "status": "in_progress"},
        {"content": "Build ", "status": "pending"},
    ]
    server.scripts = [
        tool_call("todo_write", {"todos": both}, "call-1"),
        loopback.text_answer("I will fix the list."),
    ]
    project = Project(tmp_path, server)
    editor = Editor()
    async with project.acp(editor) as (conn, _process):
        async with asyncio.timeout(TIMEOUT):
            session = await conn.new_session(cwd=str(project.cwd), mcp_servers=[])
        await _prompt(conn, session.session_id, "Plan it")
    assert plans(editor) == []
    second_request = str(server.bodies[1]["messages"])
    assert "repeats an earlier task" in second_request
    events = project.verified(session.session_id)
    assert "todo/write" not in [e["type"] for e in events]


async def test_the_config_turns_the_tool_off_in_dsh_acp_too(tmp_path: Path, server: Any) -> None:
    server.scripts = [loopback.text_answer("Hi.")]
    project = Project(tmp_path, server)
    with (project.home / "config.toml").open("a") as config:
        config.write("[todo]\nenabled = false\n")
    async with project.acp(Editor()) as (conn, _process):
        async with asyncio.timeout(TIMEOUT):
            session = await conn.new_session(cwd=str(project.cwd), mcp_servers=[])
        await _prompt(conn, session.session_id, "Hello")
    assert "todo_write" not in tool_names(server.bodies[0])
    assert "bash" in tool_names(server.bodies[0])
