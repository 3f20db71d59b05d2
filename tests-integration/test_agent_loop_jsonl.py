"""dsh-agent-loop over the real JSONL backend: create, resume, fork and crashes, on disk.

The crash cases run ``agent_loop_child.py`` in a real process that the test (or the child's own
checkpoint policy, at an exact point) kills with SIGKILL; the parent then resumes the session
with a fresh loop over a fresh backend instance. Nothing waits on time: the parent waits for the
lines the child writes (with a generous safety-net timeout) and for its exit. Every loop runs
the invariant companion (``check_requests=True``) and must end with no refused request; every
test compares the log file with ``agent.session.events``, line for line, once the agent is
closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import signal
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from dsh_agent_loop import AgentLoop, DuplicateAgentError, LoopAgent, PersistenceNotConfiguredError
from dsh_bash_local import LocalBashConfig, LocalBashExecutor
from dsh_llm import Model, ToolResultMessage
from dsh_llm.testing import ScriptedModel, text_response, tool_call_response
from dsh_persistence import SessionAlreadyOwnedError, SessionPersistenceNotFoundError
from dsh_persistence_jsonl import JsonlPersistence
from dsh_session import (
    Session,
    SessionEvent,
    SessionHeader,
    encode_event,
    encode_header_line,
)
from dsh_tool_bash import BashTool, JobRegistry, ShellEnvRegistry
from dsh_tools import ToolRegistry
from shapes import flat

CHILD = Path(__file__).parent / "agent_loop_child.py"
TIMEOUT = 120.0
"""Seconds a child may take to reach a marker: a safety net against a hang, not a speed bar."""


def _child_module() -> Any:
    spec = importlib.util.spec_from_file_location("agent_loop_child", CHILD)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


child = _child_module()
OPTIONS = child.OPTIONS

MakeLoop = Callable[..., AgentLoop]


# -- helpers ------------------------------------------------------------------------------


def data(event: SessionEvent) -> Any:
    return event.to_wire()["data"]


def kinds(events: Sequence[SessionEvent]) -> list[str]:
    """Event types in order, ``assistant/chunk`` left out."""
    return [e.type for e in events if e.type != "assistant/chunk"]


def of_type(events: Sequence[SessionEvent], kind: str) -> list[SessionEvent]:
    return [e for e in events if e.type == kind]


@pytest.fixture
async def loops() -> AsyncIterator[MakeLoop]:
    """``loops(model, root=..., tools=..., persistence=...)``: a loop over a fresh JSONL instance
    of ``root`` (or the given one) with the invariant companion on. Each is closed after the
    test and must have refused no request."""
    made: list[tuple[AgentLoop, JsonlPersistence | None]] = []

    def make(
        model: Model,
        *,
        root: Path | None,
        tools: ToolRegistry | None = None,
        persistence: JsonlPersistence | None = None,
        **kwargs: Any,
    ) -> AgentLoop:
        owned = child.open_store(root) if persistence is None and root is not None else None
        loop = AgentLoop(
            model,
            tools if tools is not None else child.tool_registry(),
            persistence=persistence if persistence is not None else owned,
            check_requests=True,
            **kwargs,
        )
        made.append((loop, owned))
        return loop

    yield make
    for loop, owned in made:
        await loop.aclose()
        if owned is not None:
            await owned.aclose()
    for loop, _ in made:
        assert loop.invariant_failures == []


async def _stored(root: Path, session_id: str) -> tuple[SessionHeader, int, list[SessionEvent]]:
    """The header, fork cut and events of a session, read through a fresh instance."""
    store = child.open_store(root)
    try:
        async with await store.open(session_id, "read") as reader:
            return reader.header, reader.inherited_event_count, list(await reader.read())
    finally:
        await store.aclose()


def _file_lines(root: Path, header: SessionHeader) -> list[bytes]:
    raw = child.open_store(root).log_path(header).read_bytes()
    assert raw.endswith(b"\n")
    return raw[:-1].split(b"\n")


def _expected_lines(session: Session) -> list[bytes]:
    return [
        encode_header_line(session.header, session.inherited_event_count),
        *(encode_event(e) for e in session.events),
    ]


async def assert_on_disk(root: Path, agent: LoopAgent) -> None:
    """The log file is the header line and then exactly the agent's events, encoded; a fresh
    instance reads the same events back."""
    session = agent.session
    assert _file_lines(root, session.header) == _expected_lines(session)
    header, inherited, events = await _stored(root, session.id)
    assert header == session.header
    assert inherited == session.inherited_event_count
    assert [encode_event(e) for e in events] == [encode_event(e) for e in session.events]


def assert_contiguous(events: Sequence[SessionEvent]) -> None:
    assert [e.seq for e in events] == list(range(len(events)))


@contextlib.asynccontextmanager
async def _child(
    root: Path, session_id: str, mode: str
) -> AsyncIterator[asyncio.subprocess.Process]:
    """A running ``agent_loop_child.py``; killed and reaped if the block fails."""
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, str(CHILD), str(root), session_id, mode),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        yield process
    except BaseException:
        if process.returncode is None:
            process.kill()
            await process.communicate()
        raise


async def _failure(process: asyncio.subprocess.Process, why: str) -> AssertionError:
    if process.returncode is None:
        process.kill()
    _, err = await process.communicate()
    return AssertionError(f"{why}; child stderr:\n{err.decode(errors='replace')[-3000:]}")


async def _expect(process: asyncio.subprocess.Process, marker: str) -> None:
    """Read the child's stdout up to the line ``marker``."""
    assert process.stdout is not None
    while True:
        try:
            line = await asyncio.wait_for(process.stdout.readline(), TIMEOUT)
        except TimeoutError:
            raise await _failure(process, f"no {marker!r} within {TIMEOUT}s") from None
        if not line:
            raise await _failure(process, f"the child ended before {marker!r}")
        if line.decode().strip() == marker:
            return


