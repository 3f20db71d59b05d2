"""A child is never confined less than its parent, and a session's workspace is pinned (issue
32 §1.1, §1.2): real harnesses from ``compose``, scripted models whose tool calls matter, real
bubblewrap."""

from __future__ import annotations

import json
import os
from collections import deque
from pathlib import Path
from typing import Any

import pytest

from dsh_agent_core import Config, compose, load_config
from dsh_llm.testing import ScriptedModel, text_response, tool_call_response
from dsh_shell import WorkspaceChangedError
from shapes import flat


def configured(home: Path, text: str = "") -> Config:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)
    return load_config(env={"DSH_HOME": str(home)})


class Router:
    """Answers each session by its first user message: the next scripted response of that
    conversation (parents and children share one model and run at once)."""

    def __init__(self, scripts: dict[str, list[Any]]) -> None:
        self.scripts = {key: deque(value) for key, value in scripts.items()}

    def __call__(self, request: Any) -> Any:
        for message in request.messages:
            for block in getattr(message, "content", []) or []:
                text = getattr(block, "text", None)
                if text in self.scripts:
                    queue = self.scripts[text]
                    return queue.popleft() if queue else text_response("done")
        raise AssertionError("a request of no scripted conversation")

    def model(self) -> ScriptedModel:
        return ScriptedModel([self] * 64)


def create(prompt: str, **extra: Any) -> Any:
    """A ``session_create`` call in the background form: these tests read the child's id."""
    arguments = {"prompt": prompt, "background": True, **extra}
    return tool_call_response(("c1", "session_create", json.dumps(arguments)))


def bash(call_id: str, command: str) -> Any:
    arguments = json.dumps({"command": command, "description": "Run it"})
    return tool_call_response((call_id, "bash", arguments))


def write(call_id: str, path: str, content: str = "x\n") -> Any:
    arguments = json.dumps({"file_path": path, "content": content})
    return tool_call_response((call_id, "write", arguments))


def tool_results(agent: Any) -> list[dict[str, Any]]:
    return [
        flat("tool/result", e.to_wire()["data"])
        for e in agent.session.events
        if e.type == "tool/result"
    ]


def text_of(result: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in result["content"])


def decided(agent: Any) -> list[str]:
    return [
        e.to_wire()["data"]["outcome"] for e in agent.session.events if e.type == "approval/decided"
    ]


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    """A workspace with a sub-folder, a repository folder and a link out; a folder outside."""
    work = tmp_path / "work"
    outside = tmp_path / "outside"
    (work / "sub").mkdir(parents=True)
    (work / ".git").mkdir()
    outside.mkdir()
    (work / "out-link").symlink_to(outside)
    return {"home": tmp_path / "home", "work": work, "outside": outside}


@pytest.mark.parametrize(
    "cwd",
    ["/", "..", "{outside}", "out-link", "{work}/sub/../..", ".git"],
    ids=["root", "dotdot", "outside", "symlink-out", "lexical-escape", "protected-git"],
)
async def test_a_child_cwd_the_parent_may_not_write_is_refused_without_approval(
    tree: dict[str, Path], cwd: str
) -> None:
    cwd = cwd.format(outside=tree["outside"], work=tree["work"])
    resolved = os.path.realpath(Path(tree["work"], cwd))  # noqa: ASYNC240 - before the run
    model = Router({"spawn": [create("child task", cwd=cwd)]}).model()
    async with compose(configured(tree["home"]), models={"scripted": model}) as harness:
        parent = await harness.create("spawn", model="scripted:m", cwd=tree["work"])
        await parent.wait_idle()
        (result,) = tool_results(parent)
        assert result["isError"]
        assert result["error"] == {
            "name": "ChildWorkspaceError",
            "code": "SESSION_CWD_OUTSIDE_WORKSPACE",
        }
        shown = text_of(result)
        assert repr(str(tree["work"])) in shown  # the parent's workspace, named
        assert f"may not start a child in {resolved!r}" in shown
        assert "the approval to widen it was unavailable" in shown
        assert decided(parent) == ["unavailable"]  # asked through the seam, no channel
        # nothing half-made: no child is live or stored
        assert [a.id for a in harness.live()] == [parent.id]
        assert [s.id for s in await harness.sessions()] == [parent.id]


async def test_a_rejected_widening_creates_no_child(tree: dict[str, Path]) -> None:
    model = Router({"spawn": [create("child task", cwd="/")]}).model()
    async with compose(configured(tree["home"]), models={"scripted": model}) as harness:
        asked: list[Any] = []
        harness.extensions.approval.add(lambda request: asked.append(request) or "rejected")
        parent = await harness.create("spawn", model="scripted:m", cwd=tree["work"])
        await parent.wait_idle()
        (result,) = tool_results(parent)
        assert result["error"]["code"] == "SESSION_CWD_OUTSIDE_WORKSPACE"
        assert "the approval to widen it was rejected" in text_of(result)
        (request,) = asked
        assert request.tool_name == "session_create"
        assert request.reason.startswith(
            f"start a child session in /, outside the writable area of the workspace {tree['work']}"
        )
        assert [s.id for s in await harness.sessions()] == [parent.id]


async def test_an_approved_widening_starts_the_child_there_in_the_parents_mode(
    tree: dict[str, Path],
) -> None:
    outside = tree["outside"]
    model = Router({"spawn": [create("child task", cwd=str(outside))]}).model()
    async with compose(configured(tree["home"]), models={"scripted": model}) as harness:
        harness.extensions.approval.add(lambda request: "allowed-once")
        parent = await harness.create("spawn", model="scripted:m", cwd=tree["work"])
        await parent.wait_idle()
        (result,) = tool_results(parent)
        assert not result["isError"], text_of(result)
        child = harness.get(json.loads(text_of(result))["session_id"])
        assert child is not None
        await child.wait_idle()
        assert child.cwd == str(outside)
        assert child.approval_policy == "never"
        assert decided(parent) == ["allowed-once"]


