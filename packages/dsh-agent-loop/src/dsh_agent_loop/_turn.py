"""One turn: steps of one model call and its tools, until the model is done.

Durable order: ``turn/start``, then per step ``step/start``, the entering ``user/message``s,
``request/header`` (when it changed) and ``request/context`` (when the route changed), the
``assistant/chunk``s, one ``assistant/message``, ``tool/call``/``tool/result`` pairs, and
``step/end``; last ``turn/end{reason}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from typing import Any, Literal, Protocol

from dsh_agent import (
    Agent,
    CancelCause,
    CheckpointPoint,
    Enter,
    Extensions,
    Fail,
    PreStepDecision,
    Reject,
    RequestError,
    Retry,
    StepContext,
    TurnStopping,
)
from dsh_agent_loop._errors import AgentLoopError, ModelFailedError, NoModelError
from dsh_agent_loop._inbox import Inbox
from dsh_agent_loop._reconstruct import check_request
from dsh_agent_loop._requests import RequestBuilder
from dsh_agent_loop._runtime import Runtime
from dsh_agent_loop._stream import Attempt, stream_attempt
from dsh_agent_loop._tools import ToolBatch, skipped_result
from dsh_llm import Message, ModelSource, ReasoningBlock, TextBlock, UserMessage
from dsh_session import Session, assistant_message_data, user_message_data
from dsh_tools import Allow, Deny, ToolCaller, ToolExecution, ToolOutputListener

__all__ = ["TurnAgent", "run_turn"]

_log = logging.getLogger("dsh_agent_loop")

StepOutcome = Literal["completed", "max-tokens"] | None
"""``completed``: the model is done; ``max-tokens``: its answer was cut off; ``None``: tools ran,
another step follows."""


class TurnAgent(Agent, ToolCaller, Protocol):
    """The agent as one turn uses it (``LoopAgent`` is the one implementation): a protocol, so
    this module does not import the agent module that runs it."""

    runtime: Runtime
    inbox: Inbox
    builder: RequestBuilder

    def next_turn(self) -> int: ...
    def aborting(self) -> bool: ...
    def raise_if_aborting(self) -> None: ...
    def abort_cause(self) -> CancelCause: ...
    async def session_prefix(self) -> tuple[Message, ...]: ...
    async def checkpoint(self, point: CheckpointPoint) -> None: ...
    async def approve(self, execution: ToolExecution, reason: str | None) -> Allow | Deny: ...


def _user_message_data(message: UserMessage) -> dict[str, Any]:
    """The identified ``user/message`` data the harness writes (a fresh id when the message
    has none yet)."""
    return user_message_data(
        [block.to_wire() for block in message.content], message.source.to_wire(), id=message.id
    )


def error_reason(error: BaseException) -> dict[str, Any]:
    """The ``turn/end`` reason of a turn that failed with ``error``."""
    if isinstance(error, ModelFailedError):
        return {"kind": "error", "error": error.failure.to_wire()}
    if isinstance(error, AgentLoopError):
        return {"kind": "error", "error": {"message": str(error), "code": error.code}}
    message = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return {"kind": "error", "error": {"message": message, "code": "UNKNOWN"}}


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


async def _pre_step(agent: TurnAgent, context: StepContext, claimed: list[UserMessage]) -> Any:
    decision: PreStepDecision = Enter(tuple(claimed))
    for listener in agent.runtime.extensions.pre_step:
        replaced = await _maybe_await(listener(context, decision))
        if replaced is None:
            continue
        if not isinstance(replaced, Enter | Reject):
            raise TypeError(
                f"a pre_step listener returned {type(replaced).__name__}, not Enter, Reject or None"
            )
        decision = replaced
    if isinstance(decision, Enter):
        for message in decision.messages:
            if not isinstance(message, UserMessage):
                raise TypeError(f"a pre_step Enter holds {type(message).__name__}, not UserMessage")
    return decision


async def _request_error(agent: TurnAgent, error: RequestError) -> bool:
    """Whether a listener retries the failed call (the first decision wins)."""
    listeners = list(agent.runtime.extensions.request_error)
    if agent.runtime.retry is not None:
        listeners.append(agent.runtime.retry)
    for listener in listeners:
        try:
            decision = await _maybe_await(listener(error))
        except asyncio.CancelledError:
            raise
        except Exception:
            _log.exception("session %s: a request_error listener failed; no retry", agent.id)
            return False
        if isinstance(decision, Retry):
            return True
        if isinstance(decision, Fail):
            return False
    return False


async def _turn_stopping(agent: TurnAgent, stopping: TurnStopping) -> None:
    for listener in agent.runtime.extensions.turn_stopping:
        await _maybe_await(listener(stopping))


def _log_interrupted(session: Session, attempt: Attempt) -> None:
    content = attempt.interrupted_content()
    if not content:
        return
    message = attempt.message()
    data = assistant_message_data(
        attempt.turn,
        attempt.step,
        content,
        attempt.provenance(message),
        interrupted=True,
        usage=None if attempt.usage is None else attempt.usage.usage.to_wire(),
    )
    session.append("assistant/message", data, source_event_seqs=attempt.seqs)


async def _step(agent: TurnAgent, turn: int, step: int) -> StepOutcome:
    """One model call (retried in place while a listener says so) and the tools it asks for."""
    session = agent.session
    runtime = agent.runtime
    context = StepContext(agent, turn, step)
    attempt_number = 0
    while True:
        attempt_number += 1
        prefix = await agent.session_prefix()
        request, config = await agent.builder.build(
            context, prefix=prefix, tools=runtime.tools.schemas()
        )
        await agent.checkpoint("before-request")
        if runtime.check_requests:
            try:
                check_request(session, request)
            except AgentLoopError as error:
                runtime.invariant_failures.append(error)
                raise
        model = runtime.model_for(config.provider)
        if model is None:
            raise NoModelError(agent.id, config.provider, sorted(runtime.models))
        agent.raise_if_aborting()  # cancelled while the request was built: no model call
        attempt = Attempt(turn, step, ModelSource(provider=config.provider, model=config.model))
        try:
            await stream_attempt(session, model, request, attempt)
        except asyncio.CancelledError:
            _log_interrupted(session, attempt)
            raise
        failure = attempt.failure
        if failure is not None:
            failed = RequestError(agent, turn, step, attempt_number, failure, config)
            if await _request_error(agent, failed):
                continue
            raise ModelFailedError(agent.id, failure)
        message = attempt.message()
        data = assistant_message_data(
            turn,
            step,
            [
                block.to_wire()
                for block in message.content
                if not (isinstance(block, TextBlock | ReasoningBlock) and not block.text)
            ],
            attempt.provenance(message),
            usage=None if attempt.usage is None else attempt.usage.usage.to_wire(),
        )
        # no ``usage`` here says the server reported none (format v0 has no other way to say
        # it: the TypeScript harness refuses an event type outside its frozen inventory)
        session.append("assistant/message", data, source_event_seqs=attempt.seqs)
        calls = message.tool_calls
        finish = attempt.finish
        truncated = finish is not None and finish.reason.kind == "max-tokens"
        if not calls:
            return "max-tokens" if truncated else "completed"
        batch = ToolBatch(
            session=session,
            registry=runtime.tools,
            caller=agent,
            calls=calls,
            turn=turn,
            step=step,
            checkpoint=lambda: agent.checkpoint("before-tool"),
            aborted=agent.aborting,
            max_parallel=runtime.max_parallel_tools,
            approver=agent.approve,
            on_output=_tool_output(runtime.extensions),
        )
        if truncated:
            batch.skip(
                skipped_result(
                    "TRUNCATED_TOOL_CALL",
                    "tool call not run: the model's answer was cut off at its token limit",
                )
            )
            return "max-tokens"
        await batch.run()
        return None


async def run_turn(agent: TurnAgent) -> None:
    """Run one turn of ``agent`` to its ``turn/end`` (never raises but for disposal bugs)."""
    session = agent.session
    runtime = agent.runtime
    turn = agent.next_turn()
    session.append("turn/start", {"turn": turn})  # no trigger: the harness dropped it (issue 13)
    reason: dict[str, Any] = {"kind": "completed"}
    step = 0
    try:
        first = True
        ended: dict[str, Any] | None = None
        while True:
            if (
                not first
                and runtime.max_steps_per_turn is not None
                and step >= runtime.max_steps_per_turn
            ):  # checked before claiming: a queued steer waits for the next turn
                limit = runtime.max_steps_per_turn
                reason = {
                    "kind": "error",
                    "error": {
                        "message": f"the turn stopped after {limit} steps (max_steps_per_turn)",
                        "code": "MAX_STEPS",
                    },
                }
                break
            claimed = agent.inbox.claim(first_step=first)  # claimed messages are never re-queued
            await agent.session_prefix()
            decision = await _pre_step(agent, StepContext(agent, turn, step + 1), claimed)
            agent.raise_if_aborting()  # a cancel from a listener stops here, before any step
            if isinstance(decision, Reject):
                reason = {"kind": "blocked"}
                break
            entering = decision.messages
            if first and not entering:
                break
            if ended is not None and not entering:
                reason = ended
                break
            first = False
            step += 1
            session.append("step/start", {"turn": turn, "step": step})
            try:
                for message in entering:
                    session.append("user/message", _user_message_data(message))
                outcome = await _step(agent, turn, step)
            finally:
                session.append("step/end", {"turn": turn, "step": step})
            if outcome == "max-tokens":
                ended = {"kind": "max-tokens"}
            elif outcome == "completed" and ended is None:
                ended = {"kind": "completed"}
            if ended is not None and not agent.inbox.has_step_items():
                await _turn_stopping(agent, TurnStopping(agent, turn, step, dict(ended)))
                if not agent.inbox.has_step_items():
                    reason = ended
                    break
    except asyncio.CancelledError:
        reason = {"kind": "aborted", "reason": agent.abort_cause().to_wire()}
    except Exception as error:
        if not isinstance(error, AgentLoopError):
            _log.exception("session %s: turn %d failed", agent.id, turn)
        reason = error_reason(error)
    session.append("turn/end", {"turn": turn, "reason": reason})
    await _turn_end_checkpoint(agent)


async def _turn_end_checkpoint(agent: TurnAgent) -> None:
    """Make the finished turn durable. A cancel that arrives now (or was requested but not yet
    delivered) has nothing left to stop, so it never cuts this checkpoint short; a failure is
    logged (the next checkpoint retries and fails closed)."""
    checkpoint = asyncio.ensure_future(agent.checkpoint("turn-end"))
    while not checkpoint.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(checkpoint)
    error = checkpoint.exception() if not checkpoint.cancelled() else None
    if error is not None:
        _log.warning("session %s: the turn-end checkpoint failed: %s", agent.id, error)


def _tool_output(extensions: Extensions) -> ToolOutputListener | None:
    """What running tools report, told to the ``tool_output`` listeners (none: not asked)."""
    listeners = extensions.tool_output
    if not listeners:
        return None

    def tell(execution: ToolExecution, text: str) -> None:
        for listener in listeners:
            with contextlib.suppress(Exception):  # one failing display never stops another
                listener(execution, text)

    return tell
