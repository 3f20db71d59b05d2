"""Sandbox and approvals as composed: the knobs pinned at creation (v0's fixture shape), a
resumed session keeping its own, children that never ask, escalation end to end under a real
bubblewrap sandbox, and failing closed where bubblewrap cannot run (issue 22 §2)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from dsh_agent import ApprovalRequest
from dsh_agent_core import Config, ConfigError, DshError, compose, load_config
from dsh_agent_core._harness import sandbox_policy
from dsh_agent_core._permissions import pin_permissions
from dsh_agent_core._runtime_context import RUNTIME_CONTEXT_PLUGIN
from dsh_agent_core.cli._approval import shown
from dsh_llm import ToolResultMessage
from dsh_llm.testing import ScriptedModel, text_response, tool_call_response
from shapes import flat


def talk(request: Any) -> list[Any]:
    """The request's messages without the runtime-context snapshot (its own tests pin it)."""
    return [
        m
        for m in request.messages
        if getattr(getattr(m, "source", None), "plugin", None) != RUNTIME_CONTEXT_PLUGIN
    ]


def configured(home: Path, text: str = "", env: dict[str, str] | None = None) -> Config:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)
    return load_config(env={"DSH_HOME": str(home), **(env or {})})


def knobs(agent: Any) -> list[tuple[int, str, Any]]:
    kinds = ("permission/preset", "sandbox/mode", "approval/policy")
    return [(e.seq, e.type, e.to_wire()["data"]) for e in agent.session.events if e.type in kinds]


def last_tool_text(agent: Any) -> str:
    results = [e for e in agent.session.events if e.type == "tool/result"]
    content = flat("tool/result", results[-1].to_wire()["data"])["content"]
    return "".join(block.get("text", "") for block in content)


def bash(command: str, **extra: Any) -> str:
    return json.dumps({"command": command, "description": "Run it", **extra})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", [("workspace-write",), ("workspace-write",), ("ask",)]),
        ('[sandbox]\nmode = "read-only"\n', [("read-only",), ("read-only",), ("ask",)]),
        (
            '[sandbox]\nmode = "danger-full-access"\n',
            [("danger-full-access",), ("danger-full-access",), ("never",)],
        ),
    ],
    ids=["default", "read-only", "full-access"],
)
async def test_a_new_session_pins_the_preset_mode_and_policy_before_any_turn(
    tmp_path: Path, text: str, expected: list[tuple[str]]
) -> None:
    model = ScriptedModel([text_response("hi")])
    async with compose(configured(tmp_path / "home", text), models={"scripted": model}) as h:
        agent = await h.create("hello", model="scripted:m", cwd=tmp_path)
        await agent.wait_idle()
        pinned = knobs(agent)
        assert [seq for seq, _, _ in pinned] == [0, 1, 2]
        assert [kind for _, kind, _ in pinned] == [
            "permission/preset",
            "sandbox/mode",
            "approval/policy",
        ]
        assert [tuple(data.values()) for _, _, data in pinned] == expected
        assert agent.session.events[3].type == "turn/start"


async def test_a_custom_pair_pins_no_preset(tmp_path: Path) -> None:
    text = '[sandbox]\nmode = "workspace-write"\napproval = "never"\n'
    async with compose(configured(tmp_path / "home", text)) as harness:
        agent = await harness.create(model="scripted:m", cwd=tmp_path)
        assert [(kind, data) for _, kind, data in knobs(agent)] == [
            ("sandbox/mode", {"mode": "workspace-write"}),
            ("approval/policy", {"policy": "never"}),
        ]


async def test_a_resumed_session_keeps_its_own_knobs(tmp_path: Path) -> None:
    home = tmp_path / "home"
    work = tmp_path / "work"
    work.mkdir()
    async with compose(configured(home)) as harness:
        agent = await harness.create(model="scripted:m", cwd=work)
        session_id = agent.id
    model = ScriptedModel(
        [tool_call_response(("c1", "bash", bash("echo kept > kept.txt"))), text_response("ok")]
    )
    later = configured(home, '[sandbox]\nmode = "read-only"\n')
    async with compose(later, models={"scripted": model}) as harness:
        agent = await harness.resume(session_id, model="scripted:m")
        agent.followup("write it")
        await agent.wait_idle()
        assert [data for _, _, data in knobs(agent)][1] == {"mode": "workspace-write"}
        assert len(knobs(agent)) == 3  # nothing re-pinned
    assert (work / "kept.txt").read_text() == "kept\n"  # it ran under its own workspace-write


