"""dsh-tool-fs in a real agent loop over JSONL: a keyless scripted model reads, edits and greps
a project; the log shows every call and result; a resumed session (a new loop, a new backend
instance, fresh tool state) may edit what it read before the restart, from its log alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dsh_agent import AgentOptions
from dsh_agent_loop import AgentLoop
from dsh_llm.testing import ScriptedModel, text_response, tool_call_response
from dsh_persistence_jsonl import JsonlPersistence
from dsh_shell import SandboxPolicy
from dsh_tool_fs import FileTools
from dsh_tools import ToolRegistry
from shapes import flat

OPTIONS = AgentOptions(provider="scripted", model="m")


def registry() -> ToolRegistry:
    tools = ToolRegistry()
    FileTools(SandboxPolicy(mode="workspace-write"), ripgrep=None).register(tools)
    return tools


def results(events: Any) -> list[dict[str, Any]]:
    return [flat("tool/result", e.to_wire()["data"]) for e in events if e.type == "tool/result"]


def calls(events: Any) -> list[tuple[str, str]]:
    return [
        (e.to_wire()["data"]["name"], e.to_wire()["data"]["callId"])
        for e in events
        if e.type == "tool/call"
    ]


async def test_a_scripted_model_reads_edits_and_greps_a_project(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "app.py").write_text('GREETING = "hello"\nprint(GREETING)\n')
    (project / "README.md").write_text("Says hello.\n")
    model = ScriptedModel(
        [
            tool_call_response(("c1", "read", {"file_path": "src/app.py"})),
            tool_call_response(
                (
                    "c2",
                    "edit",
                    {"file_path": "src/app.py", "old_string": '"hello"', "new_string": '"hi"'},
                )
            ),
            tool_call_response(("c3", "grep", {"pattern": "h(i|ello)", "output_mode": "content"})),
            text_response("Renamed the greeting."),
        ]
    )
    store = JsonlPersistence(tmp_path / "sessions", compression="none")
    async with AgentLoop(model, registry(), persistence=store, check_requests=True) as loop:
        agent = await loop.create("files", options=OPTIONS, cwd=str(project))
        agent.followup("Change the greeting to hi.")
        await agent.wait_idle()
        events = list(agent.session.events)
        assert loop.invariant_failures == []
    assert calls(events) == [("read", "c1"), ("edit", "c2"), ("grep", "c3")]
    read, edit, grep = results(events)
    assert '1: GREETING = "hello"' in read["content"][0]["text"]
    assert read["meta"]["fsObserved"]["path"] == str(project / "src" / "app.py")
    assert (
        edit["content"][0]["text"] == f"Edited {project / 'src' / 'app.py'}: replaced 1 occurrence."
    )
    assert not edit["isError"]
    assert 'GREETING = "hi"' in grep["content"][0]["text"]
    assert "Says hello." in grep["content"][0]["text"]
    assert (project / "src" / "app.py").read_text() == 'GREETING = "hi"\nprint(GREETING)\n'
    # the model saw each result in its next request
    last = model.requests[-1]
    assert any("replaced 1 occurrence" in str(m.to_wire()) for m in last.messages)

    # a new process: the session resumes from the log, and its earlier read still counts
    resumed_model = ScriptedModel(
        [
            tool_call_response(
                (
                    "c4",
                    "edit",
                    {
                        "file_path": "src/app.py",
                        "old_string": "print(GREETING)",
                        "new_string": "print(GREETING.upper())",
                    },
                )
            ),
            text_response("Done."),
        ]
    )
    store = JsonlPersistence(tmp_path / "sessions", compression="none")
    async with AgentLoop(resumed_model, registry(), persistence=store) as loop:
        agent = await loop.resume("files")
        agent.followup("Shout it.")
        await agent.wait_idle()
        last_result = results(agent.session.events)[-1]
    assert not last_result["isError"], last_result
    assert (project / "src" / "app.py").read_text() == 'GREETING = "hi"\nprint(GREETING.upper())\n'
