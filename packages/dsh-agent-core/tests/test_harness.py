"""The composed harness: skills in the prefix, titles, session tools, presets, job notices."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import BaseModel

from dsh_agent_core import (
    Config,
    DshError,
    Harness,
    compose,
    discover_skills,
    fallback_title,
    load_config,
)
from dsh_agent_core._runtime_context import RUNTIME_CONTEXT_PLUGIN
from dsh_llm import ToolResultMessage, UserMessage
from dsh_llm.testing import ScriptedModel, text_response, tool_call_response
from dsh_tools import ToolDefinition, ToolExecution


def talk(request: Any) -> list[Any]:
    """The request's messages without the runtime-context snapshot (its own tests pin it)."""
    return [
        m
        for m in request.messages
        if getattr(getattr(m, "source", None), "plugin", None) != RUNTIME_CONTEXT_PLUGIN
    ]


def configured(home: Path, text: str = "") -> Config:
    (home / "config.toml").write_text(text)
    return load_config(env={"DSH_HOME": str(home)})


def tool_text(request: Any) -> str:
    results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
    return "".join(b.text for b in results[-1].result.content if b.type == "text")


def background(command: str) -> str:
    return json.dumps({"command": command, "description": "bg", "run_in_background": True})


def write_skill(root: Path, name: str, description: str, body: str = "Steps.") -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    path = folder / "SKILL.md"
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}\n")
    return path


def test_skills_come_from_front_matter_and_the_home_wins_a_name(tmp_path: Path) -> None:
    home = tmp_path / "home" / "skills"
    project = tmp_path / "project" / ".dsh" / "skills"
    write_skill(home, "review", "Review a change.")
    write_skill(project, "review", "A project review that loses to the home's.")
    write_skill(project, "deploy", "Deploy the service.")
    (project / "broken").mkdir()
    (project / "broken" / "SKILL.md").write_text("no front matter\n")
    (project / "empty").mkdir()
    (project / "empty" / "SKILL.md").write_text("---\nname: empty\n---\n")
    skills = discover_skills(home, project)
    assert [(s.name, s.description) for s in skills] == [
        ("review", "Review a change."),
        ("deploy", "Deploy the service."),
    ]
    assert skills[0].path == home / "review" / "SKILL.md"


def test_a_fallback_title_is_the_first_words() -> None:
    assert fallback_title("Use the bash tool to run exactly: echo OK") == "Use the bash tool to"
    assert fallback_title("  short  ") == "short"


async def test_the_catalog_rides_the_prefix_and_the_first_prompt_titles_the_session(
    tmp_path: Path,
) -> None:
    write_skill(tmp_path / "skills", "review", "Review a change.")
    model = ScriptedModel([text_response("ok")])
    async with compose(configured(tmp_path), models={"scripted": model}) as harness:
        agent = await harness.create(
            "Please review my change today", model="scripted:m", cwd=tmp_path
        )
        await agent.wait_idle()
        first = model.requests[0].messages[0]
        assert isinstance(first, UserMessage)
        assert first.source.kind == "plugin"
        catalog = first.content[0].text  # type: ignore[union-attr]
        assert "review: Review a change." in catalog
        assert str(tmp_path / "skills" / "review" / "SKILL.md") in catalog
        assert all(
            not (isinstance(m, UserMessage) and m.source.kind == "plugin")
            for m in talk(SimpleNamespace(messages=agent.session.derive_messages()))
        )
        assert agent.session.title == "Please review my change today"
        titles = [e for e in agent.session.events if e.type == "session/title"]
        assert len(titles) == 1
        assert titles[0].to_wire()["data"]["source"] == {"kind": "fallback"}


async def test_no_skills_means_no_catalog(tmp_path: Path) -> None:
    model = ScriptedModel([text_response("ok")])
    async with compose(configured(tmp_path), models={"scripted": model}) as harness:
        agent = await harness.create("hi", model="scripted:m", cwd=tmp_path)
        await agent.wait_idle()
        assert len(talk(model.requests[0])) == 1


async def test_session_status_merges_live_and_stored_and_never_writes(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            text_response("first"),
            tool_call_response(("c1", "session_status", "{}")),
            text_response("listed"),
        ]
    )
    async with compose(configured(tmp_path), models={"scripted": model}) as harness:
        cold = await harness.create("An old session", model="scripted:m", cwd=tmp_path)
        await cold.wait_idle()
        await cold.aclose()
        live = await harness.create("Who is around?", model="scripted:m", cwd=tmp_path)
        await live.wait_idle()
        rows = json.loads(tool_text(model.requests[-1]))
        by_id = {row["session_id"]: row for row in rows}
        assert by_id[cold.id]["status"] == "cold"
        assert by_id[cold.id]["title"] == "An old session"
        assert by_id[live.id]["status"] == "running"  # it was asking when it listed
        assert by_id[cold.id]["session_path"].endswith("session.jsonl")
        log = Path(by_id[cold.id]["session_path"])
        before = log.read_bytes()  # noqa: ASYNC240 - a small file, read to compare
        assert (await harness.status_of(cold.id)).status == "cold"
        assert (await harness.status_of("nobody")).to_json() == {
            "session_id": "nobody",
            "status": "missing",
        }
        assert log.read_bytes() == before  # noqa: ASYNC240 - inspection wrote nothing
        assert [row.session_id for row in await harness.status(1)] == [live.id]