async def test_a_child_runs_in_its_parents_mode_and_never_asks(tmp_path: Path) -> None:
    def answer(request: Any) -> Any:
        prompts = [m.content[0].text for m in request.messages if m.source.kind == "user"]
        if prompts[:1] == ["child task"]:
            return text_response("child done")
        if len(talk(request)) == 1:
            return tool_call_response(
                ("c1", "session_create", json.dumps({"prompt": "child task", "background": True}))
            )
        return text_response("parent done")

    model = ScriptedModel([answer, answer, answer])
    text = '[sandbox]\nmode = "read-only"\n'
    async with compose(configured(tmp_path / "home", text), models={"scripted": model}) as h:
        parent = await h.create("spawn one", model="scripted:m", cwd=tmp_path)
        await parent.wait_idle()
        request = next(r for r in model.requests if len(talk(r)) == 3)
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        created = json.loads(results[-1].result.content[0].text)  # type: ignore[union-attr]
        child = h.get(created["session_id"])
        assert child is not None
        await child.wait_idle()
        assert [(kind, data) for _, kind, data in knobs(child)] == [
            ("sandbox/mode", {"mode": "read-only", "source": "delegation"}),
            ("approval/policy", {"policy": "never", "source": "delegation"}),
        ]
        assert child.approval_policy == "never"
        (told,) = _snapshots(child)  # the child is told its own policy, not the config's
        assert "File policy: read-only." in told["content"][0]["text"]
        assert "do not set `sandbox_permissions`" in told["content"][0]["text"]


async def test_an_escalated_retry_asks_and_runs_wider_only_when_allowed(tmp_path: Path) -> None:
    work = tmp_path / "work"
    outside = tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    target = outside / "x.txt"
    escalated = bash(
        f"echo hi > {target}",
        sandbox_permissions="danger-full-access",
        justification="The file lives outside the workspace.",
    )
    model = ScriptedModel(
        [
            tool_call_response(("c1", "bash", bash(f"echo hi > {target}"))),
            tool_call_response(("c2", "bash", escalated)),
            text_response("done"),
        ]
    )
    asked: list[ApprovalRequest] = []
    async with compose(configured(tmp_path / "home"), models={"scripted": model}) as harness:
        harness.extensions.approval.add(lambda request: asked.append(request) or "allowed-once")
        agent = await harness.create("write outside", model="scripted:m", cwd=work)
        await agent.wait_idle()
        results = [
            flat("tool/result", e.to_wire()["data"])
            for e in agent.session.events
            if e.type == "tool/result"
        ]
        first = results[0]["content"][0]["text"]
        assert "[sandbox: file access denied under workspace-write mode]" in first
        assert "retry this exact command once" in first
        assert len(asked) == 1
        assert asked[0].reason == (
            "escalate sandbox to danger-full-access: The file lives outside the workspace."
        )
        assert asked[0].arguments is not None
        assert asked[0].arguments["command"] == f"echo hi > {target}"
        kinds = [e.type for e in agent.session.events]
        assert kinds.count("approval/asked") == kinds.count("approval/decided") == 1
    assert target.read_text() == "hi\n"


