"""dsh-agent-core composed for real: the agent loop over JSONL persistence, the bash tool over the
local executor, the session tools and local skills, driven by keyless scripted models.

Nothing here waits on time. Agents that must overlap meet through marker files that each bash
child writes and then waits for (a bash loop on a condition; the bash timeout is only a safety
net). Models shared by several agents answer each request from the script of the first user
prompt it carries, so which agent asks first never matters.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from dsh_agent_core import (
    Config,
    ConfigError,
    Harness,
    HomeConflictError,
    compose,
    load_config,
)
from dsh_agent_loop import LoopAgent
from dsh_llm import ModelRequest, PluginSource, StreamChunk, TextBlock, UserMessage
from dsh_llm.testing import ScriptedModel, text_response, tool_call_response
from dsh_session import SessionEvent, encode_event, encode_header_line
from shapes import flat

ROUTE = "test:scripted"
"""The route every test agent uses (provider ``test``, given to ``compose`` as a model)."""

PRINT_FACTS = (
    'printf "%s\\n" "${DSH_HOME-unset}" "${DSH_SHELL-unset}" "${DSH_SESSION_ID-unset}" '
    '"${DSH_STALE_PARENT-unset}"'
)


# -- helpers ----------------------------------------------------------------------------------


def data(event: SessionEvent) -> Any:
    return event.to_wire()["data"]


def of_type(events: Any, kind: str) -> list[SessionEvent]:
    return [e for e in events if e.type == kind]


def result_texts(agent: LoopAgent) -> dict[str, str]:
    """Each tool result's text, by call id."""
    texts: dict[str, str] = {}
    for event in of_type(agent.session.events, "tool/result"):
        body = flat(event.type, data(event))
        texts[body["callId"]] = "".join(block.get("text", "") for block in body["content"])
    return texts


def result_errors(agent: LoopAgent) -> dict[str, bool]:
    return {
        flat(e.type, data(e))["callId"]: bool(flat(e.type, data(e)).get("isError"))
        for e in of_type(agent.session.events, "tool/result")
    }


def bash(command: str, description: str = "Run it") -> dict[str, str]:
    return {"command": command, "description": description}


def first_prompt(request: ModelRequest) -> str:
    for message in request.messages:
        if isinstance(message, UserMessage) and message.source.kind == "user":
            return "".join(b.text for b in message.content if isinstance(b, TextBlock))
    raise AssertionError(f"a request without a user prompt: {request.messages!r}")


def tool_results(request: ModelRequest) -> list[str]:
    """The texts of the tool results a request carries, in order."""
    texts = []
    for message in request.messages:
        content = getattr(message, "content", [])
        for block in content:
            if getattr(block, "type", None) == "tool-result":
                texts.append("".join(getattr(b, "text", "") for b in block.content))
    return texts


class ByPrompt:
    """A keyless model several agents share: a request is answered by the script registered for
    the first user prompt it carries (each agent's first prompt names its script)."""

    def __init__(self, scripts: dict[str, ScriptedModel]) -> None:
        self.scripts = scripts

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        return self.scripts[first_prompt(request)].stream(request)

    async def aclose(self) -> None:
        pass


def config_of(home: Path, **overrides: Any) -> Config:
    """The configuration of ``home`` (its config.toml, if any), ignoring this process's DSH_*."""
    return load_config(dsh_home=home, env={}, overrides=overrides or None)


def tree_bytes(root: Path) -> dict[Path, bytes]:
    """Every file under ``root`` with its content."""
    return {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def file_lines(path: str | os.PathLike[str]) -> list[str]:
    """The lines of a log file, decoded as UTF-8 (strictly: a zstd stream would fail)."""
    raw = Path(path).read_bytes()
    assert raw.endswith(b"\n")
    return raw[:-1].decode("utf-8").split("\n")


def write_config(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)


def expected_lines(agent: LoopAgent) -> list[str]:
    session = agent.session
    lines = [
        encode_header_line(session.header, session.inherited_event_count),
        *(encode_event(e) for e in session.events),
    ]
    return [line.decode("utf-8") for line in lines]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "dsh-home"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
def stale_ambient(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An outer harness left its managed facts in this process's environment."""
    monkeypatch.setenv("DSH_STALE_PARENT", "stale")
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "stale-home"))
    monkeypatch.setenv("DSH_SESSION_ID", "stale-session")
    monkeypatch.setenv("DSH_SHELL", "stale-shell")


