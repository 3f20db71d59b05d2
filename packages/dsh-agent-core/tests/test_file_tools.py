"""The file tools as composed (issue 23 §1): offered with bash, confined by the session's own
sandbox mode, and every oversized result spilled under <DSH_HOME>/spill."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dsh_agent_core import Config, compose, load_config
from dsh_llm.testing import ScriptedModel, text_response, tool_call_response
from shapes import flat


def configured(home: Path, text: str = "") -> Config:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)
    return load_config(env={"DSH_HOME": str(home)})


def read_text(path: Path) -> str:
    return path.read_text()


def results(agent: Any) -> list[dict[str, Any]]:
    return [
        flat("tool/result", e.to_wire()["data"])
        for e in agent.session.events
        if e.type == "tool/result"
    ]


async def test_file_tools_follow_the_sessions_sandbox(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    outside = tmp_path / "outside.txt"
    model = ScriptedModel(
        [
            tool_call_response(
                ("c1", "write", {"file_path": "notes.txt", "content": "kept\n"}),
                ("c2", "write", {"file_path": str(outside), "content": "no\n"}),
                (
                    "c3",
                    "write",
                    {"file_path": str(tmp_path / "home" / "config.toml"), "content": ""},
                ),
            ),
            text_response("done"),
        ]
    )
    async with compose(configured(tmp_path / "home"), models={"scripted": model}) as harness:
        assert {"read", "write", "edit", "glob", "grep"} <= set(harness.tool_names())
        agent = await harness.create("write them", model="scripted:m", cwd=work)
        await agent.wait_idle()
        inside, beyond, config = results(agent)
    assert not inside["isError"]
    assert (work / "notes.txt").read_text() == "kept\n"
    assert beyond["error"]["code"] == "FS_SANDBOX_DENIED"
    assert "[sandbox: file access denied under workspace-write mode]" in json.dumps(beyond)
    assert not outside.exists()
    assert config["error"]["code"] == "FS_SANDBOX_DENIED"  # the harness's own files stay
    assert (tmp_path / "home" / "config.toml").read_text() == ""


async def test_a_read_only_session_reads_but_never_writes(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("alpha\n")
    model = ScriptedModel(
        [
            tool_call_response(
                ("c1", "read", {"file_path": "a.txt"}),
                ("c2", "edit", {"file_path": "a.txt", "old_string": "alpha", "new_string": "b"}),
            ),
            text_response("done"),
        ]
    )
    text = '[sandbox]\nmode = "read-only"\n'
    async with compose(configured(tmp_path / "home", text), models={"scripted": model}) as harness:
        agent = await harness.create("try", model="scripted:m", cwd=work)
        await agent.wait_idle()
        read, edit = results(agent)
    assert "1: alpha" in read["content"][0]["text"]
    assert edit["error"]["code"] == "FS_SANDBOX_DENIED"
    assert (work / "a.txt").read_text() == "alpha\n"


async def test_an_oversized_result_is_spilled_under_the_home(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    command = {"command": "seq 1 30000", "description": "Count"}
    model = ScriptedModel([tool_call_response(("c1", "bash", command)), text_response("done")])
    text = '[sandbox]\nmode = "danger-full-access"\n'
    async with compose(configured(tmp_path / "home", text), models={"scripted": model}) as harness:
        agent = await harness.create("count", model="scripted:m", cwd=work)
        await agent.wait_idle()
        (result,) = results(agent)
    spill = result["meta"]["spill"]
    path = Path(spill["path"])
    assert path.is_relative_to(tmp_path / "home" / "spill")
    assert len(result["content"][0]["text"].encode()) <= 50_000
    assert "30000" in read_text(path)
    assert f"the whole result is in {path}" in result["content"][0]["text"]