async def test_without_an_answerer_an_escalation_is_unavailable_and_nothing_runs(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    target = tmp_path / "outside.txt"
    escalated = bash(
        f"echo hi > {target}", sandbox_permissions="danger-full-access", justification="Needed."
    )
    model = ScriptedModel([tool_call_response(("c1", "bash", escalated)), text_response("ok")])
    async with compose(configured(tmp_path / "home"), models={"scripted": model}) as harness:
        agent = await harness.create("try", model="scripted:m", cwd=work)
        await agent.wait_idle()
        decided = [
            e.to_wire()["data"] for e in agent.session.events if e.type == "approval/decided"
        ]
        assert [d["outcome"] for d in decided] == ["unavailable"]
        assert "no approval channel is available" in last_tool_text(agent)
    assert not target.exists()


async def test_where_bubblewrap_cannot_run_a_confined_harness_refuses_with_the_fix(
    tmp_path: Path,
) -> None:
    text = '[sandbox]\nbwrap = "/nonexistent/bwrap"\n'
    async with compose(configured(tmp_path / "home", text)) as harness:
        with pytest.raises(DshError) as caught:
            harness.check_sandbox()
        message = str(caught.value)
        assert "the workspace-write sandbox cannot run here" in message
        assert "apt-get install bubblewrap" in message
        assert "--sandbox danger-full-access" in message
        harness.check_sandbox("danger-full-access")  # no sandbox needed: no refusal
        assert not harness.sandbox_probe().available


async def test_a_confined_command_without_bubblewrap_fails_closed(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    model = ScriptedModel(
        [tool_call_response(("c1", "bash", bash("echo ran > ran.txt"))), text_response("ok")]
    )
    text = '[sandbox]\nbwrap = "/nonexistent/bwrap"\n'
    async with compose(configured(tmp_path / "home", text), models={"scripted": model}) as h:
        agent = await h.create("go", model="scripted:m", cwd=work)
        await agent.wait_idle()
        assert "sandbox unavailable" in last_tool_text(agent)
    assert not (work / "ran.txt").exists()


def test_the_permission_mode_variable_sets_the_mode_and_a_bad_one_is_named(
    tmp_path: Path,
) -> None:
    config = configured(tmp_path, env={"DSH_PERMISSION_MODE": "danger-full-access"})
    assert config.sandbox.mode == "danger-full-access"
    assert config.sandbox.approval_policy == "never"
    assert config.dump()["sandbox"]["approval"] == "never"
    with pytest.raises(ConfigError, match=r"\$DSH_PERMISSION_MODE.*'root' is not one of"):
        configured(tmp_path, env={"DSH_PERMISSION_MODE": "root"})
    with pytest.raises(ConfigError, match=r"sandbox\.mode"):
        configured(tmp_path, '[sandbox]\nmode = "yolo"\n')


def test_the_logs_and_the_config_file_are_never_writable_wherever_they_live(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    text = f'[persistence]\nroot = "{work}/.sessions"\n'
    config = configured(tmp_path / "home", text)
    policy = sandbox_policy(config)
    assert policy.check(work / ".sessions" / "p" / "s" / "session.jsonl", "write").allowed is False
    assert policy.check(tmp_path / "home" / "config.toml", "write").allowed is False
    sqlite = configured(
        tmp_path / "home2", f'[persistence]\nbackend = "sqlite"\npath = "{work}/s.db"\n'
    )
    policy = dataclasses.replace(sandbox_policy(sqlite), workspace=work)
    for name in ("s.db", "s.db-wal", "s.db-shm", "s.db-journal"):
        assert policy.check(work / name, "write").allowed is False
    assert policy.check(work / "notes.txt", "write").allowed is True


def test_the_approval_prompt_shows_model_text_without_its_control_characters() -> None:
    assert shown("rm -rf *\x1bM\x1b7 ok") == "rm -rf *\\x1bM\\x1b7 ok"
    assert shown("a\rb\tc") == "a\\rb\\tc"
    assert shown("plain text, é") == "plain text, é"


def _snapshots(agent: Any) -> list[dict[str, Any]]:
    out = []
    for event in agent.session.events:
        data = event.to_wire()["data"]
        if event.type == "user/message" and data["source"].get("plugin") == RUNTIME_CONTEXT_PLUGIN:
            out.append(data)
    return out


async def test_the_model_is_told_the_sessions_policy_once_until_it_changes(tmp_path: Path) -> None:
    model = ScriptedModel([text_response("one"), text_response("two"), text_response("three")])
    async with compose(configured(tmp_path / "home"), models={"scripted": model}) as harness:
        agent = await harness.create("first", model="scripted:m", cwd=tmp_path)
        await agent.wait_idle()
        (snapshot,) = _snapshots(agent)
        assert snapshot["source"]["form"] == "snapshot"
        names = [section["name"] for section in snapshot["source"]["sections"]]
        assert names == ["sandbox:policy", "approval:policy"]
        text = snapshot["content"][0]["text"]
        assert f'only inside the session workspace "{tmp_path}"' in text
        assert text.count("File policy: workspace-write.") == 1
        assert "Approval policy: ask." in text
        request = model.requests[0]
        # the snapshot, then the prompt the model answers (last, where small models look)
        assert [m.source.kind for m in request.messages] == ["plugin", "user"]
        agent.followup("second")
        await agent.wait_idle()
        assert len(_snapshots(agent)) == 1  # unchanged knobs add nothing
        pin_permissions(agent.session, "workspace-write", "never")
        agent.followup("third")
        await agent.wait_idle()
        latest = _snapshots(agent)[-1]["content"][0]["text"]
        assert len(_snapshots(agent)) == 2
        assert "do not set `sandbox_permissions`" in latest
