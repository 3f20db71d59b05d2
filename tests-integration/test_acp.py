"""``dsh acp`` as an editor drives it: the installed console script as a subprocess, spoken to
by the official SDK's client side (the editor's end of the protocol), against the scripted
OpenAI-compatible loopback model of dsh-agent-core's tests. Every wait is on an event or a
message, with a generous safety timeout; every log written passes ``dsh sessions verify`` and
holds only event types the TypeScript harness knows."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import acp
import pytest
from acp.schema import (
    AgentMessageChunk,
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileEditToolCallContent,
    FileSystemCapabilities,
    PermissionOption,
    ReadTextFileResponse,
    RequestPermissionResponse,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UserMessageChunk,
    WriteTextFileResponse,
)

from dsh_session import CORE_EVENT_TYPES, PLUGIN_EVENT_TYPES

DSH = Path(sys.executable).parent / "dsh"
TIMEOUT = 120.0
"""Seconds any one wait may take: a safety net against a hang, not a speed bar."""


def _load_loopback() -> Any:
    """dsh-agent-core's scripted loopback model server (its tests' conftest), loaded by path."""
    path = Path(__file__).parents[1] / "packages" / "dsh-agent-core" / "tests" / "conftest.py"
    spec = importlib.util.spec_from_file_location("agent_core_loopback", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["agent_core_loopback"] = module
    spec.loader.exec_module(module)
    return module


loopback = _load_loopback()


def tool_call(name: str, arguments: dict[str, Any], call_id: str) -> list[Any]:
    """An answer that calls tool ``name`` with ``arguments``."""
    chunk = loopback.chunk
    call = {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return [
        chunk({"role": "assistant", "content": ""}),
        chunk({"tool_calls": [call]}),
        chunk({}, "tool_calls"),
        b"data: [DONE]\n\n",
    ]


class Editor:
    """The editor's end: records every update and answers permission requests with
    ``permission`` (an option id, or ``None`` for cancelled)."""

    def __init__(self, permission: str | None = "allow-once") -> None:
        self.updates: list[tuple[str, Any]] = []
        self.permission = permission
        self.asked: list[tuple[ToolCallUpdate, list[PermissionOption]]] = []
        self.changed = asyncio.Event()
        self.buffers: dict[str, str] = {}
        """The open buffers (path -> text) ``fs/*`` requests read and write, when offered."""
        self.fs_requests: list[tuple[str, str, str | None]] = []
        """Every ``fs/*`` request: (``read`` | ``write``, path, content written)."""
        self.fs_error: acp.RequestError | None = None
        self.fs_hang = False

    def on_connect(self, conn: Any) -> None:
        pass

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        self.changed.set()

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:  # fmt: skip
        self.asked.append((tool_call, options))
        if self.permission is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        outcome = AllowedOutcome(outcome="selected", option_id=self.permission)
        return RequestPermissionResponse(outcome=outcome)

    async def _fs(self, kind: str, path: str, content: str | None = None) -> None:
        self.fs_requests.append((kind, path, content))
        self.changed.set()
        if self.fs_error is not None:
            raise self.fs_error
        if self.fs_hang:
            await asyncio.Event().wait()  # never answers; cancelled with the connection

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:  # fmt: skip
        await self._fs("read", path)
        if path not in self.buffers:
            raise acp.RequestError.resource_not_found(path)
        return ReadTextFileResponse(content=self.buffers[path])

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        await self._fs("write", path, content)
        self.buffers[path] = content
        return WriteTextFileResponse()

    def of(self, kind: type[Any]) -> list[Any]:
        return [update for _, update in self.updates if isinstance(update, kind)]

    def text(self, kind: type[Any] = AgentMessageChunk) -> str:
        return "".join(
            u.content.text for u in self.of(kind) if isinstance(u.content, TextContentBlock)
        )

    async def wait_for(self, check: Callable[[], bool]) -> None:
        async with asyncio.timeout(TIMEOUT):
            while not check():
                self.changed.clear()
                await self.changed.wait()


class Project:
    """A project folder, a DSH_HOME and the config pointing ``local`` at the loopback model."""

    def __init__(self, root: Path, server: Any, sandbox: str = "danger-full-access") -> None:
        self.cwd = root / "project"
        self.cwd.mkdir()
        self.home = root / "dsh-home"
        self.home.mkdir()
        (self.home / "config.toml").write_text(
            'model = "local:test-model"\n'
            f'[sandbox]\nmode = "{sandbox}"\n'
            f'[providers.local]\nbase_url = "{server.base_url}"\napi_key_env = "LOCAL_LLM_KEY"\n'
        )

    def env(self, **extra: str) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.cwd.parent),
            "DSH_HOME": str(self.home),
            "LANG": "C.UTF-8",
            "LOCAL_LLM_KEY": "sk-loopback-test",
            **extra,
        }

    def dsh(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(DSH), *args], cwd=self.cwd, env=self.env(), capture_output=True, text=True,
            timeout=TIMEOUT, check=False,
        )  # fmt: skip

    def events(self, session_id: str) -> list[dict[str, Any]]:
        exported = self.dsh("sessions", "export", session_id)
        assert exported.returncode == 0, exported.stderr
        return [json.loads(line) for line in exported.stdout.splitlines()[1:]]

    def verified(self, session_id: str) -> list[dict[str, Any]]:
        """The session's events, after ``dsh sessions verify`` passed on its log and every type
        was checked to be one the TypeScript harness knows."""
        verify = self.dsh("sessions", "verify", session_id)
        assert verify.returncode == 0, verify.stdout + verify.stderr
        events = self.events(session_id)
        assert {e["type"] for e in events} <= CORE_EVENT_TYPES | PLUGIN_EVENT_TYPES
        return events

    @asynccontextmanager
    async def acp(
        self, editor: Editor, *args: str, fs: bool = False, **env: str
    ) -> AsyncIterator[tuple[Any, asyncio.subprocess.Process]]:
        """``dsh acp ARGS`` connected to ``editor``, initialized (offering ``fs/*`` when
        ``fs``)."""
        async with acp.spawn_agent_process(
            editor, str(DSH), "acp", *args, cwd=self.cwd, env=self.env(**env)
        ) as (conn, process):
            capabilities = ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs)
            )
            async with asyncio.timeout(TIMEOUT):
                await conn.initialize(
                    protocol_version=acp.PROTOCOL_VERSION, client_capabilities=capabilities
                )
            yield conn, process


@pytest.fixture
def server() -> Iterator[Any]:
    model = loopback.LoopbackModel().start()
    try:
        yield model
    finally:
        model.stop()


async def _prompt(conn: Any, session_id: str, text: str) -> Any:
    async with asyncio.timeout(TIMEOUT):
        return await conn.prompt(session_id=session_id, prompt=[acp.text_block(text)])


async def test_initialize_says_what_the_agent_takes(tmp_path: Path, server: Any) -> None:
    project = Project(tmp_path, server)
    async with acp.spawn_agent_process(
        Editor(), str(DSH), "acp", cwd=project.cwd, env=project.env()
    ) as (conn, _process):
        async with asyncio.timeout(TIMEOUT):
            answer = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
    assert answer.protocol_version == acp.PROTOCOL_VERSION
    capabilities = answer.agent_capabilities
    assert capabilities.load_session is True
    assert capabilities.prompt_capabilities.embedded_context is True
    assert capabilities.prompt_capabilities.image is False
    assert answer.auth_methods == []
    assert answer.agent_info.name == "dsh"


async def test_a_new_session_streams_its_answer_and_logs_a_normal_session(
    tmp_path: Path, server: Any
) -> None:
    server.scripts = [loopback.text_answer("Hello", " from", " dsh.")]
    project = Project(tmp_path, server)
    editor = Editor()
    async with project.acp(editor) as (conn, _process):
        session = await conn.new_session(cwd=str(project.cwd), mcp_servers=[])
        assert session.modes.current_mode_id == "danger-full-access"
        assert {m.id for m in session.modes.available_modes} == {
            "read-only", "workspace-write", "danger-full-access"
        }  # fmt: skip
        answer = await _prompt(conn, session.session_id, "Say hello")
    assert answer.stop_reason == "end_turn"
    assert editor.text() == "Hello from dsh."
    assert len(editor.of(AgentMessageChunk)) == 3  # streamed, one chunk per delta
    events = project.verified(session.session_id)
    assert [e["type"] for e in events].count("turn/end") == 1
    listed = project.dsh("sessions", "list", "--json")
    assert session.session_id in listed.stdout


async def test_bash_asks_once_and_allow_for_session_answers_the_next_call(
    tmp_path: Path, server: Any
) -> None:
    marker = tmp_path / "outside.txt"
    escalated = {
        "command": f"echo widened >> {marker}",
        "description": "Write outside",
        "sandbox_permissions": "danger-full-access",
        "justification": "The test writes outside the workspace.",
    }
    server.scripts = [
        tool_call("bash", escalated, "call-1"),
        tool_call("bash", escalated, "call-2"),
        loopback.text_answer("Done."),
    ]
    project = Project(tmp_path, server, sandbox="workspace-write")
    editor = Editor(permission="allow-for-session")
    async with project.acp(editor) as (conn, _process):
        session = await conn.new_session(cwd=str(project.cwd), mcp_servers=[])
        assert session.modes.current_mode_id == "workspace-write"
        answer = await _prompt(conn, session.session_id, "Write outside twice")
    assert answer.stop_reason == "end_turn"
    assert len(editor.asked) == 1  # the second call was answered by the grant
    tool_call_update, options = editor.asked[0]
    assert tool_call_update.tool_call_id == "call-1"
    assert {o.kind for o in options} == {"allow_once", "allow_always", "reject_once"}
    assert marker.read_text() == "widened\nwidened\n"
    starts = editor.of(ToolCallStart)
    assert [(s.tool_call_id, s.kind, s.status) for s in starts] == [
        ("call-1", "execute", "pending"), ("call-2", "execute", "pending")
    ]  # fmt: skip
    progress = editor.of(ToolCallProgress)
    for call_id in ("call-1", "call-2"):
        statuses = [p.status for p in progress if p.tool_call_id == call_id and p.status]
        assert statuses[0] == "in_progress"
        assert statuses[-1] == "completed"
    events = project.verified(session.session_id)
    grants = [e for e in events if e["type"] == "command/run"]
    assert [g["data"]["name"] for g in grants] == ["allow-for-session"]
    assert grants[0]["data"]["args"] == "bash danger-full-access"
    decided = [e["data"]["outcome"] for e in events if e["type"] == "approval/decided"]
    assert decided == ["allowed-once", "allowed-once"]


async def test_a_cancelled_permission_request_never_runs_the_call(
    tmp_path: Path, server: Any
) -> None:
    marker = tmp_path / "never.txt"
    escalated = {
        "command": f"touch {marker}",
        "description": "Write outside",
        "sandbox_permissions": "danger-full-access",
        "justification": "The test asks.",
    }
    server.scripts = [tool_call("bash", escalated, "call-1"), loopback.text_answer("Ok.")]
    project = Project(tmp_path, server, sandbox="workspace-write")
    editor = Editor(permission=None)
    async with project.acp(editor) as (conn, _process):
        session = await conn.new_session(cwd=str(project.cwd), mcp_servers=[])
        await _prompt(conn, session.session_id, "Try it")
    assert not marker.exists()
    progress = [p for p in editor.of(ToolCallProgress) if p.status]
    assert progress[-1].status == "failed"
    events = project.verified(session.session_id)
    decided = [e["data"]["outcome"] for e in events if e["type"] == "approval/decided"]
    assert decided == ["cancelled"]


async def test_an_edit_shows_its_diff_as_tool_call_content(tmp_path: Path, server: Any) -> None:
    project = Project(tmp_path, server)
    target = project.cwd / "notes.txt"
    server.scripts = [
        tool_call("write", {"file_path": "notes.txt", "content": "first line\n"}, "call-1"),
        loopback.text_answer("Written."),
    ]
    editor = Editor()
    async with project.acp(editor) as (conn, _process):
        session = await conn.new_session(cwd=str(project.cwd), mcp_servers=[])
        await _prompt(conn, session.session_id, "Write notes")
    (start,) = editor.of(ToolCallStart)
    assert start.kind == "edit"
    assert start.locations[0].path == str(target)
    (diff,) = [c for c in start.content if isinstance(c, FileEditToolCallContent)]
    assert (diff.path, diff.old_text, diff.new_text) == (str(target), None, "first line\n")
    assert target.read_text() == "first line\n"
    project.verified(session.session_id)


async def test_cancel_mid_stream_ends_the_turn_cancelled_and_keeps_what_was_said(
    tmp_path: Path, server: Any
) -> None:
    chunk = loopback.chunk
    server.scripts = [
        [chunk({"role": "assistant", "content": ""}), chunk({"content": "Partial answer"}),
         loopback.LoopbackModel.HANG],
        loopback.text_answer("After."),
    ]  # fmt: skip
    project = Project(tmp_path, server)
    editor = Editor()
    async with project.acp(editor) as (conn, _process):
        session = await conn.new_session(cwd=str(project.cwd), mcp_servers=[])
        turn = asyncio.ensure_future(_prompt(conn, session.session_id, "Go on and on"))
        await editor.wait_for(lambda: "Partial answer" in editor.text())
        await conn.cancel(session_id=session.session_id)
        answer = await turn
        assert answer.stop_reason == "cancelled"
        again = await _prompt(conn, session.session_id, "Once more")
        assert again.stop_reason == "end_turn"
    server.release.set()
    events = project.verified(session.session_id)
    ends = [e["data"]["reason"]["kind"] for e in events if e["type"] == "turn/end"]
    assert ends == ["aborted", "completed"]
    said = [e for e in events if e["type"] == "assistant/message"]
    assert "Partial answer" in json.dumps(said[0])


async def test_load_in_a_new_process_replays_the_history(tmp_path: Path, server: Any) -> None:
    server.scripts = [loopback.text_answer("The answer is 42.")]
    project = Project(tmp_path, server)
    async with project.acp(Editor()) as (conn, _process):
        session = await conn.new_session(cwd=str(project.cwd), mcp_servers=[])
        await _prompt(conn, session.session_id, "What is the answer?")
    server.scripts = [loopback.text_answer("Still 42.")]
    editor = Editor()
    async with project.acp(editor) as (conn, _process):
        async with asyncio.timeout(TIMEOUT):
            await conn.load_session(
                cwd=str(project.cwd), session_id=session.session_id, mcp_servers=[]
            )
        assert editor.text(UserMessageChunk) == "What is the answer?"
        assert editor.text() == "The answer is 42."
        answer = await _prompt(conn, session.session_id, "Again?")
        assert answer.stop_reason == "end_turn"
    assert editor.text().endswith("Still 42.")
    events = project.verified(session.session_id)
    assert [e["type"] for e in events].count("turn/end") == 2


async def test_an_editor_that_goes_away_mid_turn_leaves_a_balanced_log(
    tmp_path: Path, server: Any
) -> None:
    chunk = loopback.chunk
    server.scripts = [
        [chunk({"role": "assistant", "content": ""}), chunk({"content": "Working"}),
         loopback.LoopbackModel.HANG],
    ]  # fmt: skip
    project = Project(tmp_path, server)
    editor = Editor()
    async with project.acp(editor) as (conn, process):
        session = await conn.new_session(cwd=str(project.cwd), mcp_servers=[])
        turn = asyncio.ensure_future(_prompt(conn, session.session_id, "Start"))
        await editor.wait_for(lambda: "Working" in editor.text())
        assert process.stdin is not None
        process.stdin.close()  # the editor closes the connection
        async with asyncio.timeout(TIMEOUT):
            code = await process.wait()
        turn.cancel()
    assert code == 0
    server.release.set()
    events = project.verified(session.session_id)
    assert events[-1]["type"] == "turn/end"
    assert events[-1]["data"]["reason"]["kind"] == "aborted"


async def test_unknown_sessions_methods_and_malformed_lines_get_errors(
    tmp_path: Path, server: Any
) -> None:
    project = Project(tmp_path, server)
    process = await asyncio.create_subprocess_exec(
        str(DSH), "acp", cwd=project.cwd, env=project.env(),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert process.stdin is not None
    assert process.stdout is not None

    async def ask(message: dict[str, Any]) -> dict[str, Any]:
        assert process.stdin is not None
        assert process.stdout is not None
        process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        async with asyncio.timeout(TIMEOUT):
            return dict(json.loads(await process.stdout.readline()))

    try:
        process.stdin.write(b"{this is not json\n")
        unknown = await ask({"id": 1, "method": "no/such/method", "params": {}})
        assert unknown["error"]["code"] == -32601
        init = await ask({"id": 2, "method": "initialize", "params": {"protocolVersion": 1}})
        assert init["result"]["protocolVersion"] == 1
        prompt = {"sessionId": "no-such-session", "prompt": [{"type": "text", "text": "hi"}]}
        lost = await ask({"id": 3, "method": "session/prompt", "params": prompt})
        assert lost["error"]["code"] == -32002
        assert "no-such-session" in lost["error"]["message"]
        load = {"sessionId": "missing", "cwd": str(project.cwd), "mcpServers": []}
        missing = await ask({"id": 4, "method": "session/load", "params": load})
        assert missing["error"]["code"] == -32002
        relative = {"cwd": "relative/path", "mcpServers": []}
        refused = await ask({"id": 5, "method": "session/new", "params": relative})
        assert refused["error"]["code"] == -32602
        assert "relative/path" in refused["error"]["message"]
    finally:
        process.stdin.close()
        async with asyncio.timeout(TIMEOUT):
            assert await process.wait() == 0


async def test_a_missing_key_is_refused_naming_the_variable(tmp_path: Path, server: Any) -> None:
    project = Project(tmp_path, server)
    async with project.acp(Editor(), LOCAL_LLM_KEY="") as (conn, _process):
        with pytest.raises(acp.RequestError) as refused:
            async with asyncio.timeout(TIMEOUT):
                await conn.new_session(cwd=str(project.cwd), mcp_servers=[])
    assert refused.value.code == -32000
    assert "LOCAL_LLM_KEY" in str(refused.value)


async def test_set_mode_pins_the_sandbox_mode_in_the_log(tmp_path: Path, server: Any) -> None:
    project = Project(tmp_path, server, sandbox="workspace-write")
    async with project.acp(Editor()) as (conn, _process):
        session = await conn.new_session(cwd=str(project.cwd), mcp_servers=[])
        async with asyncio.timeout(TIMEOUT):
            await conn.set_session_mode(session_id=session.session_id, mode_id="read-only")
            with pytest.raises(acp.RequestError) as refused:
                await conn.set_session_mode(session_id=session.session_id, mode_id="yolo")
    assert "yolo" in str(refused.value)
    events = project.verified(session.session_id)
    modes = [e["data"]["mode"] for e in events if e["type"] == "sandbox/mode"]
    assert modes == ["workspace-write", "read-only"]


def _tool_texts(body: dict[str, Any]) -> str:
    """The tool results a model request carried, as one text."""
    return "\n".join(
        str(m.get("content")) for m in body.get("messages", []) if m.get("role") == "tool"
    )


async def test_files_go_through_the_editor_when_it_offers_them(tmp_path: Path, server: Any) -> None:
    project = Project(tmp_path, server)
    target = project.cwd / "notes.txt"
    target.write_text("saved line\n")
    server.scripts = [
        tool_call("read", {"file_path": "notes.txt"}, "call-1"),
        tool_call(
            "edit",
            {"file_path": "notes.txt", "old_string": "unsaved", "new_string": "edited"},
            "call-2",
        ),
        loopback.text_answer("Edited."),
    ]
    editor = Editor()
    editor.buffers[str(target)] = "unsaved line\n"  # the user typed, and did not save
    async with project.acp(editor, fs=True) as (conn, _process):
        session = await conn.new_session(cwd=str(project.cwd), mcp_servers=[])
        answer = await _prompt(conn, session.session_id, "Edit the notes")
    assert answer.stop_reason == "end_turn"
    told = _tool_texts(server.bodies[1])
    assert "1: unsaved line" in told  # the model read the buffer, not the disk
    assert "1: saved line" not in told
    assert editor.fs_requests == [
        ("read", str(target), None),
        ("read", str(target), None),  # the buffer again: unchanged since the model read it
        ("write", str(target), "edited line\n"),
    ]
    assert editor.buffers[str(target)] == "edited line\n"
    assert target.read_text() == "saved line\n"  # dsh did not write the disk; the editor may
    starts = {s.tool_call_id: s for s in editor.of(ToolCallStart)}
    assert (starts["call-1"].kind, starts["call-2"].kind) == ("read", "edit")
    (diff,) = [c for c in starts["call-2"].content if isinstance(c, FileEditToolCallContent)]
    assert (diff.path, diff.old_text, diff.new_text) == (str(target), "unsaved", "edited")
    finished = [p for p in editor.of(ToolCallProgress) if p.status in ("completed", "failed")]
    assert [(p.tool_call_id, p.status) for p in finished] == [
        ("call-1", "completed"), ("call-2", "completed")
    ]  # fmt: skip
    project.verified(session.session_id)


async def test_an_editor_error_fails_the_call_naming_the_path_and_the_turn_goes_on(
    tmp_path: Path, server: Any
) -> None:
    project = Project(tmp_path, server)
    target = project.cwd / "notes.txt"
    target.write_text("on disk\n")
    server.scripts = [
        tool_call("read", {"file_path": "notes.txt"}, "call-1"),
        loopback.text_answer("The editor could not read it."),
    ]
    editor = Editor()
    editor.fs_error = acp.RequestError(-32603, "Internal error", {"details": "buffer is locked"})
    async with project.acp(editor, fs=True) as (conn, _process):
        session = await conn.new_session(cwd=str(project.cwd), mcp_servers=[])
        answer = await _prompt(conn, session.session_id, "Read the notes")
    assert answer.stop_reason == "end_turn"
    assert editor.text() == "The editor could not read it."
    told = _tool_texts(server.bodies[1])
    assert f"{target} could not be read through the editor" in told
    assert "buffer is locked" in told
    assert "on disk" not in told  # no fallback to the disk behind the editor's back
    (failed,) = [p for p in editor.of(ToolCallProgress) if p.status == "failed"]
    assert failed.tool_call_id == "call-1"
    events = project.verified(session.session_id)
    (result,) = [e for e in events if e["type"] == "tool/result"]
    assert "FS_ACCESS_FAILED" in json.dumps(result)
    assert [e["data"]["reason"]["kind"] for e in events if e["type"] == "turn/end"] == ["completed"]


async def test_a_sandbox_refusal_asks_the_editor_nothing(tmp_path: Path, server: Any) -> None:
    project = Project(tmp_path, server, sandbox="workspace-write")
    outside = tmp_path / "outside.txt"
    server.scripts = [
        tool_call("write", {"file_path": str(outside), "content": "x\n"}, "call-1"),
        loopback.text_answer("Refused outside."),
        tool_call("write", {"file_path": "inside.txt", "content": "x\n"}, "call-2"),
        loopback.text_answer("Refused inside."),
    ]
    editor = Editor()
    async with project.acp(editor, fs=True) as (conn, _process):
        session = await conn.new_session(cwd=str(project.cwd), mcp_servers=[])
        first = await _prompt(conn, session.session_id, "Write outside the project")
        async with asyncio.timeout(TIMEOUT):
            await conn.set_session_mode(session_id=session.session_id, mode_id="read-only")
        second = await _prompt(conn, session.session_id, "Write inside the project")
    assert (first.stop_reason, second.stop_reason) == ("end_turn", "end_turn")
    assert editor.fs_requests == []  # refused before the editor was asked anything
    assert "the sandbox refuses to write" in _tool_texts(server.bodies[1])
    assert "workspace-write" in _tool_texts(server.bodies[1])
    assert _tool_texts(server.bodies[3]).count("the sandbox refuses to write") == 2
    assert "(read-only" in _tool_texts(server.bodies[3])
    assert not outside.exists()
    assert not (project.cwd / "inside.txt").exists()
    project.verified(session.session_id)


async def test_cancel_while_the_editor_does_not_answer_ends_the_turn(
    tmp_path: Path, server: Any
) -> None:
    project = Project(tmp_path, server)
    server.scripts = [
        tool_call("read", {"file_path": "notes.txt"}, "call-1"),
        loopback.text_answer("After."),
    ]
    editor = Editor()
    editor.fs_hang = True
    async with project.acp(editor, fs=True) as (conn, _process):
        session = await conn.new_session(cwd=str(project.cwd), mcp_servers=[])
        turn = asyncio.ensure_future(_prompt(conn, session.session_id, "Read the notes"))
        await editor.wait_for(lambda: bool(editor.fs_requests))
        await conn.cancel(session_id=session.session_id)
        answer = await turn
        assert answer.stop_reason == "cancelled"
    events = project.verified(session.session_id)
    assert events[-1]["type"] == "turn/end"
    assert events[-1]["data"]["reason"]["kind"] == "aborted"
