"""``session_create`` as a subagent call: it waits for the child's answer by default, runs it in
the background on request (``session_result`` collects it), and cancelling or closing the parent
ends a running child's turn in a log that resumes."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from dsh_agent_core import (
    Config,
    compose,
    interrupted_child_notice,
    load_config,
)
from dsh_llm import ToolResultMessage
from dsh_llm.testing import ScriptedModel, text_response, tool_call_response
from dsh_session import SessionEvent
from shapes import flat

CHILD = {"provider": "child", "model": "m"}


def configured(home: Path) -> Config:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("")
    return load_config(env={"DSH_HOME": str(home)})


def create(call_id: str, prompt: str, **extra: Any) -> Any:
    arguments = {"prompt": prompt, "model": CHILD, **extra}
    return tool_call_response((call_id, "session_create", json.dumps(arguments)))


def results(model: ScriptedModel) -> list[Any]:
    """The tool results the model was shown, in order (each once)."""
    seen: dict[str, Any] = {}
    for request in model.requests:
        for message in request.messages:
            if isinstance(message, ToolResultMessage):
                seen.setdefault(message.result.tool_call_id, message.result)
    return list(seen.values())


def text(result: Any) -> str:
    return "".join(b.text for b in result.content if b.type == "text")


def turn_ends(events: Any) -> list[dict[str, Any]]:
    return [e.to_wire()["data"] for e in events if e.type == "turn/end"]


def children_of(harness: Any, parent_id: str) -> list[Any]:
    return [a for a in harness.live() if a.session.header.parent_session == parent_id]


class Gate:
    """A child model entry that streams a partial answer, says it was asked, then waits to be
    cancelled (or, once ``release`` is set, finishes with ``answer``)."""

    def __init__(self, answer: str | None = None) -> None:
        self.asked = asyncio.Event()
        self.release = asyncio.Event()
        self.answer = answer

    def __call__(self, request: Any) -> AsyncIterator[Any]:
        return self._stream()

    async def _stream(self) -> AsyncIterator[Any]:
        chunks = text_response("partial work")
        for chunk in chunks[:2]:  # the text block opened, its first word
            yield chunk
        self.asked.set()
        await self.release.wait()
        if self.answer is None:
            await asyncio.Event().wait()  # only cancellation ends this
        for chunk in text_response(self.answer)[2:]:
            yield chunk


async def test_session_create_waits_for_the_childs_answer_by_default(tmp_path: Path) -> None:
    parent_model = ScriptedModel(
        [create("c1", "What is six times seven?"), text_response("it says 42")]
    )
    child_model = ScriptedModel([text_response("The answer is 42.")])
    models = {"scripted": parent_model, "child": child_model}
    async with compose(configured(tmp_path / "home"), models=models) as harness:
        parent = await harness.create("ask a child", model="scripted:m", cwd=tmp_path)
        await parent.wait_idle()
        (result,) = results(parent_model)
        assert not result.is_error
        (child,) = children_of(harness, parent.id)
        path = (await harness.status_of(child.id)).session_path
        assert path is not None
        said = text(result)
        assert said.startswith(f"child session {child.id} (log: {path}) finished.")
        assert said.endswith("Its final answer:\n\nThe answer is 42.")
        # the parent's call returned after the child's turn ended, inside the parent's one turn
        assert [e["reason"]["kind"] for e in turn_ends(child.session.events)] == ["completed"]
        assert [e["reason"]["kind"] for e in turn_ends(parent.session.events)] == ["completed"]
        assert child.status == "idle"


async def test_children_asked_in_one_answer_work_side_by_side(tmp_path: Path) -> None:
    asked: list[str] = []
    both = asyncio.Event()

    async def meet(request: Any) -> Any:
        """Answer once both children are in their model call: never if they ran in turn."""
        prompt = request.messages[-1].content[0].text
        asked.append(prompt)
        if len(asked) == 2:
            both.set()
        await asyncio.wait_for(both.wait(), 60)  # a safety net: fails the child, not the run
        return text_response(f"done: {prompt}")

    calls = [
        ("c1", "session_create", json.dumps({"prompt": "first", "model": CHILD})),
        ("c2", "session_create", json.dumps({"prompt": "second", "model": CHILD})),
    ]
    parent_model = ScriptedModel([tool_call_response(*calls), text_response("both answered")])
    models = {"scripted": parent_model, "child": ScriptedModel([meet, meet])}
    async with compose(configured(tmp_path / "home"), models=models) as harness:
        parent = await harness.create("ask two children", model="scripted:m", cwd=tmp_path)
        await parent.wait_idle()
        first, second = results(parent_model)
        assert not first.is_error
        assert not second.is_error
        assert text(first).endswith("Its final answer:\n\ndone: first")
        assert text(second).endswith("Its final answer:\n\ndone: second")


async def test_a_long_answer_is_spilled_and_the_child_is_named_first(tmp_path: Path) -> None:
    answer = "word " * 40_000  # 200 KB: over the inline cap
    parent_model = ScriptedModel([create("c1", "Write a lot."), text_response("ok")])
    models = {"scripted": parent_model, "child": ScriptedModel([text_response(answer)])}
    async with compose(configured(tmp_path / "home"), models=models) as harness:
        parent = await harness.create("ask a child", model="scripted:m", cwd=tmp_path)
        await parent.wait_idle()
        (result,) = results(parent_model)
        (child,) = children_of(harness, parent.id)
        said = text(result)
        assert len(said.encode()) < len(answer) // 2
        assert f"child session {child.id}" in said.splitlines()[0]
        spilled = [p for p in (tmp_path / "home" / "spill").rglob("*") if p.is_file()]
        assert any(answer.strip() in p.read_text() for p in spilled)


async def test_a_child_that_fails_gives_an_error_result_saying_so(tmp_path: Path) -> None:
    parent_model = ScriptedModel([create("c1", "Try it."), text_response("it failed")])
    models = {"scripted": parent_model, "child": ScriptedModel([])}  # its request finds none
    async with compose(configured(tmp_path / "home"), models=models) as harness:
        parent = await harness.create("ask a child", model="scripted:m", cwd=tmp_path)
        await parent.wait_idle()
        (result,) = results(parent_model)
        (child,) = children_of(harness, parent.id)
        assert result.is_error
        (logged,) = [
            flat("tool/result", e.to_wire()["data"])
            for e in parent.session.events
            if e.type == "tool/result"
        ]
        assert logged["error"]["code"] == "SESSION_CHILD_FAILED"
        assert f"child session {child.id}" in text(result)
        assert "failed" in text(result)
        assert "script exhausted" in text(result)


async def test_a_background_child_is_collected_with_session_result(tmp_path: Path) -> None:
    gate = Gate(answer="Background answer.")

    async def ask_while_it_runs(request: Any) -> Any:
        await gate.asked.wait()  # the child is in its model call, its turn still open
        (started,) = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        child_id = json.loads(text(started.result))["session_id"]
        ask = ("c2", "session_result", json.dumps({"session_id": child_id}))
        return tool_call_response(ask)

    parent_model = ScriptedModel(
        [
            create("c1", "Work on your own.", background=True),
            ask_while_it_runs,
            text_response("still going"),
        ]
    )
    models = {"scripted": parent_model, "child": ScriptedModel([gate])}
    async with compose(configured(tmp_path / "home"), models=models) as harness:
        parent = await harness.create("start a child", model="scripted:m", cwd=tmp_path)
        await parent.wait_idle()  # the parent's turn ended while the child still runs
        (child,) = children_of(harness, parent.id)
        started, running = results(parent_model)
        assert json.loads(text(started))["session_id"] == child.id
        assert json.loads(text(started))["status"] == "running"
        assert json.loads(text(running))["status"] == "running"
        assert child.status == "running"
        gate.release.set()
        await child.wait_idle()
        again = ("c3", "session_result", json.dumps({"session_id": child.id}))
        parent_model.add(tool_call_response(again), text_response("got it"))
        parent.followup("collect it")
        await parent.wait_idle()
        collected = results(parent_model)[-1]
        assert not collected.is_error
        assert text(collected).endswith("Its final answer:\n\nBackground answer.")
        assert f"child session {child.id}" in text(collected)
        await child.aclose()  # a stored child is read from its log
        parent_model.add(tool_call_response(("c4", "session_result", again[2])))
        parent_model.add(text_response("read it"))
        parent.followup("once more")
        await parent.wait_idle()
        assert text(results(parent_model)[-1]) == text(collected)
        unknown = ("c5", "session_result", json.dumps({"session_id": "nobody"}))
        parent_model.add(tool_call_response(unknown), text_response("none"))
        parent.followup("and a stranger")
        await parent.wait_idle()
        missing = results(parent_model)[-1]
        assert missing.is_error
        assert "nobody" in text(missing)


async def test_cancelling_the_parent_cancels_its_waiting_child(tmp_path: Path) -> None:
    gate = Gate()
    parent_model = ScriptedModel([create("c1", "Take your time.")])
    models = {"scripted": parent_model, "child": ScriptedModel([gate])}
    async with compose(configured(tmp_path / "home"), models=models) as harness:
        parent = await harness.create("ask a child", model="scripted:m", cwd=tmp_path)
        await asyncio.wait_for(gate.asked.wait(), 60)  # a safety net: the child asks at once
        (child,) = children_of(harness, parent.id)
        parent.cancel()
        await parent.wait_idle()
        await child.wait_idle()
        assert turn_ends(parent.session.events)[-1]["reason"]["kind"] == "aborted"
        (end,) = turn_ends(child.session.events)
        assert end["reason"] == {"kind": "aborted", "reason": {"kind": "parent"}}
        interrupted = [
            e.to_wire()["data"]
            for e in child.session.events
            if e.type == "assistant/message" and e.to_wire()["data"].get("interrupted")
        ]
        assert [flat("assistant/message", m)["content"][0]["text"] for m in interrupted] == [
            "partial"
        ]
        assert child.status == "idle"
        assert not child.closed  # cancelled, not closed: it can take another prompt


async def test_closing_the_harness_interrupts_a_running_child_which_resumes(
    tmp_path: Path,
) -> None:
    gate = Gate()
    parent_model = ScriptedModel([create("c1", "Take your time.")])
    home = tmp_path / "home"
    harness = compose(
        configured(home), models={"scripted": parent_model, "child": ScriptedModel([gate])}
    )
    try:
        parent = await harness.create("ask a child", model="scripted:m", cwd=tmp_path)
        await asyncio.wait_for(gate.asked.wait(), 60)  # a safety net: the child asks at once
        (child,) = children_of(harness, parent.id)
        child_id = child.id
    finally:
        await harness.aclose()
    assert harness.interrupted_children == [child_id]
    assert interrupted_child_notice(child_id) == (
        f"child session {child_id} was still running; resume it with dsh run --resume {child_id}"
    )
    later = ScriptedModel([text_response("resumed and done")])
    async with compose(configured(home), models={"scripted": later, "child": later}) as again:
        events: list[SessionEvent] = list(await again.session_events(child_id) or [])
        ends = turn_ends(events)
        assert [e["reason"]["kind"] for e in ends] == ["aborted"]
        assert any(
            e.type == "assistant/message" and e.to_wire()["data"].get("interrupted") for e in events
        )
        resumed = await again.resume(child_id)
        resumed.followup("go on")
        await resumed.wait_idle()
        assert turn_ends(resumed.session.events)[-1]["reason"]["kind"] == "completed"
        assert again.interrupted_children == []


# -- `dsh run`: a child still running when the process ends is named on stderr ---------------


TIMEOUT = 120.0
"""Seconds one wait may take: a safety net against a hang."""
HANG = "hang"
"""In a script of conftest's model server: stall until released."""