async def test_an_agent_creates_a_child_that_inherits_its_route_cwd_and_preset(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    link = tmp_path / "link"
    link.symlink_to(work)

    def answer(request: Any) -> Any:
        """Parent and child share the model and run at once: answer by conversation."""
        prompts = [m.content[0].text for m in request.messages if m.source.kind == "user"]
        if prompts[:1] == ["child task"]:
            return text_response("child done")
        if len(talk(request)) == 1:
            create = json.dumps({"prompt": "child task", "background": True})
            return tool_call_response(("c1", "session_create", create))
        return text_response("parent done")

    model = ScriptedModel([answer, answer, answer])
    text = '[presets.helper]\nsystem = "You help."\n'
    async with compose(configured(tmp_path, text), models={"scripted": model}) as harness:
        parent = await harness.create("spawn one", model="scripted:m", cwd=link, preset="helper")
        assert parent.cwd == str(work)  # canonicalized
        await parent.wait_idle()
        parent_second = next(r for r in model.requests if len(talk(r)) == 3)
        created = json.loads(tool_text(parent_second))
        child = harness.get(created["session_id"])
        assert child is not None
        await child.wait_idle()
        header = child.session.header
        assert header.parent_session == parent.id
        assert header.delegation_depth == 1
        assert header.origin == "subagent"
        assert header.agent_preset == "helper"
        assert header.cwd == str(work)
        assert child.options == parent.options
        assert child.system == "You help."
        assert created["session_path"].endswith("session.jsonl")


async def test_a_preset_offers_only_its_tools(tmp_path: Path) -> None:
    text = '[presets.readonly]\ntools = ["session_status"]\nmodel = "scripted:small"\n'
    async with compose(configured(tmp_path, text)) as harness:
        assert harness.tool_names() == [
            "bash",
            "job_output",
            "job_kill",
            "job_list",
            "read",
            "write",
            "edit",
            "glob",
            "grep",
            "session_status",
            "session_create",
            "session_result",
        ]
        assert harness.tool_names("readonly") == ["session_status"]
        agent = await harness.create(preset="readonly", cwd=tmp_path)
        assert agent.options.model == "small"
        assert agent.session.header.agent_preset == "readonly"


async def test_a_finished_background_job_wakes_its_idle_agent(tmp_path: Path) -> None:
    marker = tmp_path / "go"
    command = f"while [ ! -e {marker} ]; do sleep 0.05; done; echo bg-done"
    model = ScriptedModel(
        [
            tool_call_response(
                (
                    "c1",
                    "bash",
                    json.dumps(
                        {"command": command, "description": "wait", "run_in_background": True}
                    ),
                )
            ),
            text_response("started it"),
            text_response("it finished"),
        ]
    )
    async with compose(configured(tmp_path), models={"scripted": model}) as harness:
        agent = await harness.create("run it in the background", model="scripted:m", cwd=tmp_path)
        await agent.wait_idle()
        assert "started background job bash-1" in tool_text(model.requests[1])
        woken = asyncio.Event()
        agent.session.subscribe(
            lambda e: woken.set() if e.type == "turn/start" and e.data["turn"] == 2 else None
        )
        marker.write_text("")
        await asyncio.wait_for(woken.wait(), 60)  # a safety net: the job ends once the file exists
        await agent.wait_idle()
        assert len([e for e in agent.session.events if e.type == "turn/start"]) == 2
        notice = model.requests[2].messages[-1]
        assert isinstance(notice, UserMessage)
        expected = {"kind": "plugin", "plugin": "tool-jobs", "form": "notice"}
        assert notice.source.to_wire() == expected
        assert "background job bash-1" in notice.content[0].text  # type: ignore[union-attr]


async def test_closing_kills_background_jobs_and_releases_sessions(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            tool_call_response(
                (
                    "c1",
                    "bash",
                    json.dumps(
                        {"command": "sleep 600", "description": "s", "run_in_background": True}
                    ),
                )
            ),
            text_response("started"),
        ]
    )
    harness: Harness = compose(configured(tmp_path), models={"scripted": model})
    agent = await harness.create("go", model="scripted:m", cwd=tmp_path)
    await agent.wait_idle()
    job = harness.jobs.list(agent.id)[0]
    await harness.aclose()
    assert job.status_line.startswith("[status: killed")
    async with compose(configured(tmp_path), models={"scripted": model}) as again:
        resumed = await again.resume(agent.id)  # the write lock was released
        assert resumed.id == agent.id