def harness_of(config: Config, model: Any) -> Harness:
    return compose(config, models={"test": model}, env={})


async def run_turn(agent: LoopAgent, prompt: str) -> None:
    agent.followup(prompt)
    await agent.wait_idle()


# -- the full loop (seeds 000/001) ------------------------------------------------------------


async def test_first_turn_bash_child_sees_the_current_facts_and_the_header_is_line_one(
    home: Path, workspace: Path, stale_ambient: None
) -> None:
    model = ScriptedModel(
        [tool_call_response(("c1", "bash", bash(PRINT_FACTS))), text_response("Seen.")]
    )
    async with harness_of(config_of(home), model) as harness:
        agent = await harness.create(model=ROUTE, cwd=workspace)
        await run_turn(agent, "print the facts")

        assert result_texts(agent) == {"c1": f"{home}\n1\n{agent.id}\nunset\n"}
        assert result_errors(agent) == {"c1": False}
        assert data(agent.session.events[-1]) == {"turn": 1, "reason": {"kind": "completed"}}
        # After the turn ends (the agent still live), the plain log is complete on disk.
        row = await harness.status_of(agent.id)
        assert row.session_path is not None
        assert Path(row.session_path).is_relative_to(home / "sessions-plain")
        lines = file_lines(row.session_path)
        head = json.loads(lines[0])
        assert head["type"] == "session"
        assert head["id"] == agent.id
        assert head["cwd"] == str(workspace)
        assert lines == expected_lines(agent)


def rendezvous(marks: Path, me: str, other: str) -> str:
    """Publish this child's session id as ``<me>.id``, wait until ``<other>.id`` exists, then
    print both: the command can only finish while the other one is running or done."""
    mine, theirs = marks / f"{me}.id", marks / f"{other}.id"
    return (
        f'echo "$DSH_SESSION_ID" > "{mine}.tmp" && mv "{mine}.tmp" "{mine}"; '
        f'while [ ! -e "{theirs}" ]; do sleep 0.01; done; '
        f'echo "$DSH_SESSION_ID"; cat "{theirs}"'
    )


async def test_parent_and_child_agents_get_their_own_ids_in_overlapping_bash_calls(
    home: Path, workspace: Path, tmp_path: Path, stale_ambient: None
) -> None:
    marks = workspace / "marks"  # inside the workspace: the sandbox lets both sessions write
    marks.mkdir()
    parent_prompt, child_prompt = "PARENT: delegate, then meet", "CHILD: meet your parent"
    model = ByPrompt(
        {
            parent_prompt: ScriptedModel(
                [
                    tool_call_response(
                        ("p1", "session_create", {"prompt": child_prompt, "background": True})
                    ),
                    tool_call_response(("p2", "bash", bash(rendezvous(marks, "parent", "child")))),
                    text_response("Parent done."),
                ]
            ),
            child_prompt: ScriptedModel(
                [
                    tool_call_response(("c1", "bash", bash(rendezvous(marks, "child", "parent")))),
                    text_response("Child done."),
                ]
            ),
        }
    )
    async with harness_of(config_of(home), model) as harness:
        parent = await harness.create(model=ROUTE, cwd=workspace)
        await run_turn(parent, parent_prompt)
        created = json.loads(result_texts(parent)["p1"])
        child = harness.get(created["session_id"])
        assert child is not None
        await child.wait_idle()

        assert parent.id != child.id
        assert "stale-session" not in (parent.id, child.id)
        assert result_texts(parent)["p2"] == f"{parent.id}\n{child.id}\n"
        assert result_texts(child)["c1"] == f"{child.id}\n{parent.id}\n"
        assert child.session.header.parent_session == parent.id
        assert child.session.header.delegation_depth == 1
        assert data(child.session.events[-1]) == {"turn": 1, "reason": {"kind": "completed"}}


