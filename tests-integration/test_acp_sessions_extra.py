"""``dsh acp`` sessions beyond the basics, driven as an editor drives them (the installed
console script, the SDK's client side, the scripted loopback model; helpers from
``test_acp``): MCP servers the editor passes, started for their session alone and stopped with
the agent; model selection through the session's ``model`` option, logged as the terminal's
``/model``; image prompts, taken only for a model the configuration says reads images. Every
log written passes ``dsh sessions verify``."""

from __future__ import annotations

import asyncio
import base64
import json
import sys
from pathlib import Path
from typing import Any

import acp
import pytest
from acp.schema import (
    EnvVariable,
    HttpHeader,
    HttpMcpServer,
    ImageContentBlock,
    McpServerStdio,
    SseMcpServer,
    ToolCallProgress,
    UserMessageChunk,
)

from test_acp import DSH, TIMEOUT, Editor, Project, loopback, server, tool_call

__all__ = ["server"]  # the loopback model fixture, used by name

DEMO_SERVER = (
    Path(__file__).parents[1] / "packages" / "dsh-tool-mcp" / "tests" / "mcp_demo_server.py"
)
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


def demo(name: str = "demo", **env: str) -> McpServerStdio:
    """The dsh-tool-mcp tests' demo MCP server over stdio, as an editor passes it."""
    return McpServerStdio(
        name=name,
        command=sys.executable,
        args=[str(DEMO_SERVER), "stdio"],
        env=[EnvVariable(name=key, value=value) for key, value in env.items()],
    )


def tool_names(body: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in body.get("tools") or []}


def results(editor: Editor) -> dict[str, str]:
    """Each finished call's output text, by call id."""
    return {
        p.tool_call_id: p.raw_output["text"]
        for p in editor.of(ToolCallProgress)
        if p.status in ("completed", "failed") and isinstance(p.raw_output, dict)
    }


def gone(pid: int) -> bool:
    """No such process any more (or only its exit status, not yet collected)."""
    status = Path(f"/proc/{pid}/status")
    try:
        text = status.read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return "\nState:\tZ" in text or "\nState:\tX" in text


async def _prompt(conn: Any, session_id: str, *blocks: Any) -> Any:
    async with asyncio.timeout(TIMEOUT):
        return await conn.prompt(session_id=session_id, prompt=list(blocks))


def _configure(project: Project, extra: str) -> None:
    with (project.home / "config.toml").open("a") as config:
        config.write(extra)


# -- MCP servers the editor passes ----------------------------------------------------------


async def test_an_editors_mcp_server_serves_its_session_alone_and_stops_with_the_agent(
    tmp_path: Path, server: Any
) -> None:
    server.scripts = [
        tool_call("mcp__demo__env", {"name": "DEMO_MARK"}, "call-1"),
        tool_call("mcp__demo__pid", {}, "call-2"),
        loopback.text_answer("Done."),
        loopback.text_answer("No tools here."),
    ]
    project = Project(tmp_path, server)
    editor = Editor()
    async with project.acp(editor) as (conn, _process):
        async with asyncio.timeout(TIMEOUT):
            first = await conn.new_session(
                cwd=str(project.cwd), mcp_servers=[demo(DEMO_MARK="from the editor")]
            )
        answer = await _prompt(conn, first.session_id, acp.text_block("Use the server"))
        assert answer.stop_reason == "end_turn"
        async with asyncio.timeout(TIMEOUT):
            other = await conn.new_session(cwd=str(project.cwd), mcp_servers=[])
        await _prompt(conn, other.session_id, acp.text_block("Anything?"))
        outputs = results(editor)
        assert outputs["call-1"] == "from the editor"  # the env was passed as given
        pid = int(outputs["call-2"])
        assert not gone(pid)  # running while the agent serves the session
    assert "mcp__demo__env" in tool_names(server.bodies[0])
    assert not any(name.startswith("mcp__") for name in tool_names(server.bodies[-1]))
    assert gone(pid)  # the agent closed: its editor's server was stopped
    events = project.verified(first.session_id)
    calls = [e["data"] for e in events if e["type"] == "tool/call"]
    assert [c["name"] for c in calls] == ["mcp__demo__env", "mcp__demo__pid"]
    project.verified(other.session_id)