async def test_check_route_refuses_a_provider_without_its_key(tmp_path: Path) -> None:
    from dsh_agent_core import DshError

    config = configured(tmp_path)
    async with compose(config, env={}) as harness:
        with pytest.raises(DshError, match="DEEPSEEK_API_KEY is not set"):
            harness.check_route("deepseek:deepseek-chat")
        with pytest.raises(DshError, match="no provider 'nowhere'"):
            harness.check_route("nowhere:x")
        harness.check_route("scripted:anything")


async def test_a_fork_of_a_stored_session_continues_its_turns(tmp_path: Path) -> None:
    model = ScriptedModel([text_response("parent"), text_response("child")])
    async with compose(configured(tmp_path), models={"scripted": model}) as harness:
        parent = await harness.create("first", model="scripted:m", cwd=tmp_path)
        await parent.wait_idle()
        await parent.aclose()
        child = await harness.fork(parent.id, session_id="child", prompt="second")
        await child.wait_idle()
        assert child.session.header.parent_session == parent.id
        turns = [
            e.to_wire()["data"]["turn"] for e in child.session.events if e.type == "turn/start"
        ]
        assert turns == [1, 2]
        assert (await harness.status_of("child")).session_path is not None


async def test_children_stop_at_the_delegation_depth(tmp_path: Path) -> None:
    from dsh_agent_core import DshError

    async with compose(configured(tmp_path, "max_delegation_depth = 1\n")) as harness:
        parent = await harness.create(model="scripted:m", cwd=tmp_path)
        child = await harness.create(parent=parent)
        assert child.session.header.delegation_depth == 1
        with pytest.raises(DshError, match="max_delegation_depth = 1"):
            await harness.create(parent=child)


async def test_a_closed_harness_starts_nothing(tmp_path: Path) -> None:
    from dsh_agent_core import DshError

    harness = compose(configured(tmp_path))
    await harness.aclose()
    with pytest.raises(DshError, match="closed"):
        await harness.create(model="scripted:m", cwd=tmp_path)


class _TicketArgs(BaseModel):
    ticket: str


class _TicketTool(ToolDefinition[_TicketArgs]):
    name = "ticket_lookup"
    description = "Look a ticket up."
    parameters = _TicketArgs

    async def execute(self, args: _TicketArgs, execution: ToolExecution) -> str:
        return f"{args.ticket}: open, assigned to ada"


async def test_an_applications_own_tool_is_offered_beside_the_built_in_ones(
    tmp_path: Path,
) -> None:
    call = ("c1", "ticket_lookup", json.dumps({"ticket": "T-7"}))
    model = ScriptedModel([tool_call_response(call), text_response("T-7 is open")])
    text = '[presets.triage]\ntools = ["ticket_lookup", "session_status"]\n'
    config = configured(tmp_path, text)
    async with compose(config, models={"scripted": model}, tools=[_TicketTool()]) as harness:
        assert harness.tool_names()[-1] == "ticket_lookup"
        assert harness.tool_names("triage") == ["session_status", "ticket_lookup"]
        agent = await harness.create("look T-7 up", model="scripted:m", cwd=tmp_path)
        await agent.wait_idle()
    assert tool_text(model.requests[1]) == "T-7: open, assigned to ada"
    offered = [schema.name for schema in model.requests[0].tools]
    assert "ticket_lookup" in offered
    assert "bash" in offered


@pytest.mark.parametrize("tools", [["bash"], ["ticket_lookup", "ticket_lookup"]])
def test_a_tool_name_offered_twice_is_refused_naming_it(tmp_path: Path, tools: list[str]) -> None:
    made = []
    for name in tools:
        tool = _TicketTool()
        tool.name = name
        made.append(tool)
    with pytest.raises(DshError, match=f"tool '{tools[-1]}' is offered twice"):
        compose(configured(tmp_path), tools=made)


async def test_the_built_in_tool_names_are_what_the_harness_offers(tmp_path: Path) -> None:
    from dsh_agent_core._harness import BUILT_IN_TOOL_NAMES, DEFAULT_TOOL_NAMES

    async with compose(configured(tmp_path)) as harness:
        assert tuple(harness.tool_names()) == DEFAULT_TOOL_NAMES
    async with compose(configured(tmp_path, "[todo]\nenabled = true\n")) as harness:
        assert tuple(harness.tool_names()) == BUILT_IN_TOOL_NAMES


async def test_a_closed_harness_raises_the_agent_seams_closed_error(tmp_path: Path) -> None:
    from dsh_agent import AgentClosedError
    from dsh_agent_core import HarnessClosedError

    harness = compose(configured(tmp_path), models={"scripted": ScriptedModel([])})
    await harness.aclose()
    with pytest.raises(HarnessClosedError, match="the harness is closed") as raised:
        await harness.create("too late", model="scripted:m", cwd=tmp_path)
    assert isinstance(raised.value, AgentClosedError)
    assert isinstance(raised.value, DshError)
    for late in (harness.resume("s"), harness.fork("s"), harness.compact("s")):
        with pytest.raises(HarnessClosedError):  # not the store's own closed error
            await late