# -- seed 002 §11, the validation checklist ---------------------------------------------------

PLAIN_PROFILE = """\
# The former layout at the top level; the plain profile is seed 002's local profile.
[persistence]
compression = "zstd"

[profiles.plain.persistence]
compression = "none"
pack_chunks = false
"""


async def test_seed_002_checklist_plain_profile_session_path_and_tool_list(
    home: Path, workspace: Path
) -> None:
    write_config(home, PLAIN_PROFILE)
    config = load_config("plain", dsh_home=home, env={})
    persistence = config.dump()["persistence"]
    assert persistence["backend"] == "jsonl"
    assert persistence["root"] == str(home / "sessions-plain")
    assert persistence["compression"] == "none"
    assert persistence["pack_chunks"] is False

    def inspect_own_log(request: ModelRequest) -> list[StreamChunk]:
        rows = json.loads(tool_results(request)[-1])
        (own,) = [row for row in rows if row["status"] == "running"]
        command = f"grep -c '\"type\":\"user/message\"' '{own['session_path']}'"
        return tool_call_response(("c2", "bash", bash(command, "Search my own log")))

    model = ScriptedModel(
        [
            tool_call_response(("c1", "session_status", {})),
            inspect_own_log,
            text_response("Inspected."),
        ]
    )
    async with harness_of(config, model) as harness:
        tools = harness.tool_names()
        assert "session_status" in tools
        assert "session_create" in tools
        assert "session_read" not in tools
        agent = await harness.create(model=ROUTE, cwd=workspace)
        await run_turn(agent, "find your own log and search it")

        offered = [tool.name for tool in model.requests[0].tools]
        assert {"session_status", "session_create"} <= set(offered)
        assert "session_read" not in offered
        (row,) = json.loads(result_texts(agent)["c1"])
        assert row["session_id"] == agent.id
        path = Path(row["session_path"])
        assert path.is_absolute()
        assert path.name == "session.jsonl"
        assert path.is_relative_to(home / "sessions-plain")
        # the ordinary grep found the user/message lines: the prompt and the runtime context
        assert result_texts(agent)["c2"] == "2\n"
        records = [json.loads(line) for line in file_lines(path)]  # UTF-8 JSON, not zstd
        assert records[0]["type"] == "session"
        assert [r["type"] for r in records[1:]] == [e.type for e in agent.session.events]
    assert not (home / "sessions").exists()  # the zstd root of the top level was never used


# -- session_status ---------------------------------------------------------------------------


async def test_status_rows_are_running_idle_cold_and_missing_with_live_winning(
    home: Path, workspace: Path
) -> None:
    called, release = asyncio.Event(), asyncio.Event()

    async def held(request: ModelRequest) -> list[StreamChunk]:
        called.set()
        await release.wait()
        return text_response("Released.")

    model = ScriptedModel([held])
    async with harness_of(config_of(home), model) as harness:
        agent = await harness.create(model=ROUTE, cwd=workspace)
        agent.followup("wait for the test")
        await called.wait()
        running = await harness.status_of(agent.id)
        assert running.status == "running"
        rows = await harness.status()
        assert [(r.session_id, r.status) for r in rows] == [(agent.id, "running")]
        release.set()
        await agent.wait_idle()
        idle = await harness.status_of(agent.id)
        assert idle.status == "idle"
        assert idle.title == "wait for the test"
        assert idle.session_path is not None
        assert idle.session_path.endswith("session.jsonl")
        assert idle.updated_at is not None
        await agent.aclose()
        cold = await harness.status_of(agent.id)
        # The same row, now from the log (updated_at: the file's time, not the last event's).
        assert (cold.session_id, cold.status, cold.title, cold.session_path) == (
            agent.id,
            "cold",
            idle.title,
            idle.session_path,
        )
        assert cold.updated_at is not None
        missing = await harness.status_of("no-such-session")
        assert missing.to_json() == {"session_id": "no-such-session", "status": "missing"}


