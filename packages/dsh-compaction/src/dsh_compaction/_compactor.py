"""``Compactor``: the three triggers of compaction, mounted on a loop's extension points.

- **Pressure** (a ``pre_step`` listener that never rejects a step): before every step, when the
  measured context reaches the routed model's threshold, prune oversized tool results, then
  compact the head of the surface keeping a recent tail, up to ``compaction_retries + 1`` times.
- **Overflow** (a ``request_error`` listener): a ``CONTEXT_WINDOW_EXCEEDED`` failure prunes and
  compacts everything but the newest indivisible unit, and retries the same step (at most
  ``max_overflow_retries`` times between two successful answers).
- **Manual** (:meth:`Compactor.compact_now`): an idle agent's history, owner-less.

Failures of the automatic triggers are logged as warnings and never stop a step; a missing
context window or a retained tail not below the threshold is warned once per session and model
(never once per turn).
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from dsh_agent import (
    Agent,
    Extensions,
    PreStepDecision,
    RequestError,
    RequestErrorDecision,
    Retry,
    SessionStartSource,
    StepContext,
)
from dsh_compaction._brackets import BracketState
from dsh_compaction._config import CompactionConfig, CompactionPolicy
from dsh_compaction._errors import CompactionError
from dsh_compaction._estimate import estimate_envelope, estimate_message
from dsh_compaction._meter import TokenMeasurement, TokenMeter
from dsh_compaction._prune import PruneReport, prune_session
from dsh_compaction._retention import select_compactable_range
from dsh_compaction._slicing import SummaryBudget
from dsh_compaction._summary import Summarizer, SummaryRequest, model_summarizer
from dsh_compaction._transaction import CompactionResult, run_compaction
from dsh_llm import MESSAGE_ADAPTER, FailureCode, Message, Model, ToolSchema, context_window_of
from dsh_session import Session
from dsh_tools import Disposer

__all__ = ["OVERFLOW_CODE", "Compactor"]

OVERFLOW_CODE = FailureCode.CONTEXT_WINDOW_EXCEEDED
"""The model failure code that triggers overflow recovery (``dsh_llm.FailureCode``)."""

_log = logging.getLogger("dsh_compaction")


def _route(session: Session) -> tuple[str, str] | None:
    header = session.request_header
    if header is None:
        return None
    return str(header.config["provider"]), str(header.config["model"])


class Compactor:
    """Compaction for the agents of one loop.

    ``models`` is the model answering every provider, or ``{provider: model}`` (the same
    mapping the loop routes by); the routed model's ``context_window`` (``dsh_llm.ModelInfo``)
    sets the threshold, and a model that reports none is left alone by the pressure trigger.
    ``summarizer(model)`` makes the summary call (default: one streamed call of that model).
    ``window_hint(provider, model)`` says how to give a model its window, for the one notice a
    session gets when its model reports none (default: "set context_window for it"); ``None``
    from it means no notice for that model (one compacted by hand only, such as a scripted one).
    :meth:`install` mounts the triggers on an :class:`~dsh_agent.Extensions`.
    """

    def __init__(
        self,
        models: Model | Mapping[str, Model],
        config: CompactionConfig | None = None,
        *,
        meter: TokenMeter | None = None,
        summarizer: Callable[[Model], Summarizer] = model_summarizer,
        window_hint: Callable[[str, str], str | None] | None = None,
    ) -> None:
        if isinstance(models, Mapping):
            self._models: Mapping[str, Model] = dict(models)
            self._default: Model | None = None
        else:
            self._models, self._default = {}, models
        self.config = config if config is not None else CompactionConfig()
        self.meter = meter if meter is not None else TokenMeter()
        self._summarizer = summarizer
        self._states: weakref.WeakKeyDictionary[Session, BracketState] = weakref.WeakKeyDictionary()
        self._window_hint = window_hint
        self._warned: set[tuple[str, str, str]] = set()
        self._policies: dict[tuple[str | None, str | None], CompactionPolicy] = {}

    # -- mounting ---------------------------------------------------------------------------

    def install(self, extensions: Extensions) -> Disposer:
        """Register on ``extensions``: the lifecycle marker (``session_start``) always, the
        pressure (``pre_step``) and overflow (``request_error``) triggers unless ``auto`` is off.
        The disposer withdraws them all."""
        disposers = [extensions.session_start.add(self._session_start)]
        if self.config.auto:
            disposers.append(extensions.pre_step.add(self._pre_step))
            disposers.append(extensions.request_error.add(self._request_error))

        def withdraw() -> None:
            for disposer in disposers:
                disposer()

        return Disposer(withdraw)

    def _state(self, session: Session) -> BracketState:
        state = self._states.get(session)
        if state is None:
            state = self._states[session] = BracketState()
        return state.catch_up(session)

    def _session_start(self, agent: Agent, source: SessionStartSource) -> None:
        # everything logged before this process took the session over is a past lifecycle: a
        # compaction/start left unmatched there is a crash remnant, not a lock
        session = agent.session
        state = self._state(session)
        orphan = state.open_bracket
        if source == "resume" and orphan is not None and orphan.turn is None:
            # an owner-less (manual) bracket no closer of the resume ends: close it, so the
            # log states that it never finished (a turn's bracket ends with its interrupted turn)
            started: Any = session.events[orphan.seq].data
            ids = {"compactionId": orphan.compaction_id}
            if isinstance(started, dict) and "sourceCommandId" in started:
                ids["sourceCommandId"] = started["sourceCommandId"]
            session.append(
                "compaction/end",
                {
                    **ids,
                    "turn": None,
                    "error": "stale: the process that started this compaction ended first",
                },
            )
            state.catch_up(session)
        state.lifecycle_start = session.next_seq

    # -- reading ------------------------------------------------------------------------------

    def measure(self, session: Session) -> TokenMeasurement:
        """The meter's measurement of ``session``."""
        return self.meter.measure(session)

    def policy(self, provider: str | None, model: str | None) -> CompactionPolicy:
        """The policy for a route (the defaults merged with its override)."""
        policy = self._policies.get((provider, model))
        if policy is None:
            policy = self._policies[(provider, model)] = self.config.policy(provider, model)
        return policy

    def _model(self, provider: str) -> Model | None:
        return self._models.get(provider, self._default)

    def context_window(self, provider: str, model: str) -> int | None:
        """The window the routed model reports (``None``: unknown)."""
        serving = self._model(provider)
        return None if serving is None else context_window_of(serving, model)

    def busy(self, session: Session) -> bool:
        """Whether a compaction of ``session`` is in progress (a live ``compaction/start``)."""
        return self._state(session).live_bracket() is not None

    # -- the summary call -----------------------------------------------------------------------

    def _summary_call(
        self, agent: Agent, policy: CompactionPolicy
    ) -> tuple[Summarizer, Callable[[tuple[Message, ...]], SummaryRequest], SummaryBudget | None]:
        session = agent.session
        config = self.config
        if config.summarization_provider:
            provider, model = config.summarization_provider, config.summarization_model
        else:
            provider, model = _route(session) or (agent.options.provider, agent.options.model)
        serving = self._model(provider)
        if serving is None:
            raise CompactionError(
                session.id, "config", f"no model serves provider {provider!r} for the summary call"
            )
        header = session.request_header
        system = header.system if header is not None else None
        tools = (
            tuple(ToolSchema.model_validate(tool) for tool in (header.tools or ()))
            if header
            else ()
        )
        prefix = tuple(
            _validated(message) for message in ((header.message_prefix or ()) if header else ())
        )

        def request_for(messages: tuple[Message, ...]) -> SummaryRequest:
            return SummaryRequest(
                session_id=session.id,
                provider=provider,
                model=model,
                system=system,
                tools=tools,
                prefix=prefix,
                messages=messages,
                max_tokens=policy.max_tokens,
            )

        # the summary request must fit the window of the model that answers it
        window = context_window_of(serving, model)
        budget = (
            None
            if window is None
            else SummaryBudget(
                window=window,
                envelope=estimate_envelope(header),
                max_tokens=policy.max_tokens,
                route=f"{provider}:{model}",
                lean_envelope=sum(estimate_message(message) for message in prefix),
            )
        )
        return self._summarizer(serving), request_for, budget

    # -- pressure -------------------------------------------------------------------------------

    def _thresholds(
        self, session: Session, provider: str, model: str
    ) -> tuple[CompactionPolicy, int, int]:
        policy = self.policy(provider, model)
        window = self.context_window(provider, model)
        if window is None:
            hint = self._hint(provider, model)
            raise CompactionError(
                session.id,
                "config",
                f"model {provider}:{model} reports no context window, so its sessions are only "
                "compacted by hand" + (f"; {hint}" if hint else ""),
            )
        threshold, retained = policy.threshold(window), policy.retained(window)
        if retained >= threshold:
            raise CompactionError(
                session.id,
                "config",
                f"model {provider}:{model}: the retained tail ({retained} tokens) must be below "
                f"the threshold ({threshold} of a {window}-token window)",
            )
        return policy, threshold, retained

    def prune(self, agent: Agent) -> PruneReport:
        """Prune ``agent``'s oversized tool results now (inside its open turn)."""
        state = self._state(agent.session)
        return prune_session(agent.session, self.config.prune, open_turn=state.open_turn)

    async def compact_if_needed(self, agent: Agent) -> CompactionResult | None:
        """The pressure trigger: compact when the context reaches the threshold (see the module
        docs). ``None``: below the threshold (pruning may have been enough), no route logged
        yet, or nothing compactable. Raises :class:`CompactionError` (``config``, ``busy``,
        ``still-above``, and the transaction's)."""
        session = agent.session
        route = _route(session)
        if route is None:
            return None
        policy, threshold, retained = self._thresholds(session, *route)
        measured = self.meter.measure(session)
        live = self._state(session).live_bracket()
        if live is not None:
            raise CompactionError(
                session.id, "busy", f"compaction {live.compaction_id} is still in progress"
            )
        if measured.total_tokens < threshold:
            return None
        if self.config.prune.enabled and self.prune(agent).pruned:
            measured = self.meter.measure(session)
            if measured.total_tokens < threshold:
                return None
        result: CompactionResult | None = None
        attempts = policy.compaction_retries + 1
        for attempt in range(attempts):
            selection = select_compactable_range(session.id, measured.nodes, retained)
            if selection is None:
                if attempt == 0:
                    return None
                break
            summarizer, request_for, budget = self._summary_call(agent, policy)
            result = await run_compaction(
                session,
                self._state(session),
                self.meter,
                selection,
                summarizer,
                request_for,
                budget=budget,
            )
            measured = self.meter.measure(session)
            if measured.total_tokens < threshold:
                return result
        raise CompactionError(
            session.id,
            "still-above",
            f"{measured.total_tokens} tokens still reach the threshold {threshold} after "
            f"{attempts} compaction attempt(s)",
        )

    async def _pre_step(self, step: StepContext, decision: PreStepDecision) -> None:
        agent = step.agent
        route = _route(agent.session)
        if route is not None and self.context_window(*route) is None and not self._hint(*route):
            return  # a model compacted by hand only: nothing to say, nothing to do
        try:
            result = await self.compact_if_needed(agent)
        except CompactionError as error:
            self._warn(agent, error)
            return
        except Exception:
            _log.exception("session %s: pressure compaction failed", agent.id)
            return
        if result is not None:
            _log.info(
                "session %s: compacted %d nodes (%d tokens) into a checkpoint of %d tokens",
                agent.id,
                len(result.shadowed_seqs),
                result.shadowed_token_count,
                result.checkpoint_tokens,
            )
        return

    def _hint(self, provider: str, model: str) -> str | None:
        if self._window_hint is None:
            return "set context_window for it"
        return self._window_hint(provider, model)

    def _warn(self, agent: Agent, error: CompactionError) -> None:
        if error.code == "config":
            # one notice per session and model, whatever the number of turns and steps
            provider, model = _route(agent.session) or ("", "")
            key = (agent.session.id, provider, model)
            if key in self._warned:
                return
            self._warned.add(key)
        _log.warning("%s", error)

    # -- overflow -------------------------------------------------------------------------------

    async def compact_overflow(self, agent: Agent) -> CompactionResult | None:
        """The overflow trigger's compaction: prune, then one compaction keeping only the
        newest indivisible unit. ``None``: nothing could be compacted."""
        session = agent.session
        policy = self.policy(*(_route(session) or (None, None)))
        if self.config.prune.enabled:
            self.prune(agent)
        measured = self.meter.measure(session)
        selection = select_compactable_range(session.id, measured.nodes, 0)
        if selection is None:
            return None
        summarizer, request_for, budget = self._summary_call(agent, policy)
        return await run_compaction(
            session,
            self._state(session),
            self.meter,
            selection,
            summarizer,
            request_for,
            budget=budget,
        )

    async def _request_error(self, error: RequestError) -> RequestErrorDecision | None:
        if error.failure.code != OVERFLOW_CODE:
            return None
        agent = error.agent
        session = agent.session
        route = _route(session)
        if route is None:
            return None
        state = self._state(session)
        if state.overflow_retries >= self.policy(*route).max_overflow_retries:
            return None
        generation = session.replace_generation
        why = "nothing could be compacted (the newest message alone is left)"
        try:
            await self.compact_overflow(agent)
        except CompactionError as failure:
            if failure.code == "summary":
                why = f"the summary call failed: {failure.message}"
            elif failure.code == "config":
                self._warn(agent, failure)
                why = f"compaction is not configured for it: {failure.message}"
            else:
                why = f"compaction failed ({failure.code}): {failure.message}"
        except Exception as failure:
            _log.exception("session %s: overflow compaction failed", agent.id)
            why = f"compaction failed: {type(failure).__name__}: {failure}"
        if session.replace_generation == generation:
            _log.warning("session %s: the context window was exceeded and %s", agent.id, why)
            return None
        state.overflow_retries += 1
        return Retry()

    # -- manual ----------------------------------------------------------------------------------

    async def compact_now(
        self,
        agent: Agent,
        *,
        flush: Callable[[], Awaitable[Any]] | None = None,
        source_command_id: str | None = None,
    ) -> CompactionResult | None:
        """Compact an idle agent's history, all but the newest indivisible unit, in an
        owner-less bracket; then ``flush`` (make it durable) once the bracket is closed, even
        when the compaction failed. ``None``: nothing to compact (nothing logged). Raises
        :class:`CompactionError`: ``busy`` (running, a turn open, another compaction live),
        ``summary``, ``changed``, ``commit``, ``persistence`` (compacted but not made durable).
        """
        session = agent.session
        if agent.status != "idle":
            raise CompactionError(session.id, "busy", "the agent is running a turn")
        state = self._state(session)
        if state.open_turn is not None:
            raise CompactionError(session.id, "busy", f"turn {state.open_turn} is open")
        live = state.live_bracket()
        if live is not None:
            raise CompactionError(
                session.id, "busy", f"compaction {live.compaction_id} is still in progress"
            )
        selection = select_compactable_range(session.id, self.meter.measure(session).nodes, 0)
        if selection is None:
            return None
        policy = self.policy(*(_route(session) or (agent.options.provider, agent.options.model)))
        summarizer, request_for, budget = self._summary_call(agent, policy)
        try:
            result = await run_compaction(
                session,
                state,
                self.meter,
                selection,
                summarizer,
                request_for,
                budget=budget,
                manual=True,
                source_command_id=source_command_id,
            )
        except CompactionError as error:
            if error.code != "commit" and flush is not None:
                await self._flush(session, flush)
            raise
        except BaseException:
            if flush is not None:  # a cancellation (or a bug) wins over a failed flush
                try:
                    await self._flush(session, flush)
                except CompactionError as flush_error:
                    _log.warning("%s", flush_error)
            raise
        if flush is not None:
            await self._flush(session, flush)
        return result

    async def _flush(self, session: Session, flush: Callable[[], Awaitable[Any]]) -> None:
        try:
            await flush()
        except Exception as error:
            raise CompactionError(
                session.id,
                "persistence",
                f"the compaction was logged but not made durable: {error}",
            ) from error


def _validated(message: Any) -> Message:
    validated: Message = MESSAGE_ADAPTER.validate_python(message)
    return validated
