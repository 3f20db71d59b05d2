"""``compose(config)``: every part built once from one configuration, and the ``Harness`` that
creates, resumes and lists agents and closes everything."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from dsh_agent import Agent, AgentOptions, Extensions, SessionStartSource
from dsh_agent_core._config import Config, parse_route, split_route
from dsh_agent_core._errors import (
    ChildWorkspaceError,
    DshError,
    HomeConflictError,
    SandboxUnavailableError,
    UnknownPresetError,
)
from dsh_agent_core._extras import mcp_servers, mcp_tools, require_extra
from dsh_agent_core._hook_files import hook_files
from dsh_agent_core._instructions import ProjectInstructions
from dsh_agent_core._model_windows import WindowDiscovery, missing_window_hint
from dsh_agent_core._models import ProviderQueryError, provider_models
from dsh_agent_core._permissions import logged_sandbox_mode, pin_permissions
from dsh_agent_core._runtime_context import RuntimeContext
from dsh_agent_core._session_tools import SessionCreateTool, SessionResultTool, SessionStatusTool
from dsh_agent_core._skills import SkillCatalog
from dsh_agent_core._status import SessionStatusRow, iso_time
from dsh_agent_core._titles import FallbackTitles, title_of_events
from dsh_agent_loop import AgentBusyError, AgentLoop, LoopAgent, ResumeOptionsError
from dsh_bash_local import LocalBashConfig, LocalBashExecutor
from dsh_bash_sandbox import SandboxExecutor, SandboxProbe
from dsh_compaction import CompactionError, CompactionResult, Compactor
from dsh_hooks import HOOK_EVENTS, HookRunner, HooksConfig
from dsh_llm import Model, PluginSource, UserMessage
from dsh_paths import resolve_dsh_home
from dsh_persistence import SessionAlreadyOwnedError, SessionPersistence, SessionSnapshot
from dsh_persistence_jsonl import JsonlPersistence
from dsh_session import SessionEvent, SessionHeader
from dsh_shell import (
    SandboxMode,
    SandboxPolicy,
    ShellValueError,
    WorkspaceChangedError,
    WorkspacePin,
    default_denied_paths,
)
from dsh_tool_bash import BashTool, Job, JobRegistry, ShellEnvRegistry, job_tools
from dsh_tool_fs import FileTools
from dsh_tools import ResultSpill, ToolDefinition, ToolExecution, ToolRegistry

__all__ = ["Harness", "build_persistence", "compose", "interrupted_child_notice", "sandbox_policy"]

_log = logging.getLogger("dsh_agent_core")

JOBS_PLUGIN = "tool-jobs"
"""The plugin name on a background job's finish notice."""


def build_persistence(config: Config, env: Mapping[str, str] | None = None) -> SessionPersistence:
    """The backend the configuration names, at its resolved location (``env``: where the
    PostgreSQL DSN variable is read; default the config's environment, else ``os.environ``)."""
    location = config.persistence_location()
    settings = config.persistence
    if location.backend == "postgres":
        require_extra("postgres", 'persistence backend "postgres"')
        environ = env if env is not None else config.environment()
        dsn = environ.get(location.dsn_env)
        if not dsn:
            raise DshError(
                f"persistence.backend is postgres but the environment variable "
                f"{location.dsn_env} (persistence.dsn_env) that holds its DSN is not set"
            )
        # imported here: psycopg costs a local-only `dsh` start a quarter of a second
        from dsh_persistence_postgres import PostgresPersistence

        return PostgresPersistence(
            dsn, schema=location.schema, compression=settings.sqlite_compression
        )
    if location.backend == "sqlite":
        from dsh_persistence_sqlite import SqlitePersistence  # as postgres: only when configured

        location.path.parent.mkdir(parents=True, exist_ok=True)
        return SqlitePersistence(
            location.path, compression=settings.sqlite_compression, pack_chunks=settings.pack_chunks
        )
    return JsonlPersistence(
        location.root, compression=location.compression, pack_chunks=settings.pack_chunks
    )


def _harness_files(config: Config, home: Path) -> tuple[Path, ...]:
    """What a confined command may read but never write: the DSH home, the session logs
    wherever the config puts them (a SQLite database with its journal files), the config file."""
    paths = [home]
    location = config.persistence_location()
    if location.backend == "sqlite":
        paths += location.files()
    elif location.backend == "jsonl":
        paths.append(location.root)
    if config.source is not None:
        paths.append(Path(config.source).absolute())
    return tuple(dict.fromkeys(paths))


def _hook_env(config: Config) -> dict[str, str]:
    return dict(config.hooks.env) if config.hooks is not None else {}