async def test_an_editors_http_server_gets_the_headers_it_was_given(
    tmp_path: Path, server: Any
) -> None:
    """An editor's streamable-HTTP server: its tools serve the session, each request carries the
    headers the editor passed (the demo server's ``header`` tool reads them back)."""
    web = await asyncio.create_subprocess_exec(
        sys.executable, str(DEMO_SERVER), "http", "0", stdout=asyncio.subprocess.PIPE
    )
    try:
        assert web.stdout is not None
        async with asyncio.timeout(TIMEOUT):
            port = int(await web.stdout.readline())
        server.scripts = [
            tool_call("mcp__web__header", {"name": "X-Team"}, "call-1"),
            loopback.text_answer("Done."),
        ]
        project = Project(tmp_path, server)
        editor = Editor()
        remote = HttpMcpServer(
            name="web",
            url=f"http://127.0.0.1:{port}/mcp",
            headers=[HttpHeader(name="X-Team", value="editors")],
            type="http",
        )
        async with project.acp(editor) as (conn, _process):
            async with asyncio.timeout(TIMEOUT):
                session = await conn.new_session(cwd=str(project.cwd), mcp_servers=[remote])
            answer = await _prompt(conn, session.session_id, acp.text_block("Ask the server"))
    finally:
        web.kill()
        await web.wait()
    assert answer.stop_reason == "end_turn"
    assert "mcp__web__header" in tool_names(server.bodies[0])
    assert results(editor)["call-1"] == "editors"
    project.verified(session.session_id)


async def test_an_editors_server_named_like_a_configured_one_is_refused_naming_it(
    tmp_path: Path, server: Any
) -> None:
    project = Project(tmp_path, server)
    _configure(
        project,
        f"[mcp.servers.demo]\ncommand = {json.dumps(sys.executable)}\n"
        f'args = [{json.dumps(str(DEMO_SERVER))}, "stdio"]\n',
    )
    async with project.acp(Editor()) as (conn, _process):
        async with asyncio.timeout(TIMEOUT):
            with pytest.raises(acp.RequestError) as same:
                await conn.new_session(cwd=str(project.cwd), mcp_servers=[demo("demo")])
            with pytest.raises(acp.RequestError) as sse:
                await conn.new_session(
                    cwd=str(project.cwd),
                    mcp_servers=[SseMcpServer(name="feed", url="http://127.0.0.1:9/sse",
                                              headers=[], type="sse")],
                )  # fmt: skip
            # the refusals left no session behind, and the agent still serves
            session = await conn.new_session(cwd=str(project.cwd), mcp_servers=[])
    assert same.value.code == -32602
    assert "'demo'" in str(same.value)
    assert "configured MCP server" in str(same.value)
    assert same.value.data == {"server": "demo"}
    assert sse.value.code == -32602
    assert "'feed'" in str(sse.value)
    listed = json.loads(project.dsh("sessions", "list", "--json").stdout)
    assert [row["session_id"] for row in listed] == [session.session_id]


async def test_an_editors_server_that_fails_to_start_is_named_and_the_session_goes_on(
    tmp_path: Path, server: Any
) -> None:
    server.scripts = [loopback.text_answer("Still here.")]
    project = Project(tmp_path, server)
    missing = str(tmp_path / "no-such-mcp-server")
    broken = McpServerStdio(name="broken", command=missing, args=[], env=[])
    editor = Editor()
    async with project.acp(editor) as (conn, _process):
        async with asyncio.timeout(TIMEOUT):
            session = await conn.new_session(cwd=str(project.cwd), mcp_servers=[broken])
        await editor.wait_for(lambda: "'broken'" in editor.text())
        answer = await _prompt(conn, session.session_id, acp.text_block("Hello"))
    assert answer.stop_reason == "end_turn"
    notice = editor.text()
    assert "MCP server 'broken' did not start" in notice
    assert "runs without its tools" in notice
    assert notice.endswith("Still here.")
    assert not any(name.startswith("mcp__") for name in tool_names(server.bodies[0]))
    project.verified(session.session_id)


# -- model selection ------------------------------------------------------------------------


def _model_option(response: Any) -> Any:
    (option,) = [o for o in response.config_options if o.id == "model"]
    return option


async def test_the_model_option_switches_the_route_as_slash_model_does(
    tmp_path: Path, server: Any
) -> None:
    server.scripts = [loopback.text_answer("From the other model.")]
    project = Project(tmp_path, server)
    _configure(project, '[models."local:other-model"]\n')
    async with project.acp(Editor()) as (conn, _process):
        async with asyncio.timeout(TIMEOUT):
            session = await conn.new_session(cwd=str(project.cwd), mcp_servers=[])
            option = _model_option(session)
            assert option.category == "model"
            assert option.current_value == "local:test-model"
            assert [o.value for o in option.options] == ["local:test-model", "local:other-model"]
            switched = await conn.set_config_option(
                config_id="model", session_id=session.session_id, value="local:other-model"
            )
            assert _model_option(switched).current_value == "local:other-model"
            with pytest.raises(acp.RequestError) as unknown:
                await conn.set_config_option(
                    config_id="model", session_id=session.session_id, value="local:no-such"
                )
        answer = await _prompt(conn, session.session_id, acp.text_block("Who are you?"))
    assert answer.stop_reason == "end_turn"
    assert server.bodies[-1]["model"] == "other-model"
    assert unknown.value.code == -32602
    assert "'local:no-such'" in str(unknown.value)
    assert unknown.value.data == {"modelId": "local:no-such"}
    events = project.verified(session.session_id)
    runs = [e["data"] for e in events if e["type"] == "command/run"]
    assert runs == [
        {"commandId": runs[0]["commandId"], "name": "model", "args": "local:other-model",
         "source": {"kind": "user"}}
    ]  # fmt: skip
    done = [e["data"] for e in events if e["type"] == "command/done"]
    assert done == [
        {"commandId": runs[0]["commandId"], "kind": "success", "text": "model: local:other-model"}
    ]
    headers = [e["data"] for e in events if e["type"] == "request/header"]
    assert '"other-model"' in json.dumps(headers[-1])