async def test_status_lists_the_50_most_recent_and_an_exact_lookup_ignores_the_limit(
    home: Path, workspace: Path
) -> None:
    async with harness_of(config_of(home), ScriptedModel()) as harness:
        for _ in range(51):
            agent = await harness.create(model=ROUTE, cwd=workspace)
            await agent.aclose()
    async with harness_of(config_of(home), ScriptedModel()) as harness:
        stored = await harness.sessions()
        assert len(stored) == 51
        rows = await harness.status()
        assert len(rows) == 50
        assert {r.status for r in rows} == {"cold"}
        updated = [r.updated_at or "" for r in rows]
        assert updated == sorted(updated, reverse=True)
        (left_out,) = {s.id for s in stored} - {r.session_id for r in rows}
        assert (await harness.status_of(left_out)).status == "cold"
        assert len(await harness.status(3)) == 3

    # The same through the tool: 50 by default (the caller, live and newest, first), an exact
    # lookup beyond the limit, recent_n, and both forms at once refused.
    model = ScriptedModel(
        [
            tool_call_response(
                ("c1", "session_status", {}),
                ("c2", "session_status", {"session_id": left_out}),
                ("c3", "session_status", {"recent_n": 2}),
                ("c4", "session_status", {"recent_n": 2, "session_id": left_out}),
            ),
            text_response("Listed."),
        ]
    )
    async with harness_of(config_of(home), model) as harness:
        agent = await harness.create(model=ROUTE, cwd=workspace)
        await run_turn(agent, "list the sessions")
        texts, errors = result_texts(agent), result_errors(agent)
        listed = json.loads(texts["c1"])
        assert len(listed) == 50
        assert (listed[0]["session_id"], listed[0]["status"]) == (agent.id, "running")
        assert [r["session_id"] for r in json.loads(texts["c2"])] == [left_out]
        assert len(json.loads(texts["c3"])) == 2
        assert errors == {"c1": False, "c2": False, "c3": False, "c4": True}
        assert "not both" in texts["c4"]


async def test_a_just_created_live_session_is_the_most_recent_row(
    home: Path, workspace: Path
) -> None:
    async with harness_of(config_of(home), ScriptedModel()) as harness:
        for _ in range(3):
            await (await harness.create(model=ROUTE, cwd=workspace)).aclose()
        fresh = await harness.create(model=ROUTE, cwd=workspace)
        rows = await harness.status(3)
        assert rows[0].session_id == fresh.id
        assert rows[0].status == "idle"


@pytest.mark.parametrize(
    "persistence",
    [{"compression": "zstd"}, {"backend": "sqlite"}],
    ids=["jsonl-zstd", "sqlite"],
)
async def test_session_path_is_absent_when_the_log_is_not_a_plain_file(
    home: Path, workspace: Path, persistence: dict[str, str]
) -> None:
    model = ScriptedModel([tool_call_response(("c1", "session_status", {})), text_response("Ok")])
    async with harness_of(config_of(home, persistence=persistence), model) as harness:
        agent = await harness.create(model=ROUTE, cwd=workspace)
        await run_turn(agent, "list sessions")
        (row,) = json.loads(result_texts(agent)["c1"])
        assert row["session_id"] == agent.id
        assert "session_path" not in row
        await agent.aclose()
        cold = await harness.status_of(agent.id)
        assert cold.status == "cold"
        assert cold.session_path is None
    assert not (home / "sessions-plain").exists()