def sandbox_policy(config: Config) -> SandboxPolicy:
    """The default sandbox policy of ``config``: its mode, the DSH home, the session logs and
    the config file readable and never writable, the configured writable roots and network,
    the deny-read list (default: the usual credential folders). Each call's workspace is the
    calling session's cwd."""
    settings = config.sandbox
    home = config.home()
    denied = (
        default_denied_paths()
        if settings.deny_read is None
        else tuple(Path(os.path.expanduser(entry)).absolute() for entry in settings.deny_read)
    )
    return SandboxPolicy(
        mode=settings.mode,
        writable_roots=tuple(
            Path(os.path.expanduser(r)).absolute() for r in settings.writable_roots
        ),
        read_only_paths=_harness_files(config, home),
        denied_paths=denied,
        network=settings.network,
        # hooks run unconfined: what they run stays read-only for confined commands
        protected_paths=hook_files(config.hooks, {**os.environ, **_hook_env(config)}),
    )


_COMPACTION_FAILURES: dict[str, str] = {
    "busy": "another compaction or a turn of it is in progress; try again once it is idle",
    "summary": "the model's summary failed ({detail}); the conversation is unchanged and the "
    "attempt is logged",
    "changed": "the conversation changed while the summary was written; it is unchanged and "
    "the attempt is logged",
    "commit": "the checkpoint could not be logged whole and may be partly logged ({detail}); "
    "inspect the session with dsh sessions show",
    "persistence": "it was compacted but not saved: the log could not be made durable ({detail})",
    "config": "compaction is not configured for its model ({detail})",
}


def compaction_failure(error: CompactionError) -> str:
    """The one sentence a shell user reads for a failed compaction, by its code."""
    template = _COMPACTION_FAILURES.get(error.code, "the compaction failed ({detail})")
    detail = error.message
    if error.code == "summary" and error.failure_code is not None:
        detail = f"{error.failure_code}: {detail}"
    return f"session {error.session_id!r} was not compacted: " + template.format(detail=detail)


def _canonical_cwd(cwd: str | os.PathLike[str]) -> str:
    path = os.path.realpath(os.fspath(cwd))
    if not os.path.isdir(path):
        raise DshError(f"cwd {os.fspath(cwd)!r} is not a directory")
    return path