async def _sigkill(process: asyncio.subprocess.Process) -> None:
    process.send_signal(signal.SIGKILL)
    await _reaped_by_sigkill(process)


async def _reaped_by_sigkill(process: asyncio.subprocess.Process) -> None:
    try:
        _, err = await asyncio.wait_for(process.communicate(), TIMEOUT)
    except TimeoutError:
        raise await _failure(process, f"the child did not exit within {TIMEOUT}s") from None
    assert process.returncode == -signal.SIGKILL, err.decode(errors="replace")[-3000:]


async def _continue_with_turn_2(agent: LoopAgent, model: ScriptedModel, before: int) -> None:
    """A followup after resume runs turn 2 at the next seqs, opened by a ``resume`` header (no
    ``request/context``: the route is the one the log already holds)."""
    agent.followup("go on")
    await agent.wait_idle()
    events = agent.session.events
    assert_contiguous(events)
    turn_2 = list(events[before:])
    assert kinds(turn_2) == [
        "turn/start",
        "step/start",
        "user/message",
        "request/header",
        "assistant/message",
        "step/end",
        "turn/end",
    ]
    assert data(turn_2[0])["turn"] == 2
    assert {data(e)["turn"] for e in turn_2 if "turn" in data(e)} == {2}
    assert data(of_type(turn_2, "step/start")[0]) == {"turn": 2, "step": 1}
    assert data(of_type(turn_2, "request/header")[0])["reason"] == "resume"
    assert data(turn_2[-1]) == {"turn": 2, "reason": {"kind": "completed"}}
    assert len(model.requests) == 1


# -- crashes --------------------------------------------------------------------------------