async def test_a_session_with_an_editors_server_keeps_it_across_a_model_switch(
    tmp_path: Path, server: Any
) -> None:
    server.scripts = [tool_call("mcp__demo__echo", {"text": "still there"}, "call-1"),
                      loopback.text_answer("Ok.")]  # fmt: skip
    project = Project(tmp_path, server)
    _configure(project, '[models."local:other-model"]\n')
    editor = Editor()
    async with project.acp(editor) as (conn, _process):
        async with asyncio.timeout(TIMEOUT):
            session = await conn.new_session(cwd=str(project.cwd), mcp_servers=[demo()])
            await conn.set_config_option(
                config_id="model", session_id=session.session_id, value="local:other-model"
            )
        await _prompt(conn, session.session_id, acp.text_block("Echo"))
    assert results(editor)["call-1"] == "still there"
    assert server.bodies[0]["model"] == "other-model"
    assert "mcp__demo__echo" in tool_names(server.bodies[0])
    project.verified(session.session_id)


# -- images ---------------------------------------------------------------------------------


async def test_images_are_offered_and_taken_only_for_a_model_that_reads_them(
    tmp_path: Path, server: Any
) -> None:
    server.scripts = [loopback.text_answer("A tiny picture.")]
    project = Project(tmp_path, server)
    _configure(project, '[models."local:vision-model"]\nimages = true\n')
    image = acp.image_block(base64.b64encode(PNG).decode(), "image/png")
    async with acp.spawn_agent_process(
        Editor(), str(DSH), "acp", "--model", "local:vision-model",
        cwd=project.cwd, env=project.env(),
    ) as (conn, _process):  # fmt: skip
        async with asyncio.timeout(TIMEOUT):
            offered = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
    assert offered.agent_capabilities.prompt_capabilities.image is True
    async with project.acp(Editor()) as (conn, _process):
        async with asyncio.timeout(TIMEOUT):
            session = await conn.new_session(cwd=str(project.cwd), mcp_servers=[])
            with pytest.raises(acp.RequestError) as refused:
                await conn.prompt(
                    session_id=session.session_id, prompt=[acp.text_block("Look"), image]
                )
            await conn.set_config_option(
                config_id="model", session_id=session.session_id, value="local:vision-model"
            )
            forged = acp.image_block(base64.b64encode(b"not a png").decode(), "image/png")
            with pytest.raises(acp.RequestError) as not_png:
                await conn.prompt(session_id=session.session_id, prompt=[forged])
        answer = await _prompt(conn, session.session_id, acp.text_block("Look"), image)
    assert refused.value.code == -32602
    assert "local:test-model" in str(refused.value)
    assert "text only" in str(refused.value)
    assert not_png.value.code == -32602
    assert "image/png" in str(not_png.value)
    assert answer.stop_reason == "end_turn"
    (body,) = server.bodies
    (content,) = [
        m["content"] for m in body["messages"]
        if m["role"] == "user" and isinstance(m["content"], list)
        and any(part.get("type") == "image_url" for part in m["content"])
    ]  # fmt: skip
    assert {"type": "text", "text": "Look"} in content
    (image_part,) = [part for part in content if part["type"] == "image_url"]
    url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert image_part["image_url"]["url"] == url
    events = project.verified(session.session_id)
    users = [json.dumps(e["data"]) for e in events if e["type"] == "user/message"]
    (logged,) = [user for user in users if '"type": "image"' in user]
    assert base64.b64encode(PNG).decode() in logged
    assert '"Look"' in logged
    replayed = Editor()  # loaded in a new process, the prompt shows its image again
    async with project.acp(replayed) as (conn, _process):
        async with asyncio.timeout(TIMEOUT):
            await conn.load_session(
                cwd=str(project.cwd), session_id=session.session_id, mcp_servers=[]
            )
    shown = [
        u.content for _, u in replayed.updates
        if isinstance(u, UserMessageChunk) and isinstance(u.content, ImageContentBlock)
    ]  # fmt: skip
    assert [(i.data, i.mime_type) for i in shown] == [(base64.b64encode(PNG).decode(), "image/png")]