class Harness:
    """Everything ``compose`` built: persistence, the bash executor and tool, background jobs,
    session tools, project instructions, local skills, models, and one agent loop per preset.

    ``create`` / ``resume`` / ``fork`` give agents; ``status`` / ``status_of`` / ``sessions``
    inspect; ``aclose`` cancels running turns, drains and closes every handle, and kills every
    background job. Use it as ``async with compose(config) as harness:``.
    """

    def __init__(
        self,
        config: Config,
        *,
        models: Mapping[str, Model] | None = None,
        env: Mapping[str, str] | None = None,
        tools: Sequence[ToolDefinition[Any]] = (),
    ) -> None:
        own_tools = _own_tools(tools)  # refused before anything is built or opened
        config.mcp.require_extra()  # as is an MCP server without the [mcp] extra
        home = config.home()
        skills_home = config.skills.local.dsh_home
        if skills_home is not None and resolve_dsh_home(skills_home) != home:
            raise HomeConflictError(str(home), str(resolve_dsh_home(skills_home)))
        self.config = config
        self.home = home
        self.persistence = build_persistence(config, env)
        self.shell_env = ShellEnvRegistry(dsh_home=home)
        self.policy = sandbox_policy(config)
        # each session's workspace, pinned at its start and resume (see workspace_pin)
        self._pins: dict[str, WorkspacePin] = {}
        self._unpinned: dict[str, WorkspaceChangedError] = {}
        local = LocalBashConfig(timeout=config.bash.timeout, max_timeout=config.bash.max_timeout)
        self.executor = SandboxExecutor(
            LocalBashExecutor(local),
            policy=self.policy,
            bwrap=config.sandbox.bwrap,
            workspace_pins=self.workspace_pin,
        )
        self.jobs = JobRegistry()
        self._env: Mapping[str, str] = os.environ if env is None else env
        self._overrides = dict(models) if models else None
        self._provider_models = provider_models(config, env)
        self.models: dict[str, Model] = {**self._provider_models, **(models or {})}
        self.extensions = Extensions()
        self.extensions.session_start.add(self._pin_workspace)
        # the prefix in wire order: the project's instructions, then the skills catalog
        if config.instructions.enabled:
            self.instructions: ProjectInstructions | None = ProjectInstructions(home)
            self.extensions.session_prefix.add(self.instructions)
        else:
            self.instructions = None
        if config.skills.local.enabled:
            self.skills: SkillCatalog | None = SkillCatalog(home)
            self.extensions.session_prefix.add(self.skills)
        else:
            self.skills = None
        self.extensions.request.add(FallbackTitles())
        # each routed model's window is known (asked of its server once) before compaction reads
        # it; compaction first: the runtime context then sees the surface the step will send
        self.extensions.pre_step.add(WindowDiscovery(self.models))
        self.compactor = Compactor(
            self.models, config.compaction, window_hint=missing_window_hint(config)
        )
        self._compaction = self.compactor.install(self.extensions)
        self.extensions.pre_step.add(RuntimeContext())
        bash = BashTool(
            self.executor,
            self.shell_env,
            enable_background=config.bash.background,
            jobs=self.jobs,
            sandbox=self.policy,
            sandbox_mode=self._session_sandbox_mode,
        )
        self._tools: list[ToolDefinition[Any]] = [bash]
        if config.bash.background:
            self._tools.extend(job_tools(self.jobs))
        # the file tools follow the bash tool's sandbox policy and the session's mode
        self.files = FileTools(
            self.policy,
            sandbox_mode=self._session_sandbox_mode,
            workspace_pins=self.workspace_pin,
        )
        self._tools.extend(self.files.definitions())
        self.spill = ResultSpill(home / "spill")
        # MCP servers start with the harness (start(), async with, or the first agent); what
        # stdio servers print on stderr goes to <DSH_HOME>/logs/mcp-servers.log, rotated at
        # its cap (one older file kept); aclose kills each stdio server's process group
        self.mcp = mcp_servers(config.mcp, environ=env, log_file=home / "logs" / "mcp-servers.log")
        self._mcp_started = False
        self._mcp_starting = asyncio.Lock()
        # command hooks are trusted user configuration: as in Claude Code and Codex they run
        # unconfined, with the user's rights (their own local executor, never the sandbox)
        self._hook_executor = (
            LocalBashExecutor(_hook_limits(config.hooks)) if config.hooks else None
        )
        self.hooks = (
            HookRunner(config.hooks, self._hook_executor, spill=self.spill, lineage=self._header_of)
            if config.hooks and self._hook_executor is not None
            else None
        )
        if self.hooks is not None:
            self._hook_points = self.hooks.install(self.extensions)
        # the application's own tools come last, beside the built-in ones (a preset's `tools`
        # list picks among them by name, as it does among the built-in ones)
        self._tools += [
            SessionStatusTool(self),
            SessionCreateTool(self),
            SessionResultTool(self),
            *own_tools,
        ]
        self._loops: dict[str | None, AgentLoop] = {}
        self._notices = self.jobs.on_finished(self._job_finished)
        self._closed = False
        self.interrupted_children: list[str] = []
        """The ``session_create`` children whose turn was still running when ``aclose`` began
        (cancelled then, their logs closed resumable); see `interrupted_child_notice`."""

    # -- parts ------------------------------------------------------------------------------

    def tool_names(self, preset: str | None = None) -> list[str]:
        """The tools an agent of ``preset`` (default: no preset) is offered."""
        return self.loop(preset).tools.names()

    def loop(self, preset: str | None = None) -> AgentLoop:
        """The agent loop of ``preset`` (its tool set); built on first use."""
        if self._closed:
            raise DshError("the harness is closed; it starts no more agents")
        if preset is not None and preset not in self.config.presets:
            raise UnknownPresetError(preset, sorted(self.config.presets))
        loop = self._loops.get(preset)
        if loop is None:
            allowed = None if preset is None else self.config.presets[preset].tools
            registry = ToolRegistry()
            for tool in self._tools:
                if allowed is None or tool.name in allowed:
                    registry.register(tool)
            self._offer_mcp_tools(registry, allowed)
            self.spill.install(registry)
            if self.hooks is not None:
                self.hooks.install(tools=registry)
            loop = AgentLoop(
                self.models,
                registry,
                persistence=self.persistence,
                extensions=self.extensions,
                max_steps_per_turn=self.config.max_steps_per_turn,
                approval_policy=self.config.sandbox.approval_policy,
            )
            self._loops[preset] = loop
        return loop

    def _offer_mcp_tools(self, registry: ToolRegistry, allowed: Collection[str] | None) -> None:
        """Register the MCP tools listed so far (those ``allowed`` by the preset) that
        ``registry`` does not offer yet: a loop built before the servers started gets them
        when they have."""
        for tool in self._mcp_tools():
            if (allowed is None or tool.name in allowed) and tool.name not in registry:
                registry.register(tool)

    def _mcp_tools(self) -> list[ToolDefinition[Any]]:
        return mcp_tools(self.mcp)

    def sandbox_probe(self, cwd: str | os.PathLike[str] | None = None) -> SandboxProbe:
        """Whether confined commands can run on this host (bubblewrap), and if not why: for a
        session in ``cwd`` (default: the current directory), a ``bwrap`` or ``bash`` inside a
        folder its commands may write is refused, unrun."""
        workspace = Path(os.path.realpath(cwd if cwd is not None else os.getcwd()))
        return self.executor.probe(workspace=workspace)

    def check_sandbox(self, mode: SandboxMode | None = None) -> None:
        """Raise :class:`SandboxUnavailableError` with the fix in one line when ``mode``
        (default: the config's) confines commands and bubblewrap cannot run here, before any
        session exists: a confined command never runs unconfined."""
        mode = mode or self.config.sandbox.mode
        if mode == "danger-full-access":
            return
        probe = self.sandbox_probe()
        if not probe.available:
            raise SandboxUnavailableError(mode, str(probe.cause), str(probe.fix))

    def _session_sandbox_mode(self, execution: ToolExecution) -> SandboxMode | None:
        """The calling session's logged sandbox mode (its own knob beats the config's)."""
        agent = self.get(execution.session_id) if execution.session_id is not None else None
        return logged_sandbox_mode(agent.session) if agent is not None else None

    # -- workspaces ---------------------------------------------------------------------------

    def workspace_pin(self, session_id: str) -> WorkspacePin | None:
        """The workspace ``session_id`` pinned when it started or resumed in this harness
        (``None``: not a session of this harness, or one without a cwd). The bash tool's
        sandbox and the file tools verify it before every confined call and refuse, closed,
        once it resolves elsewhere. Raises `dsh_shell.WorkspaceChangedError` for a session
        that runs unconfined and whose cwd could not be pinned: a confined call of it fails."""
        refused = self._unpinned.get(session_id)
        if refused is not None:
            raise refused
        return self._pins.get(session_id)

    def _pin_workspace(self, agent: Agent, source: SessionStartSource) -> None:
        """Pin ``agent``'s cwd (a ``session_start`` listener: startup and resume).

        The logged cwd must still be its own real path (a new session's is canonicalized just
        before): at resume, a cwd that now resolves elsewhere (a folder swapped for a symlink,
        or moved and linked back) refuses the resume of a confined session with
        `dsh_shell.WorkspaceChangedError`, rather than confining it to wherever the link now
        leads. An unconfined (``danger-full-access``) session still starts; a confined call
        it makes later (its mode changed) is refused."""
        self._pins.pop(agent.id, None)
        self._unpinned.pop(agent.id, None)
        cwd = agent.cwd
        if cwd is None:
            return
        try:
            self._pins[agent.id] = WorkspacePin.of(cwd, session_id=agent.id)
        except (WorkspaceChangedError, ShellValueError) as error:
            refused = (
                error
                if isinstance(error, WorkspaceChangedError)
                else WorkspaceChangedError(cwd, "is not an absolute path", agent.id)
            )
            mode = logged_sandbox_mode(agent.session) or self.config.sandbox.mode
            if mode != "danger-full-access":
                raise refused from None
            self._unpinned[agent.id] = refused

    def _check_child_cwd(self, parent: LoopAgent, cwd: str) -> None:
        """Raise `ChildWorkspaceError` unless ``cwd`` lies inside one of ``parent``'s writable
        roots (its pinned workspace, the configured writable roots) with no protected name
        (``.git``) between the root and it, so the child's writable area (its cwd subtree, the
        same writable roots, a private temp directory; the same read-only and denied paths)
        stays within the parent's. A ``read-only`` parent's child is read-only too, but its
        workspace stays inside the parent's all the same; no limit under full access."""
        mode = logged_sandbox_mode(parent.session) or self.config.sandbox.mode
        if mode == "danger-full-access":
            return
        pin = self.workspace_pin(parent.id)
        if pin is not None:
            pin.verify(session_id=parent.id)
            workspace = pin.path
        else:
            workspace = Path(os.path.realpath(parent.cwd if parent.cwd is not None else "."))
        policy = self.policy
        area = dataclasses.replace(
            policy,
            mode="workspace-write",
            workspace=workspace,
            writable_roots=tuple(Path(os.path.realpath(p)) for p in policy.writable_roots),
            read_only_paths=(),  # the child has the same ones: they never widen it
            denied_paths=(),
        )
        decision = area.check(cwd, "write")
        if not decision.allowed:
            raise ChildWorkspaceError(parent.id, cwd, str(workspace), decision.reason)

    def options(self, route: str | None, *, reasoning_effort: str | None = None) -> AgentOptions:
        """Agent options for ``route`` (``provider:model``; default: the config's ``model``)."""
        provider, model = parse_route(route or self.config.model)
        if provider not in self.models:
            raise DshError(
                f"model {provider}:{model}: no provider {provider!r} is configured (known: "
                f"{', '.join(sorted(self.models))})"
            )
        return AgentOptions(
            provider=provider,
            model=model,
            max_tokens=self.config.max_tokens,
            reasoning_effort=reasoning_effort,
        )

    def check_route(self, route: str | None) -> None:
        """Raise :class:`DshError` when ``route``'s provider cannot be called as configured (an
        API key variable that is not set), before any session is created for it. ``route``
        may leave out its model (``"local"``; see :meth:`resolve_route`)."""
        route = route or self.config.model
        provider, _ = split_route(route)
        self._known_provider(provider, route)
        model = self._provider_models.get(provider)
        if model is None or provider in (self._overrides or {}):
            return
        variable = model.config.api_key_env
        if model.config.kind == "openai-compatible" and variable and not self._env.get(variable):
            raise DshError(
                f"model {route}: the environment variable {variable} "
                "is not set (it holds the provider's API key)"
            )

    def _known_provider(self, provider: str, route: str) -> None:
        if provider not in self.models:
            raise DshError(
                f"model {route}: no provider {provider!r} is configured (known: "
                f"{', '.join(sorted(self.models))})"
            )

    async def resolve_route(self, route: str | None) -> str:
        """``route`` (default: the config's ``model``) as ``provider:model``. A route that
        names only its provider (``"local"``, ``"ollama"``) asks the provider's server once
        which models it serves (``GET /v1/models``, a few seconds at most): the one it serves
        is the model; none, several, or a server that cannot be asked raise :class:`DshError`
        saying what it serves and how to name one (``--model ollama:qwen2.5-coder:7b``)."""
        route = route or self.config.model
        provider, model = split_route(route)
        if model is not None:
            return route
        self._known_provider(provider, route)
        source = self._provider_models.get(provider)
        how = f"name one as {provider}:MODEL (dsh run --model {provider}:MODEL)"
        if source is None or provider in (self._overrides or {}):
            raise DshError(f"model {route}: no model named; {how}")
        try:
            served = await source.served_models()
        except ProviderQueryError as error:
            raise DshError(
                f"model {route}: no model named, and the provider could not be asked which "
                f"it serves ({error.reason}); {how}"
            ) from None
        where = source.config.base_url or provider
        if not served:
            raise DshError(f"model {route}: {where} serves no model; {how}")
        if len(served) > 1:
            listed = ", ".join(served)
            raise DshError(
                f"model {route}: {where} serves {len(served)} models ({listed}); name one, "
                f"as in dsh run --model {provider}:{served[0]}"
            )
        return f"{provider}:{served[0]}"

    # -- agents -----------------------------------------------------------------------------

    async def _header_of(self, session_id: str) -> SessionHeader | None:
        """The header of ``session_id``, live or stored (``None`` when neither), for the hook
        runner: a delegated session's hooks run in its root session's cwd."""
        live = self.get(session_id)
        if live is not None:
            return live.session.header
        snapshot = await self.persistence.stat(session_id)
        return snapshot.header if snapshot is not None else None

    def get(self, session_id: str) -> LoopAgent | None:
        """The live agent of ``session_id``, if any."""
        for loop in self._loops.values():
            agent = loop.get(session_id)
            if agent is not None:
                return agent
        return None

    def live(self) -> list[LoopAgent]:
        """Every live agent."""
        return [agent for loop in self._loops.values() for agent in loop.agents]

    async def create(
        self,
        prompt: str | None = None,
        *,
        preset: str | None = None,
        model: str | None = None,
        reasoning_effort: str | None = None,
        cwd: str | os.PathLike[str] | None = None,
        session_id: str | None = None,
        parent: LoopAgent | None = None,
        cwd_approved: bool = False,
    ) -> LoopAgent:
        """A new agent (its session stored at once), with ``prompt`` queued as its first turn.

        ``preset`` gives the system prompt, tool set and model unless ``model`` is given; a
        child of ``parent`` inherits its cwd, model and preset unless given, and its header
        names the parent with ``delegationDepth`` one deeper. ``cwd`` is canonicalized
        (default: the parent's, else the process's working directory; a child's relative
        ``cwd`` is relative to the parent's).

        A child is never confined less than its parent: it runs in the parent's sandbox mode,
        never asks, and its ``cwd`` must be a directory the parent may write (inside its
        workspace or writable roots, not under a protected name such as ``.git``).
        Otherwise `ChildWorkspaceError` is raised before anything is created, unless
        ``cwd_approved`` says the widening was approved (``session_create`` asks through the
        approval seam).
        """
        if parent is not None:
            preset = preset if preset is not None else parent.session.header.agent_preset
            if model is None:
                model = f"{parent.options.provider}:{parent.options.model}"
                reasoning_effort = reasoning_effort or parent.options.reasoning_effort
            if cwd is None:
                cwd = parent.cwd
            elif parent.cwd is not None and not os.path.isabs(os.fspath(cwd)):
                cwd = os.path.join(parent.cwd, os.fspath(cwd))
        canonical = _canonical_cwd(cwd if cwd is not None else os.getcwd())
        if parent is not None and not cwd_approved:
            self._check_child_cwd(parent, canonical)
        await self.start()
        loop = self.loop(preset)
        settings = self.config.presets[preset] if preset is not None else None
        route = await self.resolve_route(
            model or (settings.model if settings is not None else None)
        )
        system = self.config.system_prompt(preset).text
        depth = None
        if parent is not None:
            depth = (parent.session.header.delegation_depth or 0) + 1
            if depth > self.config.max_delegation_depth:
                raise DshError(
                    f"session {parent.id!r} is at delegation depth {depth - 1}; a child would "
                    f"pass max_delegation_depth = {self.config.max_delegation_depth}"
                )
        agent = await loop.create(
            session_id,
            options=self.options(route, reasoning_effort=reasoning_effort),
            cwd=canonical,
            system=system,
            parent_session=parent.id if parent is not None else None,
            origin="subagent" if parent is not None else None,
            delegation_depth=depth,
            agent_preset=preset,
        )
        if parent is not None:  # a child runs in its parent's mode and never asks
            mode = logged_sandbox_mode(parent.session) or self.config.sandbox.mode
            pin_permissions(agent.session, mode, "never", delegated=True)
        else:
            pin_permissions(
                agent.session, self.config.sandbox.mode, self.config.sandbox.approval_policy
            )
        await self._store_at_once(agent)
        if prompt is not None:
            agent.followup(prompt)
        return agent

    async def _store_at_once(self, agent: LoopAgent) -> None:
        """Make a new session durable now (listed, its log path exists); an agent whose
        session cannot be stored is closed, not left live."""
        try:
            await agent.flush()
        except BaseException:
            with contextlib.suppress(Exception):
                await agent.aclose()
            raise

    async def resume(self, session_id: str, *, model: str | None = None) -> LoopAgent:
        """The live agent of ``session_id``, or its stored session resumed (its preset and, unless
        ``model`` is given, the route and system prompt its log last used)."""
        live = self.get(session_id)
        if live is not None:
            return live
        snapshot = await self.persistence.stat(session_id)
        preset = snapshot.header.agent_preset if snapshot is not None else None
        if preset is not None and preset not in self.config.presets:
            preset = None  # a preset the config no longer defines: the default tool set
        if model is not None:
            model = await self.resolve_route(model)
        options = self.options(model) if model is not None else None
        await self.start()
        return await self.loop(preset).resume(session_id, options=options)

    async def fork(
        self,
        parent_id: str,
        *,
        session_id: str | None = None,
        boundary: int | None = None,
        prompt: str | None = None,
    ) -> LoopAgent:
        """A new agent seeded with the log of ``parent_id`` (live or stored) up to
        ``boundary`` (default: all of it, which must be a balanced point), in the parent's
        preset, with ``prompt`` queued when given."""
        parent = self.get(parent_id)
        header = parent.session.header if parent is not None else None
        if header is None:
            snapshot = await self.persistence.stat(parent_id)
            header = snapshot.header if snapshot is not None else None
        preset = header.agent_preset if header is not None else None
        if preset is not None and preset not in self.config.presets:
            preset = None
        await self.start()
        agent = await self.loop(preset).fork(
            parent if parent is not None else parent_id,
            session_id=session_id,
            boundary=boundary,
        )
        await self._store_at_once(agent)
        if prompt is not None:
            agent.followup(prompt)
        return agent

    # -- compaction -------------------------------------------------------------------------

    async def compact(self, session_id: str) -> CompactionResult | None:
        """Compact an idle session now: all of its conversation but the newest exchange becomes
        one checkpoint, in a bracket no turn owns, made durable before this returns. A live
        agent of this harness is held idle meanwhile; a stored one is resumed, compacted and
        closed. The summary call goes to the session's logged route (or the configured
        ``summarization_*`` one). ``None``: nothing to compact yet (nothing logged).

        Raises :class:`DshError` with one sentence: the agent is running a turn, the session is
        open in another process, or the compaction failed (by its code); an unknown id raises
        the persistence's not-found error, as every session command does."""
        agent = self.get(session_id)
        if agent is not None:
            if agent.status == "running":
                raise DshError(
                    f"session {session_id!r} is running a turn; compact it once it is idle"
                )
            return await self._compact_held(agent)
        try:
            try:
                agent = await self.resume(session_id)
            except ResumeOptionsError:  # never sent a request: continue on the config's route
                agent = await self.resume(session_id, model=self.config.model)
        except SessionAlreadyOwnedError:
            raise DshError(
                f"session {session_id!r} is open in another process (or another harness); "
                "compact it there, or once that process has closed it"
            ) from None
        try:
            return await self._compact_held(agent)
        finally:
            await agent.aclose()

    async def _compact_held(self, agent: LoopAgent) -> CompactionResult | None:
        try:
            async with agent.maintenance():
                return await self.compactor.compact_now(agent, flush=agent.flush)
        except AgentBusyError as error:
            raise DshError(
                f"session {agent.id!r} cannot be compacted now: {error.why}; try again once it "
                "is idle"
            ) from None
        except CompactionError as error:
            raise DshError(compaction_failure(error)) from error

    # -- inspection -------------------------------------------------------------------------

    async def sessions(self) -> list[SessionSnapshot]:
        """Every stored session, most recently updated first."""
        snapshots = await self.persistence.list()
        return sorted(snapshots, key=lambda s: (s.updated_at or 0, s.id), reverse=True)

    async def session_events(self, session_id: str) -> list[SessionEvent] | None:
        """The events of ``session_id``: the live agent's, else the stored log's (``None`` when
        neither exists)."""
        agent = self.get(session_id)
        if agent is not None:
            return list(agent.session.events)
        if await self.persistence.stat(session_id) is None:
            return None
        async with await self.persistence.open(session_id, "read") as handle:
            return list(await handle.read(0))

    async def _title(self, session_id: str) -> str | None:
        with contextlib.suppress(Exception):  # an unreadable log has no title; verify says why
            async with await self.persistence.open(session_id, "read") as handle:
                return title_of_events(await handle.read(0))
        return None

    def _live_row(self, agent: LoopAgent, snapshot: SessionSnapshot | None) -> SessionStatusRow:
        events = agent.session.events
        updated = events[-1].time if len(events) else agent.session.header.created_at
        return SessionStatusRow(
            session_id=agent.id,
            status="running" if agent.status == "running" else "idle",
            title=agent.session.title,
            updated_at=iso_time(updated),
            session_path=snapshot.plain_path if snapshot is not None else None,
        )

    async def status_of(self, session_id: str) -> SessionStatusRow:
        """The row of one session (``missing`` when neither live nor stored)."""
        snapshot = await self.persistence.stat(session_id)
        agent = self.get(session_id)
        if agent is not None:
            return self._live_row(agent, snapshot)
        if snapshot is None:
            return SessionStatusRow(session_id=session_id, status="missing")
        return await self._cold_row(snapshot)

    async def _cold_row(self, snapshot: SessionSnapshot) -> SessionStatusRow:
        """The row of a stored session no live agent holds."""
        return SessionStatusRow(
            session_id=snapshot.id,
            status="cold",
            title=await self._title(snapshot.id),
            updated_at=iso_time(snapshot.updated_at),
            session_path=snapshot.plain_path,
        )

    async def status(self, recent_n: int = 50) -> list[SessionStatusRow]:
        """The ``recent_n`` most recently updated sessions, live ones merged in (live wins)."""
        snapshots = {s.id: s for s in await self.sessions()}
        rows: dict[str, tuple[int, bool, SessionStatusRow | None]] = {}
        for snapshot in snapshots.values():
            rows[snapshot.id] = (snapshot.updated_at or 0, False, None)
        for agent in self.live():
            events = agent.session.events
            live_row = self._live_row(agent, snapshots.get(agent.id))
            updated = events[-1].time if len(events) else agent.session.header.created_at
            rows[agent.id] = (updated, True, live_row)
        # most recent first; in the same millisecond a live agent comes before a stored one
        chosen = sorted(rows.items(), key=lambda item: (*item[1][:2], item[0]), reverse=True)
        result: list[SessionStatusRow] = []
        for session_id, (_, _, found) in chosen[:recent_n]:
            result.append(
                found if found is not None else await self._cold_row(snapshots[session_id])
            )
        return result

    # -- jobs -------------------------------------------------------------------------------

    def _job_finished(self, job: Job, notice: str) -> None:
        agent = self.get(job.owner) if job.owner is not None else None
        if agent is None or agent.closed:
            return
        message = UserMessage.from_text(
            notice, source=PluginSource(plugin=JOBS_PLUGIN, form="notice")
        )
        agent.steer(message)  # enters the next step, or wakes an idle agent

    # -- closing ----------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close every agent (cancelling running turns), every background job, every model
        connection and the persistence backend. Failures are raised together."""
        if self._closed:
            return
        self._closed = True
        self._notices.dispose()
        # children still at work are cancelled by the close below (their logs end the turn
        # aborted, resumable); name them so the operator can resume them
        self.interrupted_children = [
            agent.id
            for agent in self.live()
            if agent.session.header.parent_session is not None and agent.status == "running"
        ]
        loops = await asyncio.gather(
            *(loop.aclose() for loop in list(self._loops.values())), return_exceptions=True
        )
        failures: list[BaseException] = [r for r in loops if isinstance(r, BaseException)]
        self._compaction.dispose()  # no agent steps any more
        results = await asyncio.gather(
            self.jobs.aclose(),
            *(model.aclose() for model in self._provider_models.values()),
            return_exceptions=True,
        )
        failures += [r for r in results if isinstance(r, BaseException)]
        try:  # after the jobs: their processes are gone before the temp dirs are removed
            await self.executor.aclose()
        except Exception as error:
            failures.append(error)
        if self.hooks is not None:
            try:
                await self.hooks.aclose()
            except Exception as error:
                failures.append(error)
        if self._hook_executor is not None:
            try:
                await self._hook_executor.aclose()
            except Exception as error:
                failures.append(error)
        try:
            await self.mcp.aclose()  # closes the servers' log too
        except Exception as error:
            failures.append(error)
        try:
            await self.persistence.aclose()
        except Exception as error:
            failures.append(error)
        if failures:
            raise ExceptionGroup("closing the harness failed", [*failures])  # type: ignore[type-var]

    async def start(self) -> None:
        """Start the configured MCP servers and list their tools, once (``async with`` and the
        first ``create``/``resume``/``fork`` do it; a concurrent caller waits for that start).
        Their tools are then offered by every agent loop, also one built before (by
        ``loop()`` or ``tool_names()``), so a new session's first request lists them. A
        server that fails is reported by ``mcp.status()``, never raised: the agents run
        without its tools."""
        async with self._mcp_starting:
            if self._mcp_started:
                return
            await self.mcp.start()
            self._mcp_started = True
            for preset, loop in self._loops.items():
                allowed = None if preset is None else self.config.presets[preset].tools
                self._offer_mcp_tools(loop.tools, allowed)

    async def __aenter__(self) -> Harness:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def interrupted_child_notice(session_id: str) -> str:
    """The line an operator reads (on stderr) for a child that was still running when its
    harness closed (`Harness.interrupted_children`)."""
    return (
        f"child session {session_id} was still running; resume it with "
        f"dsh run --resume {session_id}"
    )


def _hook_limits(hooks: HooksConfig) -> LocalBashConfig:
    """The hook executor's limits: the hooks' own timeouts (never the model's bash cap) and room
    for a hook's JSON answer."""
    longest = max(
        [hooks.default_timeout]
        + [
            hook.timeout
            for event in HOOK_EVENTS
            for group in hooks.hooks.groups(event)
            for hook in group.hooks
            if hook.timeout is not None
        ]
    )
    return LocalBashConfig(
        timeout=hooks.default_timeout, max_timeout=longest, max_output_bytes=1024 * 1024
    )


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
)
"""Every tool the harness itself may offer (a test keeps this list true)."""


def _own_tools(tools: Sequence[ToolDefinition[Any]]) -> list[ToolDefinition[Any]]:
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


def compose(
    config: Config,
    *,
    models: Mapping[str, Model] | None = None,
    env: Mapping[str, str] | None = None,
    tools: Sequence[ToolDefinition[Any]] = (),
) -> Harness:
    """Build every part from ``config`` (the DSH home resolved once and routed to the bash
    tool's ``DSH_HOME``, to the project instructions and to skill discovery). ``models`` adds
    or replaces models by provider name (``dsh demo`` and tests pass a scripted one); ``tools``
    are the application's own tools, offered to every agent beside the built-in ones (a
    preset's ``tools`` list picks among all of them by name; the registry's hooks, the result
    spill and the configured command hooks apply to them too). Raises ``HomeConflictError``
    when ``dsh_home`` and ``skills.local.dsh_home`` resolve to different directories, and
    ``DshError`` when a tool's name is already offered."""
    return Harness(config, models=models, env=env, tools=tools)
