"""The session lifecycle: a new session (a child of another one too), a stored one resumed in
its preset and route, a fork of one seeded with its log; each new one stored at once."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from dsh_agent_core._config import Config
from dsh_agent_core._delegation import Delegation, canonical_cwd
from dsh_agent_core._errors import DshError, UnknownPresetError
from dsh_agent_core._routes import Routes
from dsh_agent_core._tool_sets import PresetLoops
from dsh_agent_loop import AgentLoop, LoopAgent
from dsh_persistence import SessionPersistence
from dsh_session import SessionHeader
from dsh_tools import ToolDefinition

__all__ = ["SessionLifecycle"]


class SessionLifecycle:
    """Creates, resumes and forks the agents of one harness. ``loop`` gives a preset's agent
    loop, ``loops`` the loops themselves (a session given tools of its own gets a loop of its
    own), ``get`` a live agent, ``start`` starts what agents need first (the MCP servers)."""

    def __init__(
        self,
        config: Config,
        *,
        persistence: SessionPersistence,
        routes: Routes,
        delegation: Delegation,
        loop: Callable[[str | None], AgentLoop],
        loops: PresetLoops,
        get: Callable[[str], LoopAgent | None],
        start: Callable[[], Awaitable[None]],
    ) -> None:
        self._config = config
        self._persistence = persistence
        self._routes = routes
        self._delegation = delegation
        self._loop = loop
        self._loops = loops
        self._get = get
        self._start = start

    def _known_preset(self, header: SessionHeader | None) -> str | None:
        """The preset ``header`` names, if the config still defines it (else the default
        tool set)."""
        preset = header.agent_preset if header is not None else None
        return preset if preset is not None and preset in self._config.presets else None

    async def create(
        self,
        prompt: str | None,
        *,
        preset: str | None,
        model: str | None,
        reasoning_effort: str | None,
        cwd: str | os.PathLike[str] | None,
        session_id: str | None,
        parent: LoopAgent | None,
        cwd_approved: bool,
        tools: Sequence[ToolDefinition[Any]] = (),
    ) -> LoopAgent:
        """See `Harness.create`."""
        if parent is not None:
            start = self._delegation.inherit(
                parent, preset=preset, model=model, reasoning_effort=reasoning_effort, cwd=cwd
            )
            preset, model, reasoning_effort, cwd = (
                start.preset,
                start.model,
                start.reasoning_effort,
                start.cwd,
            )
        canonical = canonical_cwd(cwd if cwd is not None else os.getcwd())
        if parent is not None and not cwd_approved:
            self._delegation.check_cwd(parent, canonical)
        await self._start()
        # everything that can refuse comes before a loop of its own is built for the session
        if preset is not None and preset not in self._config.presets:
            raise UnknownPresetError(preset, sorted(self._config.presets))
        settings = self._config.presets[preset] if preset is not None else None
        route = await self._routes.resolve(
            model or (settings.model if settings is not None else None)
        )
        system = self._config.system_prompt(preset).text
        depth = self._delegation.depth(parent) if parent is not None else None
        if tools:
            session_id = session_id if session_id is not None else str(uuid.uuid4())
            if self._get(session_id) is not None:
                raise DshError(f"session {session_id!r} is open in this harness already")
            loop = self._loops.session_loop(session_id, preset, tools)
        else:
            loop = self._loop(preset)
        try:
            agent = await loop.create(
                session_id,
                options=self._routes.options(route, reasoning_effort=reasoning_effort),
                cwd=canonical,
                system=system,
                parent_session=parent.id if parent is not None else None,
                origin="subagent" if parent is not None else None,
                delegation_depth=depth,
                agent_preset=preset,
            )
        finally:
            if tools:
                assert session_id is not None
                self._loops.joined(session_id)
        self._delegation.pin_permissions(agent, parent)
        await _store_at_once(agent)
        if prompt is not None:
            agent.followup(prompt)
        return agent

    async def resume(
        self, session_id: str, *, model: str | None, tools: Sequence[ToolDefinition[Any]] = ()
    ) -> LoopAgent:
        """See `Harness.resume`."""
        live = self._get(session_id)
        if live is not None:
            if tools:
                raise DshError(
                    f"session {session_id!r} is open in this harness already; tools of its own "
                    "are given when it is created or resumed, not while it is open"
                )
            return live
        snapshot = await self._persistence.stat(session_id)
        preset = self._known_preset(snapshot.header if snapshot is not None else None)
        if model is not None:
            model = await self._routes.resolve(model)
        options = self._routes.options(model) if model is not None else None
        await self._start()
        if not tools:
            return await self._loop(preset).resume(session_id, options=options)
        loop = self._loops.session_loop(session_id, preset, tools)
        try:
            return await loop.resume(session_id, options=options)
        finally:
            self._loops.joined(session_id)

    async def fork(
        self,
        parent_id: str,
        *,
        session_id: str | None,
        boundary: int | None,
        prompt: str | None,
    ) -> LoopAgent:
        """See `Harness.fork`."""
        parent = self._get(parent_id)
        header = parent.session.header if parent is not None else None
        if header is None:
            snapshot = await self._persistence.stat(parent_id)
            header = snapshot.header if snapshot is not None else None
        preset = self._known_preset(header)
        await self._start()
        agent = await self._loop(preset).fork(
            parent if parent is not None else parent_id,
            session_id=session_id,
            boundary=boundary,
        )
        await _store_at_once(agent)
        if prompt is not None:
            agent.followup(prompt)
        return agent


async def _store_at_once(agent: LoopAgent) -> None:
    """Make a new session durable now (listed, its log path exists); an agent whose session
    cannot be stored is closed, not left live."""
    try:
        await agent.flush()
    except BaseException:
        with contextlib.suppress(Exception):
            await agent.aclose()
        raise