async def test_a_child_in_a_sub_folder_writes_only_its_own_subtree(tree: dict[str, Path]) -> None:
    work = tree["work"]
    model = Router(
        {
            "spawn": [create("child task", cwd="sub")],
            "child task": [
                bash("b1", "touch inside.txt; touch ../escaped-bash.txt"),
                write("w1", "../escaped-write.txt"),
            ],
        }
    ).model()
    async with compose(configured(tree["home"]), models={"scripted": model}) as harness:
        parent = await harness.create("spawn", model="scripted:m", cwd=work)
        await parent.wait_idle()
        (result,) = tool_results(parent)
        assert not result["isError"], text_of(result)
        assert decided(parent) == []  # inside the workspace: nothing to approve
        child = harness.get(json.loads(text_of(result))["session_id"])
        assert child is not None
        await child.wait_idle()
        assert child.cwd == str(work / "sub")
        shell, written = tool_results(child)
        assert "[sandbox: file access denied under workspace-write mode]" in text_of(shell)
        assert written["error"]["code"] == "FS_SANDBOX_DENIED"
    assert (work / "sub" / "inside.txt").exists()
    assert not (work / "escaped-bash.txt").exists()
    assert not (work / "escaped-write.txt").exists()


async def test_a_grandchild_is_held_to_its_parents_sub_folder(tree: dict[str, Path]) -> None:
    work = tree["work"]
    model = Router(
        {
            "spawn": [create("child task", cwd=str(work / "sub"))],
            "child task": [create("grandchild task", cwd=str(work))],
        }
    ).model()
    async with compose(configured(tree["home"]), models={"scripted": model}) as harness:
        harness.extensions.approval.add(lambda request: "allowed-once")  # a child never asks
        parent = await harness.create("spawn", model="scripted:m", cwd=work)
        await parent.wait_idle()
        child = harness.get(json.loads(text_of(tool_results(parent)[0]))["session_id"])
        assert child is not None
        await child.wait_idle()
        (result,) = tool_results(child)
        assert result["error"]["code"] == "SESSION_CWD_OUTSIDE_WORKSPACE"
        assert "the approval to widen it was rejected" in text_of(result)
        assert decided(child) == ["rejected"]  # its policy is never
        assert len(await harness.sessions()) == 2


async def test_a_workspace_swapped_for_a_symlink_refuses_bash_and_write(
    tree: dict[str, Path],
) -> None:
    """A session in ``work`` re-points ``work/sub`` at a folder outside; the next ``bash`` and
    ``write`` of the session in ``work/sub`` are refused, naming it, and nothing lands outside."""
    work, outside = tree["work"], tree["outside"]
    swap = f"mv sub sub.real && ln -s {outside} sub"
    model = Router(
        {
            "swap it": [bash("s1", swap)],
            "work in sub": [bash("b1", "touch landed.txt"), write("w1", "landed-write.txt")],
        }
    ).model()
    async with compose(configured(tree["home"]), models={"scripted": model}) as harness:
        inner = await harness.create(model="scripted:m", cwd=work / "sub")
        outer = await harness.create("swap it", model="scripted:m", cwd=work)
        await outer.wait_idle()
        assert (work / "sub").is_symlink(), text_of(tool_results(outer)[0])
        inner.followup("work in sub")
        await inner.wait_idle()
        shell, written = tool_results(inner)
        for result in (shell, written):
            assert result["isError"]
            assert result["error"]["name"] == "WorkspaceChangedError"
            shown = text_of(result)
            assert repr(inner.id) in shown
            assert f"pinned at {str(work / 'sub')!r} and now resolves to {str(outside)!r}" in shown
    assert list(outside.iterdir()) == []
    assert list((work / "sub.real").iterdir()) == []


async def test_resuming_a_session_whose_cwd_now_leads_elsewhere_is_refused(
    tree: dict[str, Path],
) -> None:
    work, outside = tree["work"], tree["outside"]
    async with compose(configured(tree["home"])) as harness:
        agent = await harness.create(model="scripted:m", cwd=work / "sub")
        session_id = agent.id
    (work / "sub").rename(work / "sub.real")
    (work / "sub").symlink_to(outside)
    model = Router({"go on": [bash("b1", "touch landed.txt")]}).model()
    async with compose(configured(tree["home"]), models={"scripted": model}) as harness:
        with pytest.raises(WorkspaceChangedError) as caught:
            await harness.resume(session_id, model="scripted:m")
        assert caught.value.session_id == session_id
        assert caught.value.path == str(work / "sub")
        assert harness.live() == []
    assert list(outside.iterdir()) == []


async def test_an_unconfined_session_resumes_where_its_cwd_now_leads(
    tree: dict[str, Path],
) -> None:
    """Full access has nothing to confine: a moved-and-linked workspace still resumes."""
    work, outside = tree["work"], tree["outside"]
    text = '[sandbox]\nmode = "danger-full-access"\n'
    async with compose(configured(tree["home"], text)) as harness:
        session_id = (await harness.create(model="scripted:m", cwd=work / "sub")).id
    (work / "sub").rename(work / "sub.real")
    (work / "sub").symlink_to(outside)
    async with compose(configured(tree["home"], text)) as harness:
        agent = await harness.resume(session_id, model="scripted:m")
        assert agent.cwd == str(work / "sub")
        with pytest.raises(WorkspaceChangedError):
            harness.workspace_pin(session_id)  # a confined call of it would be refused