def _session_create_call(server: Any, prompt: str) -> list[Any]:
    call = {
        "index": 0,
        "id": "call-1",
        "type": "function",
        "function": {"name": "session_create", "arguments": json.dumps({"prompt": prompt})},
    }
    return [
        server.chunk({"role": "assistant", "content": ""}),
        server.chunk({"tool_calls": [call]}),
        server.chunk({}, "tool_calls"),
        b"data: [DONE]\n\n",
    ]


def test_dsh_run_names_a_child_still_running_at_sigterm(
    dsh: Any,
    model_server: Any,
) -> None:
    server = model_server
    dsh.configure(server)
    child_answer = [server.chunk({"role": "assistant", "content": "partial"}), HANG]
    server.scripts = [_session_create_call(server, "CHILD: take your time"), child_answer]
    process = dsh.popen("run", "delegate", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert server.streaming.wait(TIMEOUT), "the child's model was never asked"
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(TIMEOUT)
    text = stderr.decode()
    assert process.returncode == 143, text
    (child_id,) = re.findall(r"^child session (\S+) was still running;", text, re.MULTILINE)
    assert f"resume it with dsh run --resume {child_id}" in text
    (log,) = (dsh.home / "sessions-plain").rglob(f"{child_id}/session.jsonl")
    (end,) = [e for e in map(json.loads, log.read_text().splitlines()) if e["type"] == "turn/end"]
    assert end["data"]["reason"]["kind"] == "aborted"
