"""`DshAcpAgent`: the ACP agent over a composed dsh `Harness`.

Each ACP session is an ordinary dsh session: ``session/new`` creates one in the editor's
working directory, ``session/load`` resumes a stored one (any dsh session: one started in a
terminal too) and replays its conversation, ``session/prompt`` runs one turn and streams it,
``session/cancel`` cancels it (the log keeps what was said), ``session/set_mode`` sets the sandbox
mode as the terminal's ``/permissions`` does, ``session/set_config_option`` with the ``model``
option switches its route as the terminal's ``/model`` does. MCP servers the editor passes are
started for their session alone (`dsh_acp._client_mcp`)."""

from __future__ import annotations

import contextlib
import importlib.metadata
import logging
import os
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from acp import PROTOCOL_VERSION, RequestError
from acp.schema import (
    AgentCapabilities,
    ClientCapabilities,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionConfigOptionSelect,
    SessionMode,
    SessionModeState,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    StopReason,
    Usage,
)

from dsh_acp._approvals import EditorApprovals, PermissionClient
from dsh_acp._client_mcp import (
    client_mcp_unavailable,
    failure_notice,
    start_client_mcp_servers,
)
from dsh_acp._errors import (
    AcpInputError,
    SessionBusyError,
    UnknownConfigOptionError,
    UnknownModelError,
    UnknownSessionError,
    to_request_error,
)
from dsh_acp._files import FsClient, editor_files
from dsh_acp._model_select import MODEL_OPTION, model_option, session_routes
from dsh_acp._prompt import PromptBlock, prompt_message
from dsh_acp._updates import UpdateSink, UpdateStream, UpdateTranslator
from dsh_agent import Agent
from dsh_agent_core import (
    DshError,
    Harness,
    SessionMcpServers,
    extra_installed,
    log_command_done,
    log_command_run,
    logged_approval_policy,
    logged_sandbox_mode,
    pin_permissions,
    route_of,
    split_route,
    switch_model,
)
from dsh_session import SessionEvent, message_parts
from dsh_shell import SANDBOX_MODES, SandboxMode
from dsh_tools import ToolExecution

__all__ = ["MAX_SESSION_ID_CHARS", "SESSION_MODES", "DshAcpAgent"]

_log = logging.getLogger("dsh_acp")

T = TypeVar("T")

MAX_SESSION_ID_CHARS = 512
"""The longest session id an editor may name."""

SESSION_MODES: Final[dict[SandboxMode, tuple[str, str]]] = {
    "read-only": ("Read only", "Commands and file tools may read; nothing is written."),
    "workspace-write": (
        "Workspace write",
        "Commands and file tools may write inside the session's folder; asks to go further.",
    ),
    "danger-full-access": (
        "Full access",
        "Commands run unconfined, with your rights; nothing is asked.",
    ),
}
"""The session modes offered: the sandbox modes, as ``session/set_mode`` ids."""

_STOP_REASONS: Final[dict[str, StopReason]] = {
    "completed": "end_turn",
    "max-tokens": "max_tokens",
    "blocked": "refusal",
    "aborted": "cancelled",
}


class AgentClient(UpdateSink, PermissionClient, FsClient):
    """What the agent uses of the editor's end of the connection."""


@dataclass
class _Live:
    """One session the editor drives."""

    agent: Agent
    translator: UpdateTranslator
    stream: UpdateStream
    unsubscribe: Callable[[], None]
    mcp: SessionMcpServers | None = None
    """The MCP servers the editor passed for this session (stopped when it ends)."""
    unroute_files: Callable[[], None] = lambda: None
    """Withdraws this session's file route through the editor (a no-op without one)."""
    switching: bool = False
    """A model switch is reopening the session: every other request waits its turn (busy)."""

    def refuse_if_busy(self, what: str) -> None:
        """`SessionBusyError` while a turn runs or the model is being switched."""
        if self.switching or self.agent.status == "running":
            raise SessionBusyError(self.agent.id, what)