async def test_status_never_resumes_calls_a_model_or_writes(home: Path, workspace: Path) -> None:
    prompts = ("first stored session", "second stored session")
    async with harness_of(
        config_of(home), ScriptedModel([text_response("One."), text_response("Two.")])
    ) as harness:
        stored = []
        for prompt in prompts:
            agent = await harness.create(model=ROUTE, cwd=workspace)
            await run_turn(agent, prompt)
            stored.append(agent.id)
    before = tree_bytes(home)

    idle_model = ScriptedModel()
    async with harness_of(config_of(home), idle_model) as harness:
        rows = await harness.status()
        assert {r.session_id: r.status for r in rows} == dict.fromkeys(stored, "cold")
        for session_id in stored:
            assert (await harness.status_of(session_id)).status == "cold"
        assert (await harness.status_of("absent")).status == "missing"
        assert harness.live() == []
        assert idle_model.requests == []
    assert tree_bytes(home) == before

    # The same through the tool, called by an agent: only the caller's own log grows.
    model = ScriptedModel(
        [
            tool_call_response(
                ("c1", "session_status", {}),
                ("c2", "session_status", {"session_id": stored[0]}),
            ),
            text_response("Looked."),
        ]
    )
    async with harness_of(config_of(home), model) as harness:
        inspector = await harness.create(model=ROUTE, cwd=workspace)
        await run_turn(inspector, "look at the others")
        rows = json.loads(result_texts(inspector)["c1"])
        assert {r["session_id"]: r["status"] for r in rows} == {
            inspector.id: "running",
            **dict.fromkeys(stored, "cold"),
        }
        assert [r["session_id"] for r in json.loads(result_texts(inspector)["c2"])] == [stored[0]]
        assert [a.id for a in harness.live()] == [inspector.id]
        own = Path((await harness.status_of(inspector.id)).session_path or "").parent
    after = tree_bytes(home)
    assert {p: b for p, b in after.items() if not p.is_relative_to(own)} == before


# -- session_create ---------------------------------------------------------------------------


async def test_session_create_waits_for_the_childs_answer_from_its_sandboxed_bash(
    home: Path, workspace: Path
) -> None:
    parent_prompt, child_prompt = "PARENT: ask a child", "CHILD: where are you?"
    model = ByPrompt(
        {
            parent_prompt: ScriptedModel(
                [
                    tool_call_response(("p1", "session_create", {"prompt": child_prompt})),
                    text_response("It answered."),
                ]
            ),
            child_prompt: ScriptedModel(
                [
                    tool_call_response(("c1", "bash", bash("echo here-$DSH_SESSION_ID"))),
                    text_response("I ran it and I am done."),
                ]
            ),
        }
    )
    async with harness_of(config_of(home), model) as harness:
        parent = await harness.create(model=ROUTE, cwd=workspace)
        await run_turn(parent, parent_prompt)
        (child,) = [a for a in harness.live() if a.id != parent.id]
        # the child's turn had ended when the parent's call returned, inside one parent turn
        assert data(child.session.events[-1]) == {"turn": 1, "reason": {"kind": "completed"}}
        assert result_texts(child)["c1"] == f"here-{child.id}\n"
        path = (await harness.status_of(child.id)).session_path
        answer = result_texts(parent)["p1"]
        assert answer == (
            f"child session {child.id} (log: {path}) finished. Its final answer:\n\n"
            "I ran it and I am done."
        )
        assert result_errors(parent)["p1"] is False


async def test_background_session_create_canonicalizes_its_cwd_and_returns_at_once(
    home: Path, workspace: Path, tmp_path: Path
) -> None:
    # inside the parent's workspace: a child is never confined less than its parent
    real = workspace / "real-dir"
    real.mkdir()
    link = workspace / "link-dir"
    link.symlink_to(real, target_is_directory=True)
    missing = workspace / "no-such-dir"
    parent_prompt, child_prompt = "PARENT: start one elsewhere", "CHILD: where am I?"
    model = ByPrompt(
        {
            parent_prompt: ScriptedModel(
                [
                    tool_call_response(
                        (
                            "p1",
                            "session_create",
                            {"prompt": child_prompt, "cwd": str(link), "background": True},
                        ),
                        ("p2", "session_create", {"prompt": child_prompt, "cwd": str(missing)}),
                        ("p3", "session_create", {"prompt": child_prompt, "preset": "nope"}),
                    ),
                    text_response("Started."),
                ]
            ),
            child_prompt: ScriptedModel(
                [tool_call_response(("c1", "bash", bash("pwd -P"))), text_response("Here.")]
            ),
        }
    )
    async with harness_of(config_of(home), model) as harness:
        parent = await harness.create(model=ROUTE, cwd=workspace)
        await run_turn(parent, parent_prompt)
        created = json.loads(result_texts(parent)["p1"])
        # Returned once the prompt was accepted: the child was already at work.
        assert created["status"] == "running"
        assert Path(created["session_path"]).name == "session.jsonl"
        assert json.loads(file_lines(created["session_path"])[0])["id"] == created["session_id"]
        assert result_errors(parent)["p2"] is True
        assert str(missing) in result_texts(parent)["p2"]
        assert result_errors(parent)["p3"] is True
        assert "presets.nope: no such preset" in result_texts(parent)["p3"]
        child = harness.get(created["session_id"])
        assert child is not None
        await child.wait_idle()
        assert child.session.header.cwd == str(real)
        assert result_texts(child)["c1"] == f"{real}\n"
        assert json.loads(file_lines(created["session_path"])[0])["cwd"] == str(real)
        assert len(harness.live()) == 2  # the failed create left no agent behind

        direct = await harness.create(model=ROUTE, cwd=link)
        assert direct.session.header.cwd == str(real)