@pytest.mark.crash
async def test_a_kill_mid_tool_resumes_with_tool_outcome_unknown(
    tmp_path: Path, loops: MakeLoop
) -> None:
    async with _child(tmp_path, "mid-tool", "block") as process:
        await _expect(process, "READY")
        await _expect(process, "TOOL_RUNNING")
        # The body runs after the before-tool checkpoint: its call is already in the log.
        _, _, live = await _stored(tmp_path, "mid-tool")
        assert live[-1].type == "tool/call"
        # The child owns the session: a resume in another process is refused, and leaves no
        # agent behind.
        other = loops(ScriptedModel(), root=tmp_path)
        with pytest.raises(SessionAlreadyOwnedError):
            await other.resume("mid-tool")
        assert other.agents == []
        await _sigkill(process)

    _, _, stored = await _stored(tmp_path, "mid-tool")
    assert_contiguous(stored)
    assert kinds(stored) == [
        "turn/start",
        "step/start",
        "user/message",
        "request/header",
        "request/context",
        "assistant/message",
        "tool/call",
    ]
    call = stored[-1]
    assert data(call)["callId"] == "c1"

    model = ScriptedModel([text_response("Recovered.")])
    loop = loops(model, root=tmp_path)
    agent = await loop.resume("mid-tool", system=child.SYSTEM)
    closers = list(agent.session.events[len(stored) :])
    assert [e.type for e in closers] == ["tool/result", "step/end", "turn/end"]
    result = data(closers[0])
    assert result["turn"] == 1
    assert result["step"] == 1
    assert result["error"]["code"] == "TOOL_OUTCOME_UNKNOWN"
    assert closers[0].source_event_seqs == (call.seq,)
    assert data(closers[1]) == {"turn": 1, "step": 1}
    assert data(closers[2]) == {"turn": 1, "reason": {"kind": "interrupted"}}
    # The closers went through the resumed agent's handle: a reader sees them already.
    _, _, after = await _stored(tmp_path, "mid-tool")
    assert [encode_event(e) for e in after] == [encode_event(e) for e in agent.session.events]

    await _continue_with_turn_2(agent, model, len(stored) + len(closers))
    results = [m for m in model.requests[0].messages if isinstance(m, ToolResultMessage)]
    assert [(m.content[0].tool_call_id, m.content[0].is_error) for m in results] == [("c1", True)]
    assert "outcome is unknown" in json.dumps(results[0].to_wire())
    await agent.aclose()
    await assert_on_disk(tmp_path, agent)


@pytest.mark.crash
async def test_a_kill_before_a_call_is_recorded_resumes_with_tool_not_started(
    tmp_path: Path, loops: MakeLoop
) -> None:
    # The child kills itself at c2's before-tool checkpoint (see agent_loop_child.py): c2's
    # tool/call exists only in the dead process's memory. c1 had run, but its result was never
    # appended either, so c1's outcome is unknown.
    async with _child(tmp_path, "before-call", "kill-before-call") as process:
        await _expect(process, "READY")
        await _expect(process, "KILLING")
        await _reaped_by_sigkill(process)

    _, _, stored = await _stored(tmp_path, "before-call")
    assert_contiguous(stored)
    assert kinds(stored)[-2:] == ["assistant/message", "tool/call"]
    message, call_1 = of_type(stored, "assistant/message")[0], stored[-1]
    asked = [
        b["id"] for b in flat(message.type, data(message))["content"] if b["type"] == "tool-call"
    ]
    assert asked == ["c1", "c2"]
    assert [data(e)["callId"] for e in of_type(stored, "tool/call")] == ["c1"]

    model = ScriptedModel([text_response("Recovered.")])
    agent = await loops(model, root=tmp_path).resume("before-call")
    closers = list(agent.session.events[len(stored) :])
    assert [e.type for e in closers] == ["tool/result", "tool/result", "step/end", "turn/end"]
    unknown, not_started = data(closers[0]), data(closers[1])
    assert unknown["error"]["code"] == "TOOL_OUTCOME_UNKNOWN"
    assert closers[0].source_event_seqs == (call_1.seq,)
    assert not_started["error"]["code"] == "TOOL_NOT_STARTED"
    assert closers[1].source_event_seqs is None  # no tool/call to cite
    assert "c2" in json.dumps(not_started)
    assert data(closers[3]) == {"turn": 1, "reason": {"kind": "interrupted"}}

    await _continue_with_turn_2(agent, model, len(stored) + len(closers))
    results = [m for m in model.requests[0].messages if isinstance(m, ToolResultMessage)]
    assert [m.content[0].tool_call_id for m in results] == ["c1", "c2"]
    assert all(m.content[0].is_error for m in results)
    await agent.aclose()
    await assert_on_disk(tmp_path, agent)


