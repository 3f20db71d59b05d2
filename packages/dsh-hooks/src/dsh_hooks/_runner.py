"""``HookRunner``: the configured command hooks, bridged onto a loop and a tool registry.

Where each event runs and what its answer does:

- ``SessionStart`` (``session_start``, subject ``startup`` | ``resume``): starts at once, in the
  background, so creating an agent never waits on it. Its context (``additionalContext`` or
  plain stdout) becomes one ``user/message`` from the plugin source ``hooks-claude-code`` /
  ``hooks-codex`` that enters *before* the prompt of the agent's first step (the first
  ``pre_step`` waits for the hook). Blocking answers do not apply.
- ``UserPromptSubmit`` (``pre_step``, when user-typed messages enter): a block (exit 2,
  ``decision: "block"``) or ``continue: false`` rejects the step (``Reject``: the turn ends
  ``blocked``, the prompt is dropped); context enters after the prompt.
- ``PreToolUse`` (pre-execute hook, subject the tool name — a built-in tool matches under
  its Claude Code name too, so ``"Bash"`` selects ``bash``): a deny (exit 2, ``decision:
  "block"``, ``permissionDecision: "deny"``) refuses the call with the hook's reason (an error
  result for the model); Claude Code's ``ask`` asks the approver (``Ask``); Codex honours only
  blocks.
- ``PostToolUse`` (post-execute hook): a block keeps the result's content, appends the reason
  and makes it an error result; context is appended to the result as its own text block.
- ``Stop`` (``turn_stopping``): a block steers the agent with the reason (``continue: blocked
  by Stop hook`` when it gave none), so the turn runs another step; ``stop_hook_active`` is
  true in the payloads of the rest of that turn.
- ``SubagentStart`` / ``SubagentStop`` (Claude Code; subject the child's ``agent_type``):
  for a child session (its header's ``origin`` is ``subagent``, as ``session_create`` makes
  them) they take the place of ``SessionStart`` (at its startup) and of ``Stop``, as in Claude
  Code: ``SubagentStart`` context enters before the child's first prompt, a ``SubagentStop``
  block steers the child on. A child's prompts do not run ``UserPromptSubmit`` (its prompt is
  the parent's, not the user's); its tool calls run ``PreToolUse`` / ``PostToolUse``. Codex has
  no subagent events: its hooks see a child as any other session.
- ``continue: false`` on a turn-scoped event cancels the turn (``CancelCause("hook", reason)``).
- ``updatedInput`` is logged as a warning and not applied: the call's arguments are already in
  the log (``tool/call``, the assistant message the model is replayed), and running other
  arguments than those would make the log lie about what ran.

Every hook text that enters the model's context or the log — a deny or block reason, a
``stopReason``, an ``ask`` reason, the context of ``SessionStart`` / ``SubagentStart`` /
``UserPromptSubmit`` / ``PostToolUse`` — is bounded by the tool results' rule
(``dsh_tools.ResultSpill.bound_text``): over 50,000 bytes, its head and tail and the path of a
``0600`` file in the session's spill folder that keeps it whole. The texts one event adds are
bounded together (over the budget in all, they enter as one bounded text).

Matching hooks of one event run one after another, in configuration order, and their answers
are merged (`merge_outputs`). A hook that fails, is killed or times out is a non-blocking
error, logged by Python logging (``dsh_hooks``) and, inside an open turn, as the
``hook/invoked`` + ``hook/result`` pair in the agent's session. ``SessionStart`` runs outside
any turn: its pair is logged when its context enters the first turn (inside it), and only by
Python logging when the agent never runs one.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import tempfile
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from dsh_agent import (
    Agent,
    CancelCause,
    Enter,
    Extensions,
    PreStepDecision,
    Reject,
    SessionStartSource,
    StepContext,
    TurnStopping,
    calling_agent,
)
from dsh_hooks._config import HookEventName, HooksConfig
from dsh_hooks._journal import TurnTracker, append_hook_pair, last_assistant_text
from dsh_hooks._output import HookOutput, MergedOutcome, merge_outputs
from dsh_hooks._payloads import PayloadBuilder, tool_aliases
from dsh_hooks._run import run_command_hook
from dsh_llm import PluginSource, TextBlock, UserMessage, UserSource
from dsh_session import Session, SessionHeader
from dsh_shell import ShellExecutor
from dsh_tools import (
    MAX_INLINE_BYTES,
    Ask,
    Deny,
    Disposer,
    PolicyDecision,
    ResultSpill,
    ToolErrorInfo,
    ToolExecution,
    ToolRegistry,
    ToolResult,
)

__all__ = ["HOOK_BLOCKED_CODE", "HookRunner", "plugin_name"]

_log = logging.getLogger("dsh_hooks")

HOOK_BLOCKED_CODE = "HOOK_BLOCKED"
"""The error code of a tool result a ``PostToolUse`` hook blocked."""

_PLAIN_CONTEXT_EVENTS = frozenset({"SessionStart", "UserPromptSubmit"})


def plugin_name(config: HooksConfig) -> str:
    """The plugin source name of the messages a runner adds: ``hooks-<dialect>``."""
    return f"hooks-{config.dialect}"


@dataclass(frozen=True, slots=True)
class _Ran:
    """One finished hook, kept until it can be logged inside a turn."""

    handler_id: str
    matcher: str | None
    output: HookOutput
    duration_ms: int


class _SessionStart:
    """The background ``SessionStart`` (or ``SubagentStart``) run of one session, until its
    context has entered."""

    __slots__ = ("event", "logged", "task")

    def __init__(
        self, task: asyncio.Task[tuple[MergedOutcome, list[_Ran]]], event: HookEventName
    ) -> None:
        self.task = task
        self.event = event
        self.logged = False


def _prompt_text(messages: Iterable[UserMessage]) -> str:
    return "\n\n".join(
        "".join(block.text for block in message.content if isinstance(block, TextBlock))
        for message in messages
    )


class HookRunner:
    """Runs the command hooks of ``config`` through ``executor`` (see the module docs).

    ``install(extensions, tools)`` mounts it on a loop's `Extensions` and a `ToolRegistry`
    (either may be left out) and returns the disposer; ``aclose()`` cancels the background
    ``SessionStart`` runs. One runner may serve many agents at once.

    ``spill`` is the ``dsh_tools.ResultSpill`` whose rule bounds every hook text entering the
    context (pass the one the tool results use, so both share the session's spill folder);
    without one, a runner makes its own under a private temporary directory
    (``tempfile.mkdtemp``) the first time a text is over the budget.

    ``lineage`` gives the header of a session by id (``None`` when unknown). With it, the hooks
    of a delegated session (``origin`` ``subagent``, down any chain of them) run as its root
    session's do: in the root's cwd, with the root's ``CLAUDE_PROJECT_DIR``, and their payloads
    name the root's cwd (as Claude Code's subagents share the main session's project dir), so
    what a child's hook runs is what the root session's sandbox keeps read-only.
    """

    def __init__(
        self,
        config: HooksConfig,
        executor: ShellExecutor,
        *,
        spill: ResultSpill | None = None,
        lineage: Callable[[str], Awaitable[SessionHeader | None]] | None = None,
    ) -> None:
        self.config = config
        self.executor = executor
        self._spill = spill
        self._lineage = lineage
        self._roots: dict[str, str | None] = {}
        self._payloads = PayloadBuilder(config)
        self._plugin = PluginSource(plugin=plugin_name(config))
        self._ids = itertools.count(1)
        self._turns = TurnTracker()
        self._starting: weakref.WeakKeyDictionary[Session, _SessionStart] = (
            weakref.WeakKeyDictionary()
        )
        self._continued: weakref.WeakKeyDictionary[Session, int] = weakref.WeakKeyDictionary()
        for note in config.ignored:
            _log.warning("hook configuration: %s", note)

    # -- mounting ---------------------------------------------------------------------------

    def install(
        self, extensions: Extensions | None = None, tools: ToolRegistry | None = None
    ) -> Disposer:
        """Register on the extension points and tool hooks of the configured events only."""
        hooks = self.config.hooks
        disposers: list[Disposer] = []
        if extensions is not None:
            starting = hooks.session_start or hooks.subagent_start
            if starting:
                disposers.append(extensions.session_start.add(self.session_start))
            if starting or hooks.user_prompt_submit:
                disposers.append(extensions.pre_step.add(self.pre_step))
            if hooks.stop or hooks.subagent_stop:
                disposers.append(extensions.turn_stopping.add(self.turn_stopping))
        if tools is not None:
            if hooks.pre_tool_use:
                disposers.append(tools.add_pre_execute_hook(self.pre_tool_use))
            if hooks.post_tool_use:
                disposers.append(tools.add_post_execute_hook(self.post_tool_use))

        def withdraw() -> None:
            for disposer in disposers:
                disposer()

        return Disposer(withdraw)

    async def aclose(self) -> None:
        """Cancel every ``SessionStart`` run still going, and wait for them to end."""
        tasks = [state.task for state in list(self._starting.values())]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # -- running ----------------------------------------------------------------------------

    def _env(self, cwd: str | None) -> Mapping[str, str]:
        env = dict(self.config.env)
        if self.config.dialect == "claude-code":
            project = self.config.project_dir if self.config.project_dir is not None else cwd
            if project is not None:
                env.setdefault("CLAUDE_PROJECT_DIR", project)
        return env

    async def _run(
        self,
        event: HookEventName,
        subject: str | None,
        payload: Mapping[str, object],
        *,
        cwd: str | None,
        session: Session | None = None,
        turn: int | None = None,
        aliases: tuple[str, ...] = (),
        agent: Agent | None = None,
    ) -> tuple[MergedOutcome, list[_Ran]]:
        """Run every hook ``event`` selects for ``subject``; with a ``session`` and an open
        ``turn`` each one is logged as it finishes, else it is returned for later logging."""
        if self.config.dialect == "codex" and not self.config.model:
            model = agent.options.model if agent is not None else ""  # the agent's own model
            payload = {**payload, "model": model}
        stdin = json.dumps(payload, ensure_ascii=False)
        if self.config.dialect == "claude-code":
            stdin += "\n"
        outputs: list[HookOutput] = []
        unlogged: list[_Ran] = []
        for group, hook in self.config.hooks.selected(event, subject, aliases):
            handler_id = f"{self.config.dialect}:{event}:{next(self._ids)}"
            ran = await run_command_hook(
                self.executor,
                hook,
                event,
                stdin,
                workdir=cwd,
                default_timeout=self.config.default_timeout,
                env=self._env(cwd),
                dsh_env=self.config.dsh_env,
                plain_stdout_is_context=event in _PLAIN_CONTEXT_EVENTS,
            )
            output = ran.output
            self._report(event, hook.command, output)
            outputs.append(output)
            record = _Ran(handler_id, group.matcher, output, ran.duration_ms)
            if session is not None and turn is not None:
                self._append(session, turn, event, record)
            else:
                unlogged.append(record)
        return merge_outputs(outputs), unlogged

    def _report(self, event: str, command: str, output: HookOutput) -> None:
        if output.failed:
            _log.warning("%s hook %r: %s (non-blocking)", event, command, output.error)
        if output.updated_input is not None:
            _log.warning("%s hook %r asked for updatedInput, which is not applied", event, command)
        if output.system_message is not None:
            limit = self.config.stderr_summary_max_chars
            message = output.system_message
            message = message if len(message) <= limit else message[:limit] + "…"
            _log.info("%s hook %r: %s", event, command, message)

    # -- bounding ---------------------------------------------------------------------------

    @property
    def spill(self) -> ResultSpill:
        """The rule that bounds hook texts (see the class docs)."""
        if self._spill is None:
            self._spill = ResultSpill(tempfile.mkdtemp(prefix="dsh-hooks-spill-"))
        return self._spill

    def _fits(self, texts: Sequence[str]) -> bool:
        budget = self._spill.max_inline_bytes if self._spill is not None else MAX_INLINE_BYTES
        size = sum(len(text.encode("utf-8", "surrogatepass")) + 2 for text in texts)
        return size <= budget

    async def _bounded(self, text: str, session_id: str | None, label: str) -> str:
        """``text`` bounded by the spill rule (``label`` names its spill file)."""
        if self._fits([text]):
            return text
        return await self.spill.bound_text(
            text, session_id=session_id, label=f"hook-{label}", what="hook text"
        )

    async def _bounded_all(
        self, texts: Sequence[str], session_id: str | None, label: str
    ) -> list[str]:
        """The texts one event adds: as they are when they fit the budget together, else
        joined into one bounded text."""
        if self._fits(texts):
            return list(texts)
        return [await self._bounded("\n\n".join(texts), session_id, label)]

    async def _bounded_reason(
        self, text: str | None, session_id: str | None, label: str
    ) -> str | None:
        return None if text is None else await self._bounded(text, session_id, label)

    def _append(self, session: Session, turn: int, event: str, record: _Ran) -> None:
        append_hook_pair(
            session,
            turn=turn,
            point=event,
            dialect=self.config.dialect,
            handler_id=record.handler_id,
            matcher=record.matcher,
            output=record.output,
            duration_ms=record.duration_ms,
            stderr_limit=self.config.stderr_summary_max_chars,
        )

    def _context_message(self, contexts: Iterable[str]) -> UserMessage | None:
        blocks = [TextBlock(text=text) for text in contexts]
        if not blocks:
            return None
        return UserMessage(content=list(blocks), source=self._plugin)

    def _subagent_type(self, session: Session) -> str | None:
        """The ``agent_type`` of a child session in the Claude Code dialect, else ``None``."""
        header = session.header
        if self.config.dialect != "claude-code" or header is None or header.origin != "subagent":
            return None
        return header.agent_preset or "general-purpose"

    async def _halt(self, agent: Agent | None, event: str, outcome: MergedOutcome) -> None:
        if outcome.stop and agent is not None:
            reason = await self._bounded_reason(outcome.stop_reason, agent.id, f"{event}-stop")
            reason = reason or f"stopped by {event} hook"
            agent.cancel(CancelCause(kind="hook", reason=reason), keep_inbox=True)

    # -- SessionStart -----------------------------------------------------------------------

    def session_start(self, agent: Agent, source: SessionStartSource) -> None:
        """The ``session_start`` listener: start the ``SessionStart`` hooks (a child's
        ``SubagentStart`` hooks) in the background."""
        event: HookEventName = "SessionStart"
        subject: str = source
        agent_type = self._subagent_type(agent.session) if source == "startup" else None
        if agent_type is not None:
            event, subject = "SubagentStart", agent_type
        if not any(True for _ in self.config.hooks.selected(event, subject)):
            return
        task = asyncio.ensure_future(self._start(agent, event, subject, agent_type, source))
        self._starting[agent.session] = _SessionStart(task, event)

    async def _start(
        self,
        agent: Agent,
        event: HookEventName,
        subject: str,
        agent_type: str | None,
        source: SessionStartSource,
    ) -> tuple[MergedOutcome, list[_Ran]]:
        cwd = await self._hook_cwd(agent.session, agent.cwd)
        if agent_type is not None:
            payload = self._payloads.subagent_start(agent.id, cwd, agent_type)
        else:
            payload = self._payloads.session_start(agent.id, cwd, source)
        return await self._run(event, subject, payload, cwd=cwd, agent=agent)

    async def _hook_cwd(self, session: Session | None, cwd: str | None) -> str | None:
        """Where the hooks of ``session`` (whose cwd is ``cwd``) run: its own cwd, or for a
        delegated session its root session's (the nearest ancestor found, when the chain
        breaks)."""
        header = session.header if session is not None else None
        if header is None or self._lineage is None or not _delegated(header):
            return cwd
        ident = header.id
        if ident in self._roots:
            return self._roots[ident]
        root = header.cwd if header.cwd is not None else cwd
        seen = {ident}
        while _delegated(header):
            parent_id = header.parent_session
            parent = await self._lineage(parent_id) if parent_id and parent_id not in seen else None
            if parent is None:
                _log.warning(
                    "session %r: its ancestor session %r is not found; its hooks run in %r",
                    ident,
                    parent_id,
                    root,
                )
                return root
            seen.add(parent.id)
            header = parent
            root = parent.cwd if parent.cwd is not None else root
        self._roots[ident] = root
        return root

    async def _session_start_context(self, session: Session, turn: int) -> _SessionStart | None:
        """Wait for the session's ``SessionStart`` run and log it inside ``turn`` (once)."""
        state = self._starting.get(session)
        if state is None:
            return None
        if state.task.cancelled():
            del self._starting[session]
            return None
        await asyncio.wait([state.task])  # its failure is handled below, never raised here
        if state.task.cancelled() or state.task.exception() is not None:
            if not state.task.cancelled():
                _log.warning("%s hooks failed: %s", state.event, state.task.exception())
            del self._starting[session]
            return None
        if not state.logged:
            state.logged = True
            for record in state.task.result()[1]:
                self._append(session, turn, state.event, record)
        return state

    # -- UserPromptSubmit -------------------------------------------------------------------

    async def pre_step(
        self, step: StepContext, decision: PreStepDecision
    ) -> PreStepDecision | None:
        """The ``pre_step`` listener: ``SessionStart`` / ``SubagentStart`` context and
        ``UserPromptSubmit``."""
        if isinstance(decision, Reject) or not decision.messages:
            return None  # nothing enters: a waiting SessionStart context waits on
        agent = step.agent
        session = agent.session
        started = await self._session_start_context(session, step.turn)
        before = None
        if started is not None:
            contexts = started.task.result()[0].contexts
            before = self._context_message(
                await self._bounded_all(contexts, agent.id, f"{started.event}-context")
            )
        after = None
        prompts = [m for m in decision.messages if isinstance(m.source, UserSource)]
        user = self._subagent_type(session) is None  # a child's prompts are its parent's
        if prompts and user and self.config.hooks.user_prompt_submit:
            cwd = await self._hook_cwd(session, agent.cwd)
            payload = self._payloads.user_prompt_submit(
                agent.id, cwd, step.turn, _prompt_text(prompts)
            )
            outcome, _ = await self._run(
                "UserPromptSubmit",
                None,
                payload,
                cwd=cwd,
                session=session,
                turn=step.turn,
                agent=agent,
            )
            if outcome.decision == "deny" or outcome.stop:
                reason = outcome.reason or outcome.stop_reason
                return Reject(await self._bounded_reason(reason, agent.id, "UserPromptSubmit"))
            after = self._context_message(
                await self._bounded_all(outcome.contexts, agent.id, "UserPromptSubmit-context")
            )
        if started is not None:
            del self._starting[session]
        if before is None and after is None:
            return None
        messages = [*([before] if before else []), *decision.messages, *([after] if after else [])]
        return Enter(tuple(messages))

    # -- Stop -------------------------------------------------------------------------------

    async def turn_stopping(self, stopping: TurnStopping) -> None:
        """The ``turn_stopping`` listener: ``Stop`` (a child's ``SubagentStop``); a block
        steers the agent on."""
        agent, session, turn = stopping.agent, stopping.agent.session, stopping.turn
        active = self._continued.get(session) == turn
        event: HookEventName = "Stop"
        subject = None
        agent_type = self._subagent_type(session)
        if agent_type is not None:
            event, subject = "SubagentStop", agent_type
        if not any(True for _ in self.config.hooks.selected(event, subject)):
            return
        cwd = await self._hook_cwd(session, agent.cwd)
        if agent_type is not None:
            payload = self._payloads.subagent_stop(agent.id, cwd, turn, agent_type, active=active)
        else:
            payload = self._payloads.stop(
                agent.id,
                cwd,
                turn,
                active=active,
                last_assistant_message=last_assistant_text(session),
            )
        outcome, _ = await self._run(
            event, subject, payload, cwd=cwd, session=session, turn=turn, agent=agent
        )
        if outcome.decision == "deny":
            self._continued[session] = turn
            reason = await self._bounded_reason(outcome.reason, agent.id, event)
            reason = reason or f"continue: blocked by {event} hook"
            agent.steer(UserMessage.from_text(reason, source=self._plugin))
        else:
            await self._halt(agent, event, outcome)

    # -- PreToolUse / PostToolUse -----------------------------------------------------------

    async def _tool_facts(
        self, execution: ToolExecution
    ) -> tuple[str, str | None, Session | None, int | None]:
        caller = execution.caller
        session = caller.session if caller is not None else None
        turn = self._turns.open_turn(session) if session is not None else None
        cwd = await self._hook_cwd(session, caller.cwd if caller is not None else None)
        return execution.session_id or "", cwd, session, turn

    async def pre_tool_use(self, execution: ToolExecution) -> PolicyDecision | None:
        """The pre-execute hook: ``PreToolUse``."""
        session_id, cwd, session, turn = await self._tool_facts(execution)
        agent = calling_agent(execution)
        payload = self._payloads.pre_tool_use(
            session_id,
            cwd,
            turn if turn is not None else 0,
            execution.tool_name,
            execution.arguments,
            execution.call_id,
        )
        outcome, _ = await self._run(
            "PreToolUse",
            execution.tool_name,
            payload,
            cwd=cwd,
            session=session,
            turn=turn,
            aliases=tool_aliases(execution.tool_name),
            agent=agent,
        )
        await self._halt(agent, "PreToolUse", outcome)
        label = f"PreToolUse-{execution.call_id}"
        if outcome.decision == "deny":
            reason = await self._bounded_reason(outcome.reason, execution.session_id, label)
            return Deny(reason or "blocked by PreToolUse hook")
        if outcome.stop:
            reason = await self._bounded_reason(outcome.stop_reason, execution.session_id, label)
            return Deny(reason or "stopped by PreToolUse hook")
        if outcome.decision == "ask" and self.config.dialect == "claude-code":
            return Ask(await self._bounded_reason(outcome.reason, execution.session_id, label))
        return None

    async def post_tool_use(
        self, execution: ToolExecution, result: ToolResult
    ) -> ToolResult | None:
        """The post-execute hook: ``PostToolUse``."""
        session_id, cwd, session, turn = await self._tool_facts(execution)
        agent = calling_agent(execution)
        payload = self._payloads.post_tool_use(
            session_id,
            cwd,
            turn if turn is not None else 0,
            execution.tool_name,
            execution.arguments,
            execution.call_id,
            result.text,
        )
        outcome, _ = await self._run(
            "PostToolUse",
            execution.tool_name,
            payload,
            cwd=cwd,
            session=session,
            turn=turn,
            aliases=tool_aliases(execution.tool_name),
            agent=agent,
        )
        await self._halt(agent, "PostToolUse", outcome)
        added = list(outcome.contexts)
        if outcome.decision == "deny":
            reason = outcome.reason or "blocked by PostToolUse hook"
            added.insert(0, f"PostToolUse hook: {reason}")
        label = f"PostToolUse-{execution.call_id}"
        extra = [
            TextBlock(text=text)
            for text in await self._bounded_all(added, execution.session_id, label)
        ]
        if outcome.decision == "deny":
            error = result.error if result.is_error and result.error is not None else None
            return ToolResult(
                content=[*result.content, *extra],
                is_error=True,
                error=error or ToolErrorInfo(name="ToolHookError", code=HOOK_BLOCKED_CODE),
                meta=result.meta,
            )
        if not extra:
            return None
        return result.model_copy(update={"content": [*result.content, *extra]})


def _delegated(header: SessionHeader) -> bool:
    """Whether ``header`` is a delegated (``session_create``) child's, naming its parent."""
    return header.origin == "subagent" and header.parent_session is not None