async def test_a_child_inherits_cwd_model_and_preset_and_its_header_records_the_lineage(
    home: Path, workspace: Path, tmp_path: Path
) -> None:
    elsewhere = workspace / "elsewhere"  # inside the parent's workspace, as a child must be
    elsewhere.mkdir()
    prompts = {
        "parent": "PARENT: delegate twice",
        "child": "CHILD: delegate once more",
        "grandchild": "GRANDCHILD: just answer",
        "other": "OTHER: somewhere else, another model",
    }
    other_args = {
        "prompt": prompts["other"],
        "cwd": str(elsewhere),
        "model": {"provider": "test", "model": "other-model"},
        "background": True,
    }
    scripts = {
        prompts["parent"]: ScriptedModel(
            [
                tool_call_response(
                    ("p1", "session_create", {"prompt": prompts["child"], "background": True}),
                    ("p2", "session_create", other_args),
                ),
                text_response("Delegated."),
            ]
        ),
        prompts["child"]: ScriptedModel(
            [
                tool_call_response(
                    ("c1", "session_create", {"prompt": prompts["grandchild"], "background": True})
                ),
                text_response("Delegated too."),
            ]
        ),
        prompts["grandchild"]: ScriptedModel([text_response("Answered.")]),
        prompts["other"]: ScriptedModel([text_response("Elsewhere.")]),
    }
    presets = {
        "worker": {
            "system": "You are a worker.",
            "tools": ["bash", "session_status", "session_create"],
        }
    }
    config = config_of(home, presets=presets)
    async with harness_of(config, ByPrompt(scripts)) as harness:
        assert sorted(harness.tool_names("worker")) == ["bash", "session_create", "session_status"]
        parent = await harness.create(preset="worker", model="test:parent-model", cwd=workspace)
        await run_turn(parent, prompts["parent"])
        child = harness.get(json.loads(result_texts(parent)["p1"])["session_id"])
        other = harness.get(json.loads(result_texts(parent)["p2"])["session_id"])
        assert child is not None
        assert other is not None
        await child.wait_idle()
        grandchild = harness.get(json.loads(result_texts(child)["c1"])["session_id"])
        assert grandchild is not None
        for agent in (other, grandchild):
            await agent.wait_idle()

        heads = {}
        for agent in (child, grandchild, other):
            path = (await harness.status_of(agent.id)).session_path
            assert path is not None
            heads[agent.id] = json.loads(file_lines(path)[0])

        def header(agent: LoopAgent) -> dict[str, Any]:
            return heads[agent.id]

        for agent, up, depth in ((child, parent, 1), (grandchild, child, 2), (other, parent, 1)):
            head = header(agent)
            assert head["parentSession"] == up.id
            assert head["delegationDepth"] == depth
            assert head["agentPreset"] == "worker"
            assert head["origin"] == "subagent"
        assert header(child)["cwd"] == header(grandchild)["cwd"] == str(workspace)
        assert header(other)["cwd"] == str(elsewhere)

        def requests(prompt: str) -> list[ModelRequest]:
            return scripts[prompt].requests

        for name in ("child", "grandchild"):
            assert {r.model for r in requests(prompts[name])} == {"parent-model"}
            assert {r.system for r in requests(prompts[name])} == {"You are a worker."}
        assert {r.model for r in requests(prompts["other"])} == {"other-model"}
        offered = {t.name for t in requests(prompts["grandchild"])[0].tools}
        assert offered == {"bash", "session_status", "session_create"}


