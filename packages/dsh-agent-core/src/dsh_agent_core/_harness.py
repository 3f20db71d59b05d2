"""``compose(config)``: every part built once from one configuration, and the ``Harness`` that
creates, resumes and lists agents and closes everything.

The harness is the wiring and the public face; each idea it offers lives in its own module:
``_session_store`` (the backend at the configured location), ``_sandbox_policy`` (where
confined commands may write), ``_workspace_pins`` (each session's pinned workspace),
``_tool_sets`` (one agent loop per preset), ``_routes`` (``provider:model``), ``_lifecycle``
(create, resume, fork), ``_delegation`` (a new session's permissions, a child's limits),
``_status_rows`` (status rows), ``_manual_compaction`` (compacting by hand),
``_command_hooks`` (the hooks' own executor) and ``_shutdown`` (closing in order)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dsh_agent import AgentOptions, Extensions
from dsh_agent_core._command_hooks import command_hooks
from dsh_agent_core._config import Config
from dsh_agent_core._delegation import Delegation
from dsh_agent_core._errors import (
    DshError,
    HarnessClosedError,
    HomeConflictError,
    SandboxUnavailableError,
)
from dsh_agent_core._extras import mcp_servers
from dsh_agent_core._instructions import ProjectInstructions
from dsh_agent_core._lifecycle import SessionLifecycle
from dsh_agent_core._manual_compaction import compact_held
from dsh_agent_core._model_windows import WindowDiscovery, missing_window_hint
from dsh_agent_core._models import provider_models
from dsh_agent_core._routes import Routes
from dsh_agent_core._runtime_context import RuntimeContext
from dsh_agent_core._sandbox_policy import sandbox_policy
from dsh_agent_core._session_mcp import SessionMcpServers, session_mcp_servers
from dsh_agent_core._session_store import build_persistence
from dsh_agent_core._session_tools import SessionCreateTool, SessionResultTool, SessionStatusTool
from dsh_agent_core._shutdown import (
    close_each,
    close_together,
    interrupted_child_notice,
    raise_together,
    running_children,
)
from dsh_agent_core._skills import SkillCatalog
from dsh_agent_core._status import SessionStatusRow
from dsh_agent_core._status_rows import SessionRows
from dsh_agent_core._titles import FallbackTitles
from dsh_agent_core._tool_sets import (
    BUILT_IN_TOOL_NAMES,
    DEFAULT_TOOL_NAMES,
    OPT_IN_TOOL_NAMES,
    PresetLoops,
    own_tools,
)
from dsh_agent_core._workspace_pins import WorkspacePins
from dsh_agent_loop import AgentLoop, LoopAgent, ResumeOptionsError
from dsh_bash_local import LocalBashConfig, LocalBashExecutor
from dsh_bash_sandbox import SandboxExecutor, SandboxProbe
from dsh_compaction import CompactionResult, Compactor
from dsh_llm import Model, PluginSource, UserMessage
from dsh_paths import resolve_dsh_home
from dsh_persistence import SessionAlreadyOwnedError, SessionSnapshot
from dsh_session import SessionEvent, SessionHeader
from dsh_shell import SandboxMode, WorkspacePin
from dsh_tool_bash import BashTool, Job, JobRegistry, ShellEnvRegistry, job_tools
from dsh_tool_fs import FileTools
from dsh_tool_todo import TodoWriteTool
from dsh_tools import ResultSpill, ToolDefinition

__all__ = [
    "BUILT_IN_TOOL_NAMES",
    "DEFAULT_TOOL_NAMES",
    "OPT_IN_TOOL_NAMES",
    "Harness",
    "build_persistence",
    "compose",
    "interrupted_child_notice",
    "sandbox_policy",
]

JOBS_PLUGIN = "tool-jobs"
"""The plugin name on a background job's finish notice."""


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
        shows_plans: bool = False,
    ) -> None:
        application_tools = own_tools(tools)  # refused before anything is built or opened
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
        self._pins = WorkspacePins(config.sandbox.mode)
        local = LocalBashConfig(timeout=config.bash.timeout, max_timeout=config.bash.max_timeout)
        self.executor = SandboxExecutor(
            LocalBashExecutor(local),
            policy=self.policy,
            bwrap=config.sandbox.bwrap,
            workspace_pins=self.workspace_pin,
        )
        self.jobs = JobRegistry()
        self._provider_models = provider_models(config, env)
        self.models: dict[str, Model] = {**self._provider_models, **(models or {})}
        self._routes = Routes(
            config,
            self.models,
            self._provider_models,
            overridden=frozenset(models or ()),
            env=os.environ if env is None else env,
        )
        self.extensions = Extensions()
        self.extensions.session_start.add(self._pins.pin)
        # the prefix in wire order: the project's instructions, then the skills catalog
        self.instructions: ProjectInstructions | None = None
        if config.instructions.enabled:
            self.instructions = ProjectInstructions(home)
            self.extensions.session_prefix.add(self.instructions)
        self.skills: SkillCatalog | None = None
        if config.skills.local.enabled:
            self.skills = SkillCatalog(home)
            self.extensions.session_prefix.add(self.skills)
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
        )
        built_in: list[ToolDefinition[Any]] = [bash]
        if config.bash.background:
            built_in.extend(job_tools(self.jobs))
        # the file tools follow the bash tool's sandbox policy; both read each calling
        # session's own logged mode from its log
        self.files = FileTools(self.policy, workspace_pins=self.workspace_pin)
        built_in.extend(self.files.definitions())
        self.spill = ResultSpill(home / "spill")
        # MCP servers start with the harness (start(), async with, or the first agent); what
        # stdio servers print on stderr goes to <DSH_HOME>/logs/mcp-servers.log, rotated at
        # its cap (one older file kept); aclose kills each stdio server's process group
        self.mcp = mcp_servers(config.mcp, environ=env, log_file=home / "logs" / "mcp-servers.log")
        self._hook_executor, self.hooks = command_hooks(
            config.hooks, spill=self.spill, lineage=self._header_of
        )
        if self.hooks is not None:
            self._hook_points = self.hooks.install(self.extensions)
        # the application's own tools come last, beside the built-in ones (a preset's `tools`
        # list picks among them by name, as it does among the built-in ones)
        session_tools: list[ToolDefinition[Any]] = [
            SessionStatusTool(self),
            SessionCreateTool(self),
            SessionResultTool(self),
        ]
        # the model's task list: offered where someone sees it (see TodoConfig)
        self.offers_todo = config.todo.offered(shows_plans=shows_plans)
        """Whether agents get ``todo_write`` (``[todo] enabled``, else the front end's
        ``shows_plans``)."""
        if self.offers_todo:
            allow_parallel = config.todo.allow_parallel_in_progress
            session_tools.append(TodoWriteTool(allow_parallel_in_progress=allow_parallel))
        self._loops = PresetLoops(
            config,
            tools=[*built_in, *session_tools, *application_tools],
            mcp=self.mcp,
            spill=self.spill,
            hooks=self.hooks,
            models=self.models,
            persistence=self.persistence,
            extensions=self.extensions,
        )
        self._rows = SessionRows(self.persistence, self.get, self.live)
        self._lifecycle = SessionLifecycle(
            config,
            persistence=self.persistence,
            routes=self._routes,
            delegation=Delegation(config, self.policy, self._pins),
            loop=self.loop,
            loops=self._loops,
            get=self.get,
            start=self.start,
        )
        self._notices = self.jobs.on_finished(self._job_finished)
        self._closed = False
        self.interrupted_children: list[str] = []
        """The ``session_create`` children whose turn was still running when ``aclose`` began
        (cancelled then, their logs closed resumable); see `interrupted_child_notice`."""

    # -- parts ------------------------------------------------------------------------------

    def tool_names(self, preset: str | None = None) -> list[str]:
        """The tools an agent of ``preset`` (default: no preset) is offered."""
        return self.loop(preset).tools.names()

    def _refuse_if_closed(self) -> None:
        """A closed harness starts, resumes, forks and compacts nothing (`HarnessClosedError`)."""
        if self._closed:
            raise HarnessClosedError()

    def loop(self, preset: str | None = None) -> AgentLoop:
        """The agent loop of ``preset`` (its tool set); built on first use."""
        self._refuse_if_closed()
        return self._loops.loop(preset)

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

    def workspace_pin(self, session_id: str) -> WorkspacePin | None:
        """The workspace ``session_id`` pinned when it started or resumed in this harness
        (``None``: not a session of this harness, or one without a cwd). The bash tool's
        sandbox and the file tools verify it before every confined call and refuse, closed,
        once it resolves elsewhere. Raises `dsh_shell.WorkspaceChangedError` for a session
        that runs unconfined and whose cwd could not be pinned: a confined call of it fails."""
        return self._pins.get(session_id)

    # -- routes -----------------------------------------------------------------------------

    def options(self, route: str | None, *, reasoning_effort: str | None = None) -> AgentOptions:
        """Agent options for ``route`` (``provider:model``; default: the config's ``model``)."""
        return self._routes.options(route, reasoning_effort=reasoning_effort)

    def check_route(self, route: str | None) -> None:
        """Raise :class:`DshError` when ``route``'s provider cannot be called as configured (an
        API key variable that is not set), before any session is created for it. ``route``
        may leave out its model (``"local"``; see :meth:`resolve_route`)."""
        self._routes.check(route)

    async def resolve_route(self, route: str | None) -> str:
        """``route`` (default: the config's ``model``) as ``provider:model``. A route that
        names only its provider (``"local"``, ``"ollama"``) asks the provider's server once
        which models it serves (``GET /v1/models``, a few seconds at most): the one it serves
        is the model; none, several, or a server that cannot be asked raise :class:`DshError`
        saying what it serves and how to name one (``--model ollama:qwen2.5-coder:7b``)."""
        return await self._routes.resolve(route)

    # -- agents -----------------------------------------------------------------------------

    async def _header_of(self, session_id: str) -> SessionHeader | None:
        """The header of ``session_id``, live or stored (``None`` when neither), for the hook
        runner: a delegated session's hooks run in its root session's cwd."""
        return await self._rows.header(session_id)

    def get(self, session_id: str) -> LoopAgent | None:
        """The live agent of ``session_id``, if any."""
        return self._loops.get(session_id)

    def live(self) -> list[LoopAgent]:
        """Every live agent."""
        return self._loops.live()

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
        tools: Sequence[ToolDefinition[Any]] = (),
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

        ``tools`` are offered to this session only, beside its preset's (whatever the preset's
        list says), in an agent loop of its own: the tools of an editor's MCP servers
        (`session_mcp_servers`). The caller owns them (and stops what they run once the agent
        closed); a child the session creates does not get them. A name offered already raises
        `DshError` naming the tool.
        """
        self._refuse_if_closed()
        return await self._lifecycle.create(
            prompt,
            preset=preset,
            model=model,
            reasoning_effort=reasoning_effort,
            cwd=cwd,
            session_id=session_id,
            parent=parent,
            cwd_approved=cwd_approved,
            tools=tools,
        )

    async def resume(
        self,
        session_id: str,
        *,
        model: str | None = None,
        tools: Sequence[ToolDefinition[Any]] = (),
    ) -> LoopAgent:
        """The live agent of ``session_id``, or its stored session resumed (its preset and, unless
        ``model`` is given, the route and system prompt its log last used). ``tools`` are
        offered to this session only, as `create` says; giving them for a session that is open
        in this harness already raises `DshError`."""
        self._refuse_if_closed()
        return await self._lifecycle.resume(session_id, model=model, tools=tools)

    def session_mcp_servers(self, servers: Mapping[str, Mapping[str, Any]]) -> SessionMcpServers:
        """MCP servers one session brings (an editor passes them to ``dsh acp``), not started
        yet: ``servers`` maps each name to a table with dsh-tool-mcp's keys (``command``,
        ``args``, ``env``, ``cwd`` for stdio; ``url``, ``headers`` for streamable HTTP). Give
        their ``tools()`` to `create` or `resume` after ``start()``; ``aclose()`` stops them.
        Raises `McpServerNameError` for a name a configured server has (or whose tools would
        share its prefix), `McpServerTableError` for a table dsh-tool-mcp refuses (naming the
        server and the key), and
        `MissingExtraError` without the ``[mcp]`` extra."""
        self._refuse_if_closed()
        return session_mcp_servers(self.config.mcp, servers)

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
        self._refuse_if_closed()
        return await self._lifecycle.fork(
            parent_id, session_id=session_id, boundary=boundary, prompt=prompt
        )

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
        self._refuse_if_closed()
        agent = self.get(session_id)
        if agent is not None:
            if agent.status == "running":
                raise DshError(
                    f"session {session_id!r} is running a turn; compact it once it is idle"
                )
            return await compact_held(self.compactor, agent)
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
            return await compact_held(self.compactor, agent)
        finally:
            await agent.aclose()

    # -- inspection -------------------------------------------------------------------------

    async def sessions(self) -> list[SessionSnapshot]:
        """Every stored session, most recently updated first."""
        return await self._rows.sessions()

    async def session_events(self, session_id: str) -> list[SessionEvent] | None:
        """The events of ``session_id``: the live agent's, else the stored log's (``None`` when
        neither exists)."""
        return await self._rows.events(session_id)

    async def status_of(self, session_id: str) -> SessionStatusRow:
        """The row of one session (``missing`` when neither live nor stored)."""
        return await self._rows.status_of(session_id)

    async def status(self, recent_n: int = 50) -> list[SessionStatusRow]:
        """The ``recent_n`` most recently updated sessions, live ones merged in (live wins)."""
        return await self._rows.status(recent_n)

    # -- jobs -------------------------------------------------------------------------------

    def _job_finished(self, job: Job, notice: str) -> None:
        agent = self.get(job.owner) if job.owner is not None else None
        if agent is None or agent.closed:
            return
        message = UserMessage.from_text(
            notice, source=PluginSource(plugin=JOBS_PLUGIN, form="notice")
        )
        agent.steer(message)  # enters the next step, or wakes an idle agent

    # -- starting and closing ---------------------------------------------------------------

    async def start(self) -> None:
        """Start the configured MCP servers and list their tools, once (``async with`` and the
        first ``create``/``resume``/``fork`` do it; a concurrent caller waits for that start).
        Their tools are then offered by every agent loop, also one built before (by
        ``loop()`` or ``tool_names()``), so a new session's first request lists them. A
        server that fails is reported by ``mcp.status()``, never raised: the agents run
        without its tools."""
        await self._loops.start_mcp()

    async def aclose(self) -> None:
        """Close every agent (cancelling running turns), every background job, every model
        connection and the persistence backend. Failures are raised together."""
        if self._closed:
            return
        self._closed = True
        self._notices.dispose()
        # children still at work are cancelled by the close below (their logs end the turn
        # aborted, resumable); name them so the operator can resume them
        self.interrupted_children = running_children(self.live())
        failures = await close_together(loop.aclose for loop in self._loops.built())
        self._compaction.dispose()  # no agent steps any more
        failures += await close_together(
            [self.jobs.aclose, *(model.aclose for model in self._provider_models.values())]
        )
        # after the jobs: their processes are gone before the temp dirs are removed
        failures += await close_each(
            [
                self.executor.aclose,
                *([self.hooks.aclose] if self.hooks is not None else []),
                *([self._hook_executor.aclose] if self._hook_executor is not None else []),
                self.mcp.aclose,  # closes the servers' log too
                self.persistence.aclose,
            ]
        )
        raise_together("closing the harness failed", failures)

    async def __aenter__(self) -> Harness:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def compose(
    config: Config,
    *,
    models: Mapping[str, Model] | None = None,
    env: Mapping[str, str] | None = None,
    tools: Sequence[ToolDefinition[Any]] = (),
    shows_plans: bool = False,
) -> Harness:
    """Build every part from ``config`` (the DSH home resolved once and routed to the bash
    tool's ``DSH_HOME``, to the project instructions and to skill discovery). ``models`` adds
    or replaces models by provider name (``dsh demo`` and tests pass a scripted one); ``tools``
    are the application's own tools, offered to every agent beside the built-in ones (a
    preset's ``tools`` list picks among all of them by name; the registry's hooks, the result
    spill and the configured command hooks apply to them too). Raises ``HomeConflictError``
    when ``dsh_home`` and ``skills.local.dsh_home`` resolve to different directories, and
    ``DshError`` when a tool's name is already offered.

    ``shows_plans`` says the front end shows the model's task list (``dsh acp`` sends it to the
    editor as the ACP plan): agents then get ``todo_write`` unless ``[todo] enabled = false``;
    without it (the terminal, ``dsh run``) only ``[todo] enabled = true`` offers it."""
    return Harness(config, models=models, env=env, tools=tools, shows_plans=shows_plans)
