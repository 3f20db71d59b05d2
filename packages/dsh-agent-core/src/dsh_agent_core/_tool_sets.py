"""The tool sets agents are offered: the built-in tools' names, the application's own tools
beside them, one agent loop per preset, each offering its preset's tools (MCP servers'
tools included once the servers have started), and a loop of its own for a session given tools
of its own (an editor's MCP servers), which no other session sees."""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dsh_agent import Extensions
from dsh_agent_core._config import Config
from dsh_agent_core._errors import DshError, UnknownPresetError
from dsh_agent_core._extras import McpServerSet, mcp_tools
from dsh_agent_loop import AgentLoop, LoopAgent
from dsh_hooks import HookRunner
from dsh_llm import Model
from dsh_persistence import SessionPersistence
from dsh_tools import DuplicateToolError, ResultSpill, ToolDefinition, ToolRegistry

__all__ = [
    "BUILT_IN_TOOL_NAMES",
    "DEFAULT_TOOL_NAMES",
    "OPT_IN_TOOL_NAMES",
    "PresetLoops",
    "own_tools",
]

BUILT_IN_TOOL_NAMES = (
    "bash",
    "job_output",
    "job_kill",
    "job_list",
    "read",
    "write",
    "edit",
    "glob",
    "grep",
    "session_status",
    "session_create",
    "session_result",
    "todo_write",
)
"""Every tool the harness itself may offer (a test keeps this list true)."""

OPT_IN_TOOL_NAMES = ("todo_write",)
"""The built-in tools offered only when the configuration or the front end asks for them
(``todo_write``: `TodoConfig`)."""

DEFAULT_TOOL_NAMES = tuple(name for name in BUILT_IN_TOOL_NAMES if name not in OPT_IN_TOOL_NAMES)
"""The tools the harness offers with the default configuration in the terminal and ``dsh run``
(the tool-schema budget test measures these)."""


def own_tools(tools: Sequence[ToolDefinition[Any]]) -> list[ToolDefinition[Any]]:
    """The application's tools, checked before anything is built: no name offered twice."""
    offered = set(BUILT_IN_TOOL_NAMES)
    for tool in tools:
        if tool.name in offered:
            raise DshError(
                f"tool {tool.name!r} is offered twice: a tool passed to compose() has the name "
                "of a built-in tool or of another tool passed with it"
            )
        offered.add(tool.name)
    return list(tools)


@dataclass
class _SessionLoop:
    """The loop of one session given tools of its own; ``joined``: its agent has joined it
    (until then it is never pruned, though it has no agent yet)."""

    loop: AgentLoop
    joined: bool = False