async def test_fork_of_a_stored_session_is_seeded_with_its_log_and_names_it(
    home: Path, workspace: Path
) -> None:
    model = ScriptedModel([text_response("First."), text_response("Forked.")])
    async with harness_of(config_of(home), model) as harness:
        parent = await harness.create(model=ROUTE, cwd=workspace)
        await run_turn(parent, "the first question")
        parent_path = (await harness.status_of(parent.id)).session_path
        assert parent_path is not None
        parent_lines = file_lines(parent_path)
        await parent.aclose()
    async with harness_of(config_of(home), model) as harness:
        forked = await harness.fork(parent.id, prompt="a question of the fork")
        await forked.wait_idle()
        assert forked.id != parent.id
        path = (await harness.status_of(forked.id)).session_path
        assert path is not None
        lines = file_lines(path)
        head = json.loads(lines[0])
        assert (head["parentSession"], head["seedLength"]) == (parent.id, len(parent_lines) - 1)
        assert lines[1 : len(parent_lines)] == parent_lines[1:]  # the parent's events, verbatim
        assert data(forked.session.events[-1]) == {"turn": 2, "reason": {"kind": "completed"}}
        assert lines == expected_lines(forked)
        assert file_lines(parent_path) == parent_lines  # the parent's own log is untouched


# -- titles -----------------------------------------------------------------------------------


async def test_the_title_defaults_to_the_first_prompt_and_the_latest_title_wins(
    home: Path, workspace: Path
) -> None:
    model = ScriptedModel([text_response("One."), text_response("Two.")])
    async with harness_of(config_of(home), model) as harness:
        agent = await harness.create(model=ROUTE, cwd=workspace)
        await run_turn(agent, "Refactor the parser module for speed and clarity, please")
        assert (await harness.status_of(agent.id)).title == "Refactor the parser module for"
        for title in ("Parser work", "Parser refactor, final"):
            agent.session.append("session/title", {"title": title, "source": {"kind": "user"}})
        await run_turn(agent, "and again")  # a later turn adds no fallback over a real title
        assert (await harness.status_of(agent.id)).title == "Parser refactor, final"
        titles = [data(e)["title"] for e in of_type(agent.session.events, "session/title")]
        assert titles == ["Refactor the parser module for", "Parser work", "Parser refactor, final"]
        assert data(of_type(agent.session.events, "session/title")[0])["source"] == {
            "kind": "fallback"
        }
    async with harness_of(config_of(home), ScriptedModel()) as harness:
        cold = await harness.status_of(agent.id)
        assert cold.status == "cold"
        assert cold.title == "Parser refactor, final"


# -- composition and configuration ------------------------------------------------------------


def test_compose_refuses_two_different_homes_and_names_both(tmp_path: Path) -> None:
    top, other = tmp_path / "home-a", tmp_path / "home-b"
    config = config_of(top, skills={"local": {"dsh_home": str(other)}})
    with pytest.raises(HomeConflictError) as caught:
        compose(config)
    assert str(top) in str(caught.value)
    assert str(other) in str(caught.value)
    assert "skills.local.dsh_home" in str(caught.value)


async def test_compose_accepts_the_same_home_spelled_twice(tmp_path: Path) -> None:
    home = tmp_path / "home"
    spelled = f"{tmp_path}/other/../home/"
    async with compose(config_of(home, skills={"local": {"dsh_home": spelled}})) as harness:
        assert harness.home == home