@pytest.mark.crash
async def test_a_kill_while_the_model_streams_keeps_the_request_and_closes_the_step(
    tmp_path: Path, loops: MakeLoop
) -> None:
    async with _child(tmp_path, "mid-request", "hang-model") as process:
        await _expect(process, "READY")
        await _expect(process, "MODEL_CALLED")
        await _sigkill(process)

    # The before-request checkpoint made everything before the call durable; nothing after it
    # was logged (the model never answered).
    _, _, stored = await _stored(tmp_path, "mid-request")
    assert kinds(stored) == [
        "turn/start",
        "step/start",
        "user/message",
        "request/header",
        "request/context",
    ]
    assert data(of_type(stored, "user/message")[0])["content"][0]["text"] == child.PROMPT

    model = ScriptedModel([text_response("Recovered.")])
    agent = await loops(model, root=tmp_path).resume("mid-request", system=child.SYSTEM)
    closers = list(agent.session.events[len(stored) :])
    assert [data(e) for e in closers] == [
        {"turn": 1, "step": 1},
        {"turn": 1, "reason": {"kind": "interrupted"}},
    ]
    assert [e.type for e in closers] == ["step/end", "turn/end"]
    await _continue_with_turn_2(agent, model, len(stored) + len(closers))
    assert [m.role for m in model.requests[0].messages] == ["user", "user"]
    await agent.aclose()
    await assert_on_disk(tmp_path, agent)


# -- resume ---------------------------------------------------------------------------------


async def _one_turn(loops: MakeLoop, root: Path, session_id: str) -> list[SessionEvent]:
    """Run a tool round trip as turn 1 of a new session and close it; its events."""
    model = ScriptedModel([tool_call_response(("c1", "quick", {})), text_response("Done.")])
    agent = await loops(model, root=root).create(
        session_id, options=OPTIONS, cwd=child.cwd_of(root), system=child.SYSTEM
    )
    agent.followup("call quick")
    await agent.wait_idle()
    await agent.aclose()
    await assert_on_disk(root, agent)
    return list(agent.session.events)


async def test_resume_continues_turn_numbers_and_seqs(tmp_path: Path, loops: MakeLoop) -> None:
    first = await _one_turn(loops, tmp_path, "s1")
    assert data(first[-1]) == {"turn": 1, "reason": {"kind": "completed"}}

    model = ScriptedModel([text_response("Again.")])
    agent = await loops(model, root=tmp_path).resume("s1", system=child.SYSTEM)
    assert [encode_event(e) for e in agent.session.events] == [encode_event(e) for e in first]
    assert agent.options.provider == OPTIONS.provider  # taken from the log's request/header
    assert agent.options.model == OPTIONS.model
    await _continue_with_turn_2(agent, model, len(first))
    await agent.aclose()
    await assert_on_disk(tmp_path, agent)


async def test_a_second_resume_of_a_live_session_is_refused(
    tmp_path: Path, loops: MakeLoop
) -> None:
    await _one_turn(loops, tmp_path, "s1")
    shared = child.open_store(tmp_path)
    try:
        owner = loops(ScriptedModel(), root=None, persistence=shared)
        agent = await owner.resume("s1")
        with pytest.raises(DuplicateAgentError):  # the same loop: refused before any open
            await owner.resume("s1")
        same_backend = loops(ScriptedModel(), root=None, persistence=shared)
        with pytest.raises(SessionAlreadyOwnedError):
            await same_backend.resume("s1")
        other_backend = loops(ScriptedModel(), root=tmp_path)
        with pytest.raises(SessionAlreadyOwnedError):
            await other_backend.resume("s1")
        assert same_backend.agents == []
        assert other_backend.agents == []
        await agent.aclose()  # releases the write handle
        again = await other_backend.resume("s1")
        assert [e.seq for e in again.session.events] == [e.seq for e in agent.session.events]
        await again.aclose()
    finally:
        await shared.aclose()


async def test_resume_without_persistence_or_session_is_a_clear_error(
    tmp_path: Path, loops: MakeLoop
) -> None:
    bare = loops(ScriptedModel(), root=None)
    with pytest.raises(PersistenceNotConfiguredError, match="persistence is not configured"):
        await bare.resume("s1")
    loop = loops(ScriptedModel(), root=tmp_path)
    with pytest.raises(SessionPersistenceNotFoundError):
        await loop.resume("no-such-session")
    # A created session that never ran a turn never materialized: there is nothing to resume.
    empty = await loop.create("empty", options=OPTIONS, cwd=child.cwd_of(tmp_path))
    await empty.aclose()
    assert not child.open_store(tmp_path).log_path(empty.session.header).exists()
    with pytest.raises(SessionPersistenceNotFoundError):
        await loop.resume("empty")
    assert loop.agents == []


# -- the file -------------------------------------------------------------------------------