def _version() -> str:
    try:
        return importlib.metadata.version("dsh-acp")
    except importlib.metadata.PackageNotFoundError:
        return "0"


async def _served(call: Awaitable[T]) -> T:
    """``call``, its dsh errors as the JSON-RPC errors the editor reads."""
    try:
        return await call
    except AcpInputError as error:
        raise to_request_error(error) from None
    except DshError as error:
        message = str(error)
        if "environment variable" in message and "is not set" in message:
            raise RequestError(-32000, message, {"message": message}) from None  # auth required
        raise RequestError(-32603, message, {"message": message}) from None


class DshAcpAgent:
    """The ACP agent (``acp.run_agent(DshAcpAgent(harness))``): ``model`` is the
    ``provider:model`` of new sessions (default: the configuration's)."""

    def __init__(self, harness: Harness, *, model: str | None = None) -> None:
        self.harness = harness
        self.model = model
        self._client: AgentClient | None = None
        self._sessions: dict[str, _Live] = {}
        self._client_capabilities = ClientCapabilities()
        self._disposers: list[Callable[[], None]] = []

    # -- the connection -----------------------------------------------------------------------

    def on_connect(self, conn: Any) -> None:
        """Keep the editor's end and register the approval answerer and output listener."""
        self._client = conn
        approvals = EditorApprovals(conn, self._cwd_of)
        self._disposers.append(self.harness.extensions.approval.add(approvals))
        self._disposers.append(self.harness.extensions.tool_output.add(self._tool_output))

    def _cwd_of(self, session_id: str) -> str | None:
        live = self._sessions.get(session_id)
        if live is None:
            return None
        return live.agent.cwd or os.getcwd()

    @property
    def client(self) -> AgentClient:
        """The editor's end of the connection."""
        if self._client is None:
            raise RuntimeError("the agent is not connected")
        return self._client

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        """The protocol version (the client's, when this agent speaks it) and what the agent
        offers: loading sessions, prompts of text, resource links and embedded text, and images
        when the model of new sessions takes them; MCP servers over stdio, and over streamable
        HTTP when the ``[mcp]`` extra is installed (never SSE)."""
        if client_capabilities is not None:
            self._client_capabilities = client_capabilities
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(
                    image=self._takes_images(self.model or self.harness.config.model),
                    audio=False,
                    embedded_context=True,
                ),
                mcp_capabilities=McpCapabilities(http=extra_installed("mcp"), sse=False),
            ),
            auth_methods=[],
            agent_info=Implementation(name="dsh", title="DeepSeek Harness", version=_version()),
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        """No method is offered: a provider's key comes from its environment variable."""
        raise RequestError.invalid_params(
            {"message": f"no authentication method {method_id[:100]!r}: set the provider's key "
             "variable (dsh config shows which) before the editor starts dsh acp"}
        )  # fmt: skip

    # -- sessions -----------------------------------------------------------------------------

    def _attach(self, agent: Agent, mcp: SessionMcpServers | None = None) -> _Live:
        # the file tools of this session read and write the editor's buffers when it offers them
        # (routed first: a session another front end already routes is refused, nothing started)
        files = editor_files(self.client, agent.id, self._client_capabilities)
        unroute = self.harness.files.route_access(agent.id, files) if files is not None else None
        translator = UpdateTranslator(agent.cwd)
        stream = UpdateStream(self.client, agent.id)
        live = _Live(agent, translator, stream, lambda: None, mcp)
        if unroute is not None:
            live.unroute_files = unroute
        self._bind(live, agent)
        self._sessions[agent.id] = live
        return live

    def _bind(self, live: _Live, agent: Agent) -> None:
        """Make ``agent`` (the session reopened, after a model switch) the one ``live`` shows."""
        live.unsubscribe()

        def on_event(event: SessionEvent) -> None:
            live.stream.push(live.translator.live(event))

        live.agent = agent
        live.unsubscribe = agent.session.subscribe(on_event).close

    def _takes_images(self, route: str) -> bool:
        provider, model = split_route(route)
        return model is not None and self.harness.config.takes_images(provider, model)

    def _options(self, agent: Agent) -> list[SessionConfigOptionSelect]:
        return [model_option(self.harness, route_of(agent))]

    def _notify(self, live: _Live, text: str | None) -> None:
        """Tell the editor ``text`` as an agent message of the session (nothing when None)."""
        if text:
            from acp import update_agent_message_text

            live.stream.push([update_agent_message_text(text[:4096])])

    def _modes(self, agent: Agent) -> SessionModeState:
        mode = logged_sandbox_mode(agent.session) or self.harness.config.sandbox.mode
        return SessionModeState(
            current_mode_id=mode,
            available_modes=[
                SessionMode(id=mode_id, name=name, description=description)
                for mode_id, (name, description) in SESSION_MODES.items()
            ],
        )

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        """A new dsh session working in ``cwd`` (an absolute path to a folder)."""
        return await _served(self._new_session(cwd, mcp_servers))

    async def _new_session(self, cwd: str, mcp_servers: list[Any] | None) -> NewSessionResponse:
        if not os.path.isabs(cwd) or not os.path.isdir(cwd):  # noqa: ASYNC240 (one stat)
            raise AcpInputError(f"cwd {cwd[:4096]!r} is not an absolute path to a folder")
        self.harness.check_route(self.model)
        self.harness.check_sandbox(self.harness.config.sandbox.mode)
        mcp = await start_client_mcp_servers(self.harness, mcp_servers, cwd)
        try:
            tools = mcp.tools() if mcp is not None else ()
            agent = await self.harness.create(model=self.model, cwd=cwd, tools=tools)
            try:  # one that cannot be attached (its files routed elsewhere) is not left running
                live = self._attach(agent, mcp)
            except BaseException:
                await agent.aclose()
                raise
        except BaseException:
            if mcp is not None:
                await mcp.aclose()
            raise
        # queued now, sent by the stream's task: after this answer, which the SDK queues as
        # soon as this returns
        notice = failure_notice(mcp) if mcp is not None else client_mcp_unavailable(mcp_servers)
        self._notify(live, notice)
        return NewSessionResponse(
            session_id=agent.id, modes=self._modes(agent), config_options=self._options(agent)
        )

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        """Resume the stored session ``session_id`` and replay its conversation as updates
        (all sent before the answer)."""
        return await _served(self._load_session(session_id, cwd, mcp_servers))

    async def _load_session(
        self, session_id: str, cwd: str, mcp_servers: list[Any] | None
    ) -> LoadSessionResponse:
        if len(session_id) > MAX_SESSION_ID_CHARS:
            raise UnknownSessionError(session_id[:100] + "…", "the id is too long")
        live = self._sessions.get(session_id)
        notice: str | None = None
        if live is not None and mcp_servers:
            notice = "This session is open here already: it keeps the MCP servers it has."
        if live is None:
            stored = await self.harness.persistence.stat(session_id)
            if stored is None:
                raise UnknownSessionError(session_id, "no such session is stored")
            already_live = self.harness.get(session_id) is not None
            mcp = None
            # the editor's servers run where the session works (its own cwd, as stored)
            where = stored.header.cwd or cwd
            if already_live and mcp_servers:
                notice = "This session is open in this agent already: no MCP server was started."
            elif os.path.isabs(where) and os.path.isdir(where):  # noqa: ASYNC240 (one stat)
                mcp = await start_client_mcp_servers(self.harness, mcp_servers, where)
                notice = client_mcp_unavailable(mcp_servers) if mcp is None else None
            elif mcp_servers:
                raise AcpInputError(
                    f"the session's folder {where[:4096]!r} is gone: its MCP servers cannot start"
                )
            try:
                tools = mcp.tools() if mcp is not None else ()
                agent = await self.harness.resume(session_id, tools=tools)
                mode = logged_sandbox_mode(agent.session) or self.harness.config.sandbox.mode
                try:
                    self.harness.check_sandbox(mode)
                    live = self._attach(agent, mcp)
                except BaseException:
                    if not already_live:  # resumed by this call: give its write ownership back
                        await agent.aclose()
                    raise
            except BaseException:
                if mcp is not None:
                    await mcp.aclose()
                raise
            if mcp is not None:
                notice = failure_notice(mcp)
        live.stream.push(live.translator.replay(live.agent.session.events))
        self._notify(live, notice)
        await live.stream.drain()
        return LoadSessionResponse(
            modes=self._modes(live.agent), config_options=self._options(live.agent)
        )

    def _live(self, session_id: str) -> _Live:
        live = self._sessions.get(session_id[: MAX_SESSION_ID_CHARS + 1])
        if live is None:
            raise UnknownSessionError(
                session_id[:MAX_SESSION_ID_CHARS],
                "no such session here (create it with session/new or session/load)",
            )
        return live

    async def prompt(
        self, session_id: str, prompt: list[PromptBlock], **kwargs: Any
    ) -> PromptResponse:
        """Run one turn on ``prompt`` and stream it; the answer comes once the turn ended and
        every update was sent."""
        return await _served(self._prompt(session_id, prompt))

    async def _prompt(self, session_id: str, prompt: list[PromptBlock]) -> PromptResponse:
        live = self._live(session_id)
        live.refuse_if_busy("a prompt")
        route = route_of(live.agent)
        message = prompt_message(prompt, route=route, images=self._takes_images(route))
        start = len(live.agent.session.events)
        live.translator.last_reason = None
        live.agent.followup(message)
        try:
            await live.agent.wait_idle()
        except BaseException:
            live.agent.cancel()  # the request itself was cancelled: the editor went away
            raise
        await live.stream.drain()
        reason = live.translator.last_reason
        kind = reason.get("kind") if isinstance(reason, dict) else None
        stop = _STOP_REASONS.get(str(kind))
        if stop is None:  # an error: say so in the answer, the turn is over
            problem = reason.get("error") if isinstance(reason, dict) else None
            live.stream.push(_error_notice(kind, problem))
            await live.stream.drain()
            stop = "end_turn"
        return PromptResponse(stop_reason=stop, usage=_usage(live.agent.session.events[start:]))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """Cancel the session's running turn (nothing when none runs or the session is not
        this agent's)."""
        live = self._sessions.get(session_id[: MAX_SESSION_ID_CHARS + 1])
        if live is not None:
            live.agent.cancel()

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        """Set the session's sandbox mode (one of `SESSION_MODES`), keeping whether it asks,
        as the terminal's ``/permissions`` does; refused while a turn runs."""
        return await _served(self._set_mode(session_id, mode_id))

    async def _set_mode(self, session_id: str, mode_id: str) -> SetSessionModeResponse:
        live = self._live(session_id)
        mode = next((m for m in SANDBOX_MODES if m == mode_id), None)
        if mode is None:
            raise AcpInputError(f"mode {mode_id[:100]!r} is not one of {', '.join(SESSION_MODES)}")
        live.refuse_if_busy("a mode change")
        self.harness.check_sandbox(mode)
        session = live.agent.session
        policy = logged_approval_policy(session) or self.harness.config.sandbox.approval_policy
        pin_permissions(session, mode, "never" if policy == "never" else "ask")
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        """Set the session's ``model`` option (one of the routes it offers): its route switches
        as the terminal's ``/model`` does, logged the same way; refused while a turn runs."""
        return await _served(self._set_option(config_id, session_id, value))

    async def _set_option(
        self, config_id: str, session_id: str, value: str | bool
    ) -> SetSessionConfigOptionResponse:
        live = self._live(session_id)
        if config_id != MODEL_OPTION:
            raise UnknownConfigOptionError(config_id[:100])
        offered = session_routes(self.harness, route_of(live.agent))
        if not isinstance(value, str) or value not in offered:
            raise UnknownModelError(str(value)[:200], offered)
        live.refuse_if_busy("a model change")
        command_id = f"command-{uuid.uuid4()}"
        tools = live.mcp.tools() if live.mcp is not None else ()
        live.switching = True  # the session closes and reopens: nothing else may reach it
        try:
            route = await switch_model(
                self.harness,
                live.agent,
                value,
                attach=lambda agent: self._bind(live, agent),
                tools=tools,
            )
        except Exception as error:
            if self.harness.get(live.agent.id) is live.agent:  # reopened (on its old route)
                session = live.agent.session
                log_command_run(session, command_id, "model", value)
                log_command_done(session, command_id, "error", str(error) or type(error).__name__)
            raise
        finally:
            live.switching = False
        log_command_run(live.agent.session, command_id, "model", value)
        log_command_done(live.agent.session, command_id, "success", f"model: {route}")
        return SetSessionConfigOptionResponse(config_options=self._options(live.agent))

    # -- tool output --------------------------------------------------------------------------

    def _tool_output(self, execution: ToolExecution, text: str) -> None:
        session_id = execution.session_id
        live = self._sessions.get(session_id) if session_id is not None else None
        if live is not None:
            updates = live.translator.output(execution.call_id, text)
            live.stream.push_output(execution.call_id, updates)

    # -- closing ------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Cancel every running turn and stop sending updates; a session the editor passed MCP
        servers for is closed and its servers stopped, the harness closes the other logs."""
        for dispose in reversed(self._disposers):
            dispose()
        self._disposers.clear()
        for live in list(self._sessions.values()):
            live.agent.cancel()
            live.unsubscribe()
            live.unroute_files()
            with contextlib.suppress(Exception):
                await live.stream.aclose()
        sessions = list(self._sessions.values())
        self._sessions.clear()
        for live in sessions:  # the editor's MCP servers end with their session
            if live.mcp is not None:
                try:  # first the agent: no call of its servers' tools is still running
                    agent = self.harness.get(live.agent.id)
                    if agent is not None:
                        await agent.aclose()
                except Exception as error:
                    _log.warning("session %s did not close cleanly: %s", live.agent.id, error)
                finally:
                    await live.mcp.aclose()


def _error_notice(kind: object, problem: object) -> list[Any]:
    from acp import update_agent_message_text

    detail = problem.get("message") if isinstance(problem, dict) else problem
    text = f"\n\n(the turn ended: {kind or 'unknown'}{f': {detail}' if detail else ''})"
    return [update_agent_message_text(text[:4096])]


def _usage(events: Sequence[SessionEvent]) -> Usage | None:
    """The tokens the turn's model calls used, from their ``assistant/message`` usage."""
    totals = {"inputTokens": 0, "outputTokens": 0, "reasoningTokens": 0, "cacheReadTokens": 0}
    seen = False
    for event in events:
        if event.type != "assistant/message" or not isinstance(event.data, dict):
            continue
        usage = event.data.get("usage")
        if not isinstance(usage, dict) and message_parts(event.type, event.data) is not None:
            message = event.data.get("message")
            usage = message.get("usage") if isinstance(message, dict) else None
        if not isinstance(usage, dict):
            continue
        seen = True
        for key in totals:
            value = usage.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                totals[key] += value
    if not seen:
        return None
    return Usage(
        input_tokens=totals["inputTokens"],
        output_tokens=totals["outputTokens"],
        total_tokens=totals["inputTokens"] + totals["outputTokens"],
        thought_tokens=totals["reasoningTokens"] or None,
        cached_read_tokens=totals["cacheReadTokens"] or None,
    )