async def test_local_skills_of_home_and_project_are_offered_in_the_prefix(
    home: Path, workspace: Path
) -> None:
    for root, name, description in (
        (home / "skills", "release", "Cut a release of this repository."),
        (workspace / ".dsh" / "skills", "triage", "Triage a failing test."),
        (workspace / ".dsh" / "skills", "broken", None),
    ):
        (root / name).mkdir(parents=True)
        front = f"name: {name}\n" + (f"description: {description}\n" if description else "")
        (root / name / "SKILL.md").write_text(f"---\n{front}---\n\n# {name}\n")
    model = ScriptedModel([text_response("Noted.")])
    async with harness_of(config_of(home), model) as harness:
        agent = await harness.create(model=ROUTE, cwd=workspace)
        await run_turn(agent, "what can you do?")
    catalogs = [
        m
        for m in model.requests[0].messages
        if isinstance(m, UserMessage)
        and isinstance(m.source, PluginSource)
        and m.source.plugin == "dsh-skills"
    ]
    assert len(catalogs) == 1
    text = "".join(b.text for b in catalogs[0].content if isinstance(b, TextBlock))
    assert f"- release: Cut a release of this repository. ({home / 'skills/release/SKILL.md'})" in (
        text
    )
    assert "- triage: Triage a failing test." in text
    assert "broken" not in text
    assert first_prompt(model.requests[0]) == "what can you do?"


CONFIG_WITH_PROFILES = """\
model = "deepseek:deepseek-chat"

[bash]
timeout = 30

[profiles.fast]
model = "test:fast-model"

[profiles.fast.bash]
max_timeout = 60
"""


def test_a_profile_overlays_the_top_level_and_env_overrides_apply(home: Path) -> None:
    write_config(home, CONFIG_WITH_PROFILES)
    base = load_config(dsh_home=home, env={})
    assert base.model == "deepseek:deepseek-chat"
    assert base.source == str(home / "config.toml")
    fast = load_config("fast", dsh_home=home, env={})
    assert fast.model == "test:fast-model"
    assert (fast.bash.timeout, fast.bash.max_timeout) == (30, 60)  # merged, not replaced
    from_env = load_config(dsh_home=home, env={"DSH_PROFILE": "fast"})
    assert from_env.profile == "fast"
    assert from_env.model == "test:fast-model"
    model_env = load_config(dsh_home=home, env={"DSH_PROFILE": "fast", "DSH_MODEL": "x:y"})
    assert model_env.model == "x:y"
    assert model_env.bash.max_timeout == 60


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('colour = "blue"\n', "colour"),
        ("[bash]\ntimeout = -1\n", "bash.timeout"),
        ('[persistence]\ncompression = "lz4"\n', "persistence.compression"),
        ('[profiles.fast]\nmodel = "no-colon"\n', "model"),
        ("[profiles.fast.persistence]\nbackend_typo = 1\n", "persistence.backend_typo"),
        ('[providers.local]\napi_key_env = "NOT A NAME"\n', "providers.local.api_key_env"),
    ],
    ids=["unknown-key", "bad-number", "bad-choice", "bad-route", "unknown-nested", "bad-env"],
)
def test_an_invalid_config_is_a_config_error_naming_file_and_key(
    home: Path, text: str, key: str
) -> None:
    home.mkdir()
    path = home / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config("fast" if "profiles" in text else None, dsh_home=home, env={})
    message = str(caught.value)
    assert str(path) in message
    assert key in message
    assert "\n" not in message


def test_an_unknown_profile_and_broken_toml_name_the_file(home: Path) -> None:
    home.mkdir()
    path = home / "config.toml"
    path.write_text(CONFIG_WITH_PROFILES)
    with pytest.raises(ConfigError, match=r"profiles\.nope: no such profile \(defined: fast\)"):
        load_config("nope", dsh_home=home, env={})
    path.write_text("model = \n")
    with pytest.raises(ConfigError, match="is not valid TOML") as caught:
        load_config(dsh_home=home, env={})
    assert str(path) in str(caught.value)


def test_the_home_from_the_given_env_is_the_home_the_config_uses(
    home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "process-home"))
    write_config(home, 'model = "test:from-file"\n')
    config = load_config(env={"DSH_HOME": str(home)})
    assert config.model == "test:from-file"  # the file of the given env's home was read
    assert config.home() == home