async def test_the_header_is_line_one_after_the_first_turn(tmp_path: Path, loops: MakeLoop) -> None:
    model = ScriptedModel([text_response("Hello.")])
    agent = await loops(model, root=tmp_path).create(
        "s1", options=OPTIONS, cwd=child.cwd_of(tmp_path)
    )
    path = child.open_store(tmp_path).log_path(agent.session.header)
    assert not path.exists()  # materialized lazily, by the first checkpoint
    agent.followup("hi")
    await agent.wait_idle()
    # The turn-end checkpoint has flushed: the file is complete while the agent still lives.
    lines = _file_lines(tmp_path, agent.session.header)
    assert lines[0] == encode_header_line(agent.session.header)
    assert json.loads(lines[0])["type"] == "session"
    assert json.loads(lines[0])["id"] == "s1"
    assert lines == _expected_lines(agent.session)
    await agent.aclose()
    await assert_on_disk(tmp_path, agent)


@pytest.mark.parametrize("parent_state", ["live", "stored"])
async def test_fork_continues_turn_numbers_and_names_its_parent_on_disk(
    tmp_path: Path, loops: MakeLoop, parent_state: str
) -> None:
    parent_model = ScriptedModel([tool_call_response(("c1", "quick", {})), text_response("One.")])
    loop = loops(parent_model, root=tmp_path)
    parent = await loop.create(
        "parent", options=OPTIONS, cwd=child.cwd_of(tmp_path), system=child.SYSTEM
    )
    parent.followup("first")
    await parent.wait_idle()
    parent_events = list(parent.session.events)
    if parent_state == "stored":
        await parent.aclose()
        source: str | LoopAgent = "parent"
        fork_loop = loops(ScriptedModel([text_response("Two.")]), root=tmp_path)
    else:
        source = parent
        fork_loop = loop
        parent_model.add(text_response("Two."))
    forked = await fork_loop.fork(source, session_id="child", system=child.SYSTEM)
    seed_length = len(parent_events)
    assert forked.session.header.parent_session == "parent"
    assert forked.session.header.is_seeded is True
    assert forked.session.inherited_event_count == seed_length
    forked.followup("second")
    await forked.wait_idle()

    events = forked.session.events
    assert_contiguous(events)
    assert [encode_event(e) for e in events[:seed_length]] == [
        encode_event(e) for e in parent_events
    ]
    assert events[seed_length].type == "session/end-seed"
    own = list(events[seed_length + 1 :])
    assert data(own[0])["turn"] == 2
    assert data(own[-1]) == {"turn": 2, "reason": {"kind": "completed"}}
    assert data(of_type(own, "request/header")[0])["reason"] == "resume"
    await forked.aclose()
    await assert_on_disk(tmp_path, forked)

    head = json.loads(_file_lines(tmp_path, forked.session.header)[0])
    assert head["type"] == "session"
    assert head["id"] == "child"
    assert head["parentSession"] == "parent"
    assert head["seedLength"] == seed_length
    header, inherited, _ = await _stored(tmp_path, "child")
    assert header.is_seeded is True
    assert inherited == seed_length
    # The parent's own log is untouched by the fork.
    assert [encode_event(e) for e in (await _stored(tmp_path, "parent"))[2]] == [
        encode_event(e) for e in parent_events
    ]


async def test_a_bash_call_over_the_local_executor_lands_in_the_log(
    tmp_path: Path, loops: MakeLoop
) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    config = LocalBashConfig(timeout=30, grace=1.0, spill_dir=tmp_path / "spill")
    async with LocalBashExecutor(config) as executor, JobRegistry() as jobs:
        tools = ToolRegistry()
        tools.register(BashTool(executor, ShellEnvRegistry(tmp_path / "home"), jobs=jobs))
        command = {"command": 'echo "$DSH_SESSION_ID in $PWD"', "description": "Say where"}
        model = ScriptedModel([tool_call_response(("c1", "bash", command)), text_response("Ok.")])
        agent = await loops(model, root=tmp_path, tools=tools).create(
            "bash-session", options=OPTIONS, cwd=str(workspace)
        )
        agent.followup("where are you?")
        await agent.wait_idle()
        await agent.aclose()
    result = flat("tool/result", data(of_type(agent.session.events, "tool/result")[0]))
    assert result["isError"] is False
    assert result["content"] == [{"type": "text", "text": f"bash-session in {workspace}\n"}]
    assert data(agent.session.events[-1]) == {"turn": 1, "reason": {"kind": "completed"}}
    await assert_on_disk(tmp_path, agent)