class PresetLoops:
    """One `AgentLoop` per preset (``None``: no preset, every tool), built on first use over
    the harness's models, persistence and extension points. A preset's ``tools`` list picks
    among ``tools`` and the MCP servers' tools by name; every registry gets the result spill
    and the command hooks' tool events.

    A session given tools of its own (`session_loop`) runs in a loop of its own: its preset's
    tool set plus those tools, everything else shared; it is dropped once its agent closed."""

    def __init__(
        self,
        config: Config,
        *,
        tools: Sequence[ToolDefinition[Any]],
        mcp: McpServerSet,
        spill: ResultSpill,
        hooks: HookRunner | None,
        models: Mapping[str, Model],
        persistence: SessionPersistence,
        extensions: Extensions,
    ) -> None:
        self._config = config
        self._tools = list(tools)
        self._mcp = mcp
        self._spill = spill
        self._hooks = hooks
        self._models = models
        self._persistence = persistence
        self._extensions = extensions
        self._loops: dict[str | None, AgentLoop] = {}
        self._session_loops: dict[str, _SessionLoop] = {}
        self._mcp_started = False
        self._mcp_starting = asyncio.Lock()

    def loop(self, preset: str | None) -> AgentLoop:
        """The agent loop of ``preset``; raises `UnknownPresetError` for one the config does
        not define."""
        if preset is not None and preset not in self._config.presets:
            raise UnknownPresetError(preset, sorted(self._config.presets))
        loop = self._loops.get(preset)
        if loop is None:
            loop = self._build(preset, ())
            self._loops[preset] = loop
        return loop

    def session_loop(
        self, session_id: str, preset: str | None, tools: Sequence[ToolDefinition[Any]]
    ) -> AgentLoop:
        """A new loop for the one session ``session_id``: the tools of ``preset`` and
        ``tools`` (offered whatever the preset's list says: they were given for this session).
        Raises `DshError` naming a tool of ``tools`` whose name is offered already; call
        `joined` once the session's agent is in the loop. A session that has a loop of its own
        already (its agent open, or joining) is refused with `DshError`, nothing built."""
        if preset is not None and preset not in self._config.presets:
            raise UnknownPresetError(preset, sorted(self._config.presets))
        self._prune()
        if session_id in self._session_loops:
            raise DshError(f"session {session_id!r} has a loop of its own in this harness already")
        loop = self._build(preset, tools)
        self._session_loops[session_id] = _SessionLoop(loop)
        return loop

    def joined(self, session_id: str) -> None:
        """The agent of ``session_id`` joined its own loop (or failed to: the loop is dropped
        when it has no agent)."""
        entry = self._session_loops.get(session_id)
        if entry is not None:
            entry.joined = True
        self._prune()

    def _prune(self) -> None:
        """Forget the session loops whose agent joined and has closed since."""
        for session_id, entry in list(self._session_loops.items()):
            if entry.joined and not entry.loop.agents:
                del self._session_loops[session_id]

    def _build(self, preset: str | None, extra: Sequence[ToolDefinition[Any]]) -> AgentLoop:
        allowed = self._allowed(preset)
        registry = ToolRegistry()
        for tool in self._tools:
            if allowed is None or tool.name in allowed:
                registry.register(tool)
        self._offer_mcp_tools(registry, allowed)
        for tool in extra:
            try:
                registry.register(tool)
            except DuplicateToolError:
                raise DshError(
                    f"tool {tool.name!r} given for one session is offered already (a built-in "
                    "tool, a configured MCP server's tool, or another tool given with it)"
                ) from None
        self._spill.install(registry)
        if self._hooks is not None:
            self._hooks.install(tools=registry)
        return AgentLoop(
            self._models,
            registry,
            persistence=self._persistence,
            extensions=self._extensions,
            max_steps_per_turn=self._config.max_steps_per_turn,
            approval_policy=self._config.sandbox.approval_policy,
        )

    def _allowed(self, preset: str | None) -> Collection[str] | None:
        return None if preset is None else self._config.presets[preset].tools

    def built(self) -> list[AgentLoop]:
        """Every loop built so far (the session loops still held included)."""
        return [*self._loops.values(), *(entry.loop for entry in self._session_loops.values())]

    def get(self, session_id: str) -> LoopAgent | None:
        """The live agent of ``session_id`` in any loop, if any."""
        for loop in self.built():
            agent = loop.get(session_id)
            if agent is not None:
                return agent
        return None

    def live(self) -> list[LoopAgent]:
        """Every live agent of every loop."""
        return [agent for loop in self.built() for agent in loop.agents]

    async def start_mcp(self) -> None:
        """Start the MCP servers and list their tools, once (a concurrent caller waits for
        that start); every loop, also one built before, then offers them."""
        async with self._mcp_starting:
            if self._mcp_started:
                return
            await self._mcp.start()
            self._mcp_started = True
            for preset, loop in self._loops.items():
                self._offer_mcp_tools(loop.tools, self._allowed(preset))

    def _offer_mcp_tools(self, registry: ToolRegistry, allowed: Collection[str] | None) -> None:
        """Register the MCP tools listed so far (those ``allowed`` by the preset) that
        ``registry`` does not offer yet: a loop built before the servers started gets them
        when they have."""
        for tool in mcp_tools(self._mcp):
            if (allowed is None or tool.name in allowed) and tool.name not in registry:
                registry.register(tool)
