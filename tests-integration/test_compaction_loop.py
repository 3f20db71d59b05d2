"""dsh-compaction in a real agent loop: overflow and pressure triggers, failures, cancellation,
a long keyless session over JSONL and SQLite, a crash mid-compaction, manual compaction.

Every loop runs the invariant companion (``check_requests=True``: each request is compared with
what the log alone rebuilds) and must end with no refused request. Models are keyless
``ScriptedModel``s; the summary call goes to the same model, told apart by its final
instruction (a user message from the ``dsh-compaction`` plugin). Nothing waits on time: the
crash case waits for the lines its child writes and for the log, with a generous safety net.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import signal
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from dsh_agent import AgentOptions, Extensions
from dsh_agent_loop import AgentLoop, LoopAgent, RetryPolicy
from dsh_compaction import (
    CHECKPOINT_OPEN,
    CHECKPOINT_PLUGIN,
    INSTRUCTION_PLUGIN,
    CompactionConfig,
    CompactionError,
    Compactor,
    Summary,
    SummaryRequest,
    check_compaction_log,
    estimate_envelope,
    estimate_message,
)
from dsh_llm import (
    AssistantMessage,
    FinishChunk,
    FinishReason,
    LlmFailure,
    Message,
    Model,
    ModelRequest,
    StreamChunk,
    ToolResultMessage,
    Usage,
    UsageChunk,
    UserMessage,
)
from dsh_llm.testing import ScriptedModel, text_response, tool_call_response
from dsh_session import Session, SessionEvent
from dsh_tools import ToolDefinition, ToolExecution, ToolRegistry

OPTIONS = AgentOptions(provider="scripted", model="m")
OVERFLOW = "CONTEXT_WINDOW_EXCEEDED"
TIMEOUT = 10.0
"""Seconds the crash child may take to reach a marker: a safety net, not a speed bar."""

BIG_PROMPT = "Please look into the build failure of the parser module. " * 40  # ~2,300 chars


# -- helpers ------------------------------------------------------------------------------


class EchoArgs(BaseModel):
    text: str


class Echo(ToolDefinition[EchoArgs]):
    name = "echo"
    description = "Echo the text back."
    parameters = EchoArgs

    async def execute(self, args: EchoArgs, execution: ToolExecution) -> str:
        return f"echo: {args.text}"


def tools() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(Echo())
    return registry


def data(event: SessionEvent) -> Any:
    return event.to_wire()["data"]


def of_type(events: Sequence[SessionEvent], kind: str) -> list[SessionEvent]:
    return [e for e in events if e.type == kind]


def is_summary(request: ModelRequest) -> bool:
    """Whether ``request`` is a summary call (its last message is the compaction instruction)."""
    last = request.messages[-1] if request.messages else None
    source = getattr(last, "source", None)
    return isinstance(last, UserMessage) and getattr(source, "plugin", None) == INSTRUCTION_PLUGIN


def conversation(model: ScriptedModel) -> list[ModelRequest]:
    return [r for r in model.requests if not is_summary(r)]


def summaries(model: ScriptedModel) -> list[ModelRequest]:
    return [r for r in model.requests if is_summary(r)]


def overflow() -> list[StreamChunk]:
    """An in-band context overflow: a usage-less stream whose finish is the error."""
    failure = LlmFailure(message="prompt is too long for this model", code=OVERFLOW)
    return [FinishChunk(reason=FinishReason(kind="error", error=failure))]


def failing(code: str, message: str = "server error") -> list[StreamChunk]:
    return [
        FinishChunk(reason=FinishReason(kind="error", error=LlmFailure(message=message, code=code)))
    ]


def summary_text(text: str = "- the user asked about the parser build") -> list[StreamChunk]:
    return text_response(text, usage=Usage(input_tokens=50, output_tokens=12))


def text_of(message: Message) -> str:
    """Every text the message carries (tool results' too), as one JSON document."""
    return json.dumps(message.to_wire(), ensure_ascii=False)


def is_checkpoint(message: Message) -> bool:
    source = getattr(message, "source", None)
    return isinstance(message, UserMessage) and getattr(source, "plugin", None) == CHECKPOINT_PLUGIN


def step_bounds(events: Sequence[SessionEvent], turn: int, step: int) -> tuple[int, int]:
    """Seqs of the ``step/start`` and ``step/end`` of ``turn``/``step``."""
    start = next(
        e.seq for e in events if e.type == "step/start" and data(e) == {"turn": turn, "step": step}
    )
    end = next(
        e.seq for e in events if e.type == "step/end" and data(e) == {"turn": turn, "step": step}
    )
    return start, end


def turn_ends(events: Sequence[SessionEvent]) -> list[Any]:
    return [data(e) for e in of_type(events, "turn/end")]


def compaction_kinds(events: Sequence[SessionEvent]) -> list[str]:
    return [e.type for e in events if e.type.startswith("compaction/")]


def assert_balanced(messages: Sequence[Message]) -> None:
    """Every tool result follows its call, and every call has its result."""
    called: set[str] = set()
    answered: set[str] = set()
    for message in messages:
        if isinstance(message, AssistantMessage):
            called |= {call.id for call in message.tool_calls}
        elif isinstance(message, ToolResultMessage):
            call_id = message.source.call_id
            assert call_id in called, f"tool result {call_id} before its call"
            answered.add(call_id)
    assert called == answered, f"calls without results: {sorted(called - answered)}"


def scripted(script: Sequence[Any], window: int = 100_000) -> ScriptedModel:
    """A scripted model reporting ``window`` (far above these tests' prompts by default)."""
    return ScriptedModel(script, context_window=window)


def mount(model: Model, config: CompactionConfig, **kwargs: Any) -> tuple[Extensions, Compactor]:
    extensions = Extensions()
    compactor = Compactor(model, config, **kwargs)
    compactor.install(extensions)
    return extensions, compactor


def no_wait_retry() -> RetryPolicy:
    async def sleep(seconds: float) -> None:
        await asyncio.sleep(0)

    return RetryPolicy(sleep=sleep, jitter=0)


@contextlib.asynccontextmanager
async def running(
    model: Model,
    extensions: Extensions,
    *,
    persistence: Any = None,
    retry: Any = None,
    session_id: str | None = None,
) -> AsyncIterator[tuple[AgentLoop, LoopAgent]]:
    kwargs: dict[str, Any] = {"retry": retry} if retry is not None else {}
    async with AgentLoop(
        model,
        tools(),
        persistence=persistence,
        extensions=extensions,
        check_requests=True,
        **kwargs,
    ) as loop:
        agent = await loop.create(session_id, options=OPTIONS, system="You fix builds.")
        yield loop, agent
        assert loop.invariant_failures == []


def replayed(session: Session) -> Session:
    return Session(session.header, list(session.events))


def assert_replays(session: Session) -> None:
    """A replay of the log derives the live messages and has the same replace generation."""
    replay = replayed(session)
    assert replay.derive_messages() == session.derive_messages()
    assert replay.replace_generation == session.replace_generation
    check_compaction_log(list(session.events))


# -- 1-3: overflow in a real loop -----------------------------------------------------------


def echo_call(call_id: str = "c1", text: str = "parser") -> list[StreamChunk]:
    return tool_call_response((call_id, "echo", {"text": text}))


async def test_overflow_compacts_inside_the_failed_step_and_retries_it() -> None:
    model = scripted(
        [echo_call(), overflow(), summary_text(), text_response("The parser is fixed.")]
    )
    extensions, compactor = mount(model, CompactionConfig())
    async with running(model, extensions) as (_loop, agent):
        agent.followup(BIG_PROMPT)
        await agent.wait_idle()
        events = agent.session.events

        # one turn of two steps, completed
        assert turn_ends(events) == [{"turn": 1, "reason": {"kind": "completed"}}]
        assert len(of_type(events, "turn/start")) == 1
        assert [data(e) for e in of_type(events, "step/start")] == [
            {"turn": 1, "step": 1},
            {"turn": 1, "step": 2},
        ]
        # step 1 + the failed step 2 + its retry; one summary call between them
        talks, summed = conversation(model), summaries(model)
        assert len(talks) == 3
        assert len(summed) == 1
        assert model.requests.index(summed[0]) == 2
        assert any(BIG_PROMPT.strip() in text_of(m) for m in talks[1].messages)
        retried = talks[2].messages
        assert all(BIG_PROMPT.strip() not in text_of(m) for m in retried)
        assert is_checkpoint(retried[0])
        assert CHECKPOINT_OPEN in text_of(retried[0])
        # the newest tool pair stays verbatim after the checkpoint
        assert retried[1:] == talks[1].messages[1:]
        assert isinstance(retried[1], AssistantMessage)
        assert [c.id for c in retried[1].tool_calls] == ["c1"]
        assert isinstance(retried[2], ToolResultMessage)
        assert "echo: parser" in text_of(retried[2])

        # every compaction event lies inside step 2: after the failed attempt, before the retry
        start, end = step_bounds(events, 1, 2)
        brackets = [e for e in events if e.type.startswith("compaction/")]
        assert [e.type for e in brackets] == [
            "compaction/start",
            "compaction/summary",
            "compaction/end",
        ]
        assert all(start < e.seq < end for e in brackets)
        chunks = [e for e in events if e.type == "assistant/chunk" and start < e.seq < end]
        failed_finish = next(
            e for e in chunks if data(e)["chunk"].get("reason", {}).get("kind") == "error"
        )
        assert failed_finish.seq < brackets[0].seq
        retry_chunks = [e for e in chunks if e.seq > brackets[-1].seq]
        assert retry_chunks
        assert all(e.seq < brackets[0].seq for e in chunks if e not in retry_chunks)
        assert data(brackets[0])["turn"] == 1
        assert "error" not in data(brackets[-1])
        prompt_seq = next(
            e.seq for e in of_type(events, "user/message") if data(e)["source"] == {"kind": "user"}
        )
        assert data(brackets[1])["shadowedSeqs"] == [prompt_seq]
        checkpoint = next(e for e in of_type(events, "user/message") if e.seq > brackets[1].seq)
        wire = checkpoint.to_wire()
        assert wire["surfaceOp"] == {"op": "replace", "start": prompt_seq, "end": prompt_seq}
        assert wire["sourceEventSeqs"] == [brackets[0].seq, brackets[1].seq, prompt_seq]
        assert checkpoint.seq == brackets[1].seq + 1
        assert not compactor.busy(agent.session)
        assert_replays(agent.session)


async def test_overflow_and_transient_budgets_are_independent() -> None:
    model = scripted(
        [
            echo_call(),
            failing("SERVER"),
            overflow(),
            summary_text(),
            text_response("done"),
        ]
    )
    extensions, _compactor = mount(model, CompactionConfig())
    async with running(model, extensions, retry=no_wait_retry()) as (_loop, agent):
        agent.followup(BIG_PROMPT)
        await agent.wait_idle()
        events = agent.session.events
        assert turn_ends(events) == [{"turn": 1, "reason": {"kind": "completed"}}]
        start, end = step_bounds(events, 1, 2)
        talks = list(conversation(model)[1:])  # step 2's requests
        assert len(talks) == 3
        assert len(summaries(model)) == 1
        retries = of_type(events, "llm/retry")
        assert len(retries) == 1
        assert data(retries[0])["failure"]["code"] == "SERVER"
        assert data(retries[0])["step"] == 2
        assert len(of_type(events, "llm/retry-started")) == 1
        assert compaction_kinds(events) == [
            "compaction/start",
            "compaction/summary",
            "compaction/end",
        ]
        assert all(
            start < e.seq < end for e in events if e.type.startswith(("compaction/", "llm/"))
        )
        assert_replays(agent.session)


async def test_overflow_then_transient_also_gets_both_retries() -> None:
    model = scripted(
        [echo_call(), overflow(), summary_text(), failing("SERVER"), text_response("done")]
    )
    extensions, _compactor = mount(model, CompactionConfig())
    async with running(model, extensions, retry=no_wait_retry()) as (_loop, agent):
        agent.followup(BIG_PROMPT)
        await agent.wait_idle()
        events = agent.session.events
        assert turn_ends(events) == [{"turn": 1, "reason": {"kind": "completed"}}]
        assert len(conversation(model)) == 4
        assert len(summaries(model)) == 1
        assert [data(e)["failure"]["code"] for e in of_type(events, "llm/retry")] == ["SERVER"]
        retry_seq = of_type(events, "llm/retry")[0].seq
        assert of_type(events, "compaction/end")[0].seq < retry_seq


def overflow_reason() -> dict[str, Any]:
    return {
        "kind": "error",
        "error": {"message": "prompt is too long for this model", "code": OVERFLOW},
    }


async def test_overflow_with_nothing_compactable_ends_the_turn_with_the_error() -> None:
    model = scripted([overflow()])
    extensions, compactor = mount(model, CompactionConfig())
    async with running(model, extensions) as (_loop, agent):
        agent.followup(BIG_PROMPT)
        await agent.wait_idle()
        events = agent.session.events
        assert turn_ends(events) == [{"turn": 1, "reason": overflow_reason()}]
        assert compaction_kinds(events) == []
        assert len(model.requests) == 1
        assert not compactor.busy(agent.session)


async def test_overflow_recovery_off_compacts_nothing() -> None:
    model = scripted([echo_call(), overflow()])
    extensions, _compactor = mount(model, CompactionConfig(max_overflow_retries=0))
    async with running(model, extensions) as (_loop, agent):
        agent.followup(BIG_PROMPT)
        await agent.wait_idle()
        events = agent.session.events
        assert turn_ends(events) == [{"turn": 1, "reason": overflow_reason()}]
        assert compaction_kinds(events) == []
        assert summaries(model) == []
        assert len(model.requests) == 2


async def test_a_second_overflow_after_the_allowed_retry_ends_the_turn() -> None:
    model = scripted([echo_call(), overflow(), summary_text(), overflow()])
    extensions, _compactor = mount(model, CompactionConfig())
    async with running(model, extensions) as (_loop, agent):
        agent.followup(BIG_PROMPT)
        await agent.wait_idle()
        events = agent.session.events
        assert turn_ends(events) == [{"turn": 1, "reason": overflow_reason()}]
        assert compaction_kinds(events) == [
            "compaction/start",
            "compaction/summary",
            "compaction/end",
        ]
        assert len(conversation(model)) == 3
        assert len(summaries(model)) == 1
        assert_replays(agent.session)


# -- 4-6: pressure ----------------------------------------------------------------------------

PRESSURE_WINDOW = 600
"""With ``BIG_PROMPT`` on the surface a session is above 80% of this window."""
PRESSURE = CompactionConfig(retain_tokens=5)
"""A tail of one short answer or one tool pair (its call alone would cut the pair: the cut moves
head-ward to keep it whole)."""


async def test_pressure_between_a_tool_step_and_the_next_keeps_the_cut_balanced() -> None:
    model = scripted(
        [echo_call("c1"), summary_text(), echo_call("c2", "lexer"), text_response("done")],
        window=PRESSURE_WINDOW,
    )
    extensions, compactor = mount(model, PRESSURE)
    async with running(model, extensions) as (_loop, agent):
        agent.followup(BIG_PROMPT)
        await agent.wait_idle()
        events = agent.session.events
        assert turn_ends(events) == [{"turn": 1, "reason": {"kind": "completed"}}]
        assert compaction_kinds(events) == [
            "compaction/start",
            "compaction/summary",
            "compaction/end",
        ]
        # the compaction ran before step 2 opened, after step 1 closed (its tool pair done)
        step1_end = step_bounds(events, 1, 1)[1]
        step2_start = step_bounds(events, 1, 2)[0]
        assert all(
            step1_end < e.seq < step2_start for e in events if e.type.startswith("compaction/")
        )
        summary = data(of_type(events, "compaction/summary")[0])
        prompt_seq = next(
            e.seq for e in of_type(events, "user/message") if data(e)["source"] == {"kind": "user"}
        )
        assert summary["shadowedSeqs"] == [prompt_seq]
        derived = agent.session.derive_messages()
        assert is_checkpoint(derived[0])
        assert_balanced(derived)
        assert_balanced(derived[1:])  # nothing after the checkpoint answers a call it shadowed
        for request in conversation(model):
            assert_balanced(request.messages)
        talks = conversation(model)
        assert is_checkpoint(talks[1].messages[0])
        assert [
            m.tool_calls[0].id for m in talks[2].messages if isinstance(m, AssistantMessage)
        ] == ["c1", "c2"]
        assert compactor.measure(agent.session).total_tokens < 0.8 * PRESSURE_WINDOW
        assert_replays(agent.session)


def _error_finish() -> list[StreamChunk]:
    return failing("SERVER", "the summary model is down")


def _max_tokens_finish() -> list[StreamChunk]:
    chunks = text_response("- partial summ")
    return [*chunks[:-1], FinishChunk(reason=FinishReason(kind="max-tokens"))]


def _empty_text() -> list[StreamChunk]:
    return [
        UsageChunk(usage=Usage(input_tokens=5, output_tokens=0)),
        FinishChunk(reason=FinishReason(kind="stop")),
    ]


@pytest.mark.parametrize(
    ("answer", "code"),
    [(_error_finish, "SERVER"), (_max_tokens_finish, "MAX_TOKENS"), (_empty_text, "EMPTY_SUMMARY")],
    ids=["error-finish", "max-tokens", "empty-text"],
)
async def test_a_failed_summary_under_pressure_changes_nothing_and_the_step_runs(
    answer: Callable[[], list[StreamChunk]], code: str
) -> None:
    model = scripted(
        [text_response("looked at it"), answer(), text_response("still here")],
        window=PRESSURE_WINDOW,
    )
    extensions, _compactor = mount(model, PRESSURE)
    async with running(model, extensions) as (_loop, agent):
        agent.followup(BIG_PROMPT)
        await agent.wait_idle()
        before = agent.session.derive_messages()
        surface = agent.session.surface
        generation = agent.session.replace_generation
        agent.followup("and now?")
        await agent.wait_idle()
        events = agent.session.events
        assert turn_ends(events)[-1] == {"turn": 2, "reason": {"kind": "completed"}}
        assert compaction_kinds(events) == ["compaction/start", "compaction/end"]
        start, end = of_type(events, "compaction/start")[0], of_type(events, "compaction/end")[0]
        assert data(start)["turn"] == 2
        assert data(end)["turn"] == 2
        assert data(end)["compactionId"] == data(start)["compactionId"]
        assert code in data(end)["error"]
        # the surface is unchanged: the turn's own messages were appended, nothing replaced
        assert agent.session.replace_generation == generation
        assert agent.session.surface[: len(surface)] == surface
        assert agent.session.derive_messages()[: len(before)] == before
        # the step still ran, with the full history
        last = conversation(model)[-1]
        assert not any(is_checkpoint(m) for m in last.messages)
        assert BIG_PROMPT.strip() in text_of(last.messages[0])
        assert_replays(agent.session)


async def test_cancel_mid_summary_closes_the_bracket_and_aborts_the_turn() -> None:
    reached = asyncio.Event()

    async def hang_summary(request: ModelRequest) -> AsyncIterator[StreamChunk]:
        assert is_summary(request)
        reached.set()
        await asyncio.Event().wait()  # only the cancel ends it
        yield FinishChunk(reason=FinishReason(kind="stop"))  # never reached

    model = scripted([text_response("looked at it"), hang_summary], window=PRESSURE_WINDOW)
    extensions, compactor = mount(model, PRESSURE)
    async with running(model, extensions) as (_loop, agent):
        agent.followup(BIG_PROMPT)
        await agent.wait_idle()
        surface = agent.session.surface
        generation = agent.session.replace_generation
        agent.followup("and now?")
        await asyncio.wait_for(reached.wait(), TIMEOUT)
        assert compaction_kinds(agent.session.events) == ["compaction/start"]
        assert compactor.busy(agent.session)
        agent.cancel()
        await agent.wait_idle()
        events = agent.session.events
        assert compaction_kinds(events) == ["compaction/start", "compaction/end"]
        end = data(of_type(events, "compaction/end")[0])
        assert end["turn"] == 2
        assert "cancelled" in end["error"]
        final = turn_ends(events)[-1]
        assert final["turn"] == 2
        assert final["reason"]["kind"] == "aborted"
        assert agent.session.replace_generation == generation
        assert agent.session.surface[: len(surface)] == surface
        assert not compactor.busy(agent.session)
        # cancelled in the first step's pre-step: turn 2 opened no step
        assert [d for d in map(data, of_type(events, "step/start")) if d["turn"] == 2] == []
        assert len(conversation(model)) == 1  # the aborted turn sent no conversation request
        assert_replays(agent.session)


# -- 9-10: manual compaction, replay ---------------------------------------------------------


async def test_manual_compaction_of_an_idle_agent_and_a_followup_during_it() -> None:
    release = asyncio.Event()
    writing = asyncio.Event()

    def gated(model: Model) -> Callable[[SummaryRequest], Any]:
        async def summarize(request: SummaryRequest) -> Summary:
            writing.set()
            await release.wait()
            blocks = ({"type": "text", "text": "- the user asked about the parser build"},)
            return Summary(blocks=blocks, provider=request.provider, model=request.model)

        return summarize

    model = scripted([text_response("looked at it"), text_response("next answer")])
    extensions, compactor = mount(model, CompactionConfig(), summarizer=gated)
    async with running(model, extensions) as (_loop, agent):
        agent.followup(BIG_PROMPT)
        await agent.wait_idle()
        flushes = 0

        async def flush() -> None:
            nonlocal flushes
            flushes += 1
            await agent.flush()

        async def manual() -> Any:
            async with agent.maintenance():
                return await compactor.compact_now(agent, flush=flush)

        task = asyncio.ensure_future(manual())
        await asyncio.wait_for(writing.wait(), TIMEOUT)
        # another compaction while this one is in flight: busy, nothing logged
        logged = len(agent.session.events)
        with pytest.raises(CompactionError) as busy:
            await compactor.compact_now(agent)
        assert busy.value.code == "busy"
        assert len(agent.session.events) == logged
        agent.followup("what next?")  # accepted, held until the compaction is done
        assert of_type(agent.session.events, "turn/start")[-1].to_wire()["data"]["turn"] == 1
        release.set()
        result = await task
        await agent.wait_idle()
        assert result is not None
        assert flushes == 1
        events = agent.session.events
        start = of_type(events, "compaction/start")[0]
        end = of_type(events, "compaction/end")[0]
        assert data(start)["turn"] is None
        assert data(end) == {"compactionId": data(start)["compactionId"], "turn": None}
        turn_one_end = of_type(events, "turn/end")[0].seq
        turn_two = of_type(events, "turn/start")[1]
        assert turn_one_end < start.seq < end.seq < turn_two.seq
        assert data(turn_two) == {"turn": 2}  # the bracket consumed no turn number
        assert turn_ends(events)[-1] == {"turn": 2, "reason": {"kind": "completed"}}
        last = conversation(model)[-1]
        assert is_checkpoint(last.messages[0])
        assert all(BIG_PROMPT.strip() not in text_of(m) for m in last.messages)
        assert "what next?" in text_of(last.messages[-1])
        assert not compactor.busy(agent.session)
        assert_replays(agent.session)


async def test_a_replay_of_a_log_with_overflow_and_manual_checkpoints() -> None:
    model = scripted(
        [
            echo_call("c1"),
            overflow(),
            summary_text("- overflow checkpoint"),
            text_response("fixed"),
            text_response("and more " * 20),
            summary_text("- manual checkpoint"),
        ]
    )
    extensions, compactor = mount(model, CompactionConfig())
    async with running(model, extensions) as (_loop, agent):
        agent.followup(BIG_PROMPT)
        await agent.wait_idle()
        agent.followup("what else?")
        await agent.wait_idle()
        async with agent.maintenance():
            assert await compactor.compact_now(agent) is not None
        session = agent.session
        assert len(of_type(session.events, "compaction/summary")) == 2
        assert session.replace_generation == 2
        replay = Session(session.header, list(session.events))
        assert replay.derive_messages() == session.derive_messages()
        assert replay.replace_generation == session.replace_generation
        assert replay.surface == session.surface
        check_compaction_log(list(session.events))


# -- 7: a long keyless session over JSONL and SQLite ------------------------------------------


LONG_WINDOW = 3_000
LONG_TURNS = 100  # two steps each (a tool call, then the answer): 200 steps


def long_session_answer(request: ModelRequest) -> list[StreamChunk]:
    """The long session's model: a summary call gets a short checkpoint; a conversation step
    calls ``echo`` after the user's prompt and answers after the tool's result."""
    if is_summary(request):
        return summary_text(f"- {len(request.messages) - 1} messages about the build, summarized")
    last = request.messages[-1]
    if isinstance(last, ToolResultMessage):
        return text_response("The parser step passed; the next check is the lexer. " * 3)
    return echo_call(f"c{len(request.messages)}", "status of the build " * 4)


@pytest.mark.parametrize("backend", ["jsonl", "sqlite"])
async def test_a_200_step_keyless_session_stays_under_the_threshold_and_round_trips(
    backend: str, tmp_path: Any
) -> None:
    from dsh_compaction import estimate_message
    from dsh_persistence_jsonl import JsonlPersistence
    from dsh_persistence_sqlite import SqlitePersistence

    def store() -> Any:
        if backend == "jsonl":
            return JsonlPersistence(tmp_path / "sessions", compression="zstd")
        return SqlitePersistence(tmp_path / "sessions.db")

    model = scripted([long_session_answer] * (3 * LONG_TURNS), window=LONG_WINDOW)
    config = CompactionConfig()
    extensions, compactor = mount(model, config)
    threshold = compactor.policy("scripted", "m").threshold(LONG_WINDOW)
    assert threshold == 2_400
    entered: list[int] = []

    def after_the_compactor(context: Any, decision: Any) -> None:
        entered.append(compactor.measure(context.agent.session).total_tokens)

    extensions.pre_step.add(after_the_compactor)
    async with running(model, extensions, persistence=store(), session_id="long") as (_, agent):
        for turn in range(1, LONG_TURNS + 1):
            agent.followup(f"turn {turn}: check the build again and report. " * 3)
            await agent.wait_idle()
        session = agent.session
        live = [event.to_wire() for event in session.events]
        live_messages = session.derive_messages()
    steps = of_type(session.events, "step/start")
    assert len(steps) == 2 * LONG_TURNS == len(entered)
    # every step entered below the threshold, and every conversation request fit the window
    assert max(entered) < threshold, max(entered)
    for request in conversation(model):
        assert sum(estimate_message(m) for m in request.messages) < LONG_WINDOW
    checkpoints = of_type(session.events, "compaction/summary")
    assert len(checkpoints) >= 5, len(checkpoints)
    assert [data(e).get("error") for e in of_type(session.events, "compaction/end")] == [
        None
    ] * len(checkpoints)
    assert turn_ends(session.events) == [
        {"turn": t, "reason": {"kind": "completed"}} for t in range(1, LONG_TURNS + 1)
    ]
    assert_balanced(live_messages)
    assert is_checkpoint(live_messages[0])
    assert_replays(session)
    # the log round-trips: a fresh instance of the backend reads back what the agent logged,
    # and the replay derives the live history; then the same log through the other backend
    async with await store().open("long", "read") as handle:
        stored = list(await handle.read(0))
    assert [event.to_wire() for event in stored] == live
    assert Session(session.header, stored).derive_messages() == live_messages
    other = (
        SqlitePersistence(tmp_path / "other.db")
        if backend == "jsonl"
        else JsonlPersistence(tmp_path / "other", compression="none")
    )
    async with await other.create(session.header) as handle:
        await handle.append(stored)
        await handle.flush()
    async with await other.open("long", "read") as handle:
        copied = list(await handle.read(0))
    assert [event.to_wire() for event in copied] == live
    assert Session(session.header, copied).derive_messages() == live_messages
    check_compaction_log(copied)


# -- a summary call sized to a small window (issue 33, 3.2) ----------------------------------


async def test_a_history_five_times_a_small_window_is_summarised_in_slices_and_goes_on() -> None:
    window = 1024
    prompts = [f"Step {n}: the parser still fails on nested brackets. " * 60 for n in range(8)]

    def answer(request: ModelRequest) -> list[StreamChunk]:
        if is_summary(request):
            return summary_text(f"- {len(summaries(model))} slices of the parser work")
        return text_response("carrying on")

    model = scripted(
        [*(text_response(f"noted {n}") for n in range(8)), *([answer] * 40)], window=window
    )
    extensions, compactor = mount(model, CompactionConfig(auto=False))
    async with running(model, extensions) as (_loop, agent):
        for prompt in prompts:
            agent.followup(prompt)
            await agent.wait_idle()
        assert compactor.measure(agent.session).total_tokens > 5 * window
        async with agent.maintenance():
            result = await compactor.compact_now(agent)
        assert result is not None
        calls = summaries(model)
        assert len(calls) > 1
        header = agent.session.request_header
        for call in calls:
            assert call.max_tokens is not None
            assert call.system == "You fix builds."  # small enough to keep: a cache hit
            size = estimate_envelope(header) + sum(estimate_message(m) for m in call.messages)
            assert size + call.max_tokens <= window
        record = data(of_type(agent.session.events, "compaction/summary")[0])
        assert len(record["slices"]) == len(calls)
        # the session goes on from the one checkpoint
        agent.followup("and now?")
        await agent.wait_idle()
        assert turn_ends(agent.session.events)[-1]["reason"] == {"kind": "completed"}
        last = conversation(model)[-1]
        assert is_checkpoint(last.messages[0])
        assert compactor.measure(agent.session).total_tokens < window
        assert_replays(agent.session)


# -- 8: a crash mid-compaction (kill -9), then resume ------------------------------------------

CHILD = Path(__file__).parent / "compaction_child.py"
CHILD_TIMEOUT = 120.0
"""Seconds the child may take to reach a marker: a safety net against a hang, not a speed bar."""


def _child_module() -> Any:
    spec = importlib.util.spec_from_file_location("compaction_child", CHILD)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


crash_child = _child_module()


async def _killed_mid_summary(root: Path, session_id: str, mode: str) -> None:
    """Run the child until its summary call is in flight, then SIGKILL it and reap it."""
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, str(CHILD), str(root), session_id, mode),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        seen: list[str] = []
        while "SUMMARY_CALLED" not in seen:
            line = await asyncio.wait_for(process.stdout.readline(), CHILD_TIMEOUT)
            if not line:
                _, err = await process.communicate()
                raise AssertionError(f"child ended after {seen}: {err.decode()[-3000:]}")
            seen.append(line.decode().strip())
        assert seen == ["READY", "SUMMARY_CALLED"]
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGKILL)
        await asyncio.wait_for(process.communicate(), CHILD_TIMEOUT)
    assert process.returncode == -signal.SIGKILL


@pytest.mark.parametrize("mode", ["manual", "pressure"])
async def test_a_kill_mid_compaction_leaves_a_stale_start_that_a_resume_closes(
    mode: str, tmp_path: Path
) -> None:
    await _killed_mid_summary(tmp_path, "crashed", mode)
    async with await crash_child.open_store(tmp_path).open("crashed", "read") as handle:
        on_disk = list(await handle.read(0))
    orphan = on_disk[-1]
    assert orphan.type == "compaction/start"  # durable, and nothing after it
    orphan_id = data(orphan)["compactionId"]
    assert data(orphan)["turn"] == (None if mode == "manual" else 2)

    model = scripted(
        [summary_text("- the user greeted at length"), text_response("back again")],
        window=crash_child.WINDOW,
    )
    extensions, compactor = mount(model, CompactionConfig(retain_tokens=5, auto=False))
    async with AgentLoop(
        model,
        persistence=crash_child.open_store(tmp_path),
        extensions=extensions,
        check_requests=True,
    ) as loop:
        agent = await loop.resume("crashed", system=crash_child.SYSTEM)
        events = agent.session.events
        closers = events[len(on_disk) :]
        ends = [e for e in closers if e.type == "compaction/end"]
        if mode == "manual":  # no closer ends an owner-less bracket: the compactor says stale
            assert [data(e)["compactionId"] for e in ends] == [orphan_id]
            assert data(ends[0])["turn"] is None
            assert str(data(ends[0])["error"]).startswith("stale:")
        else:  # the crash-repair closers end its turn, which ends the bracket it owned (§1.10)
            assert ends == []
            assert [(e.type, data(e)) for e in closers] == [
                ("turn/end", {"turn": 2, "reason": {"kind": "interrupted"}})
            ]
        assert not compactor.busy(agent.session)  # the crash remnant is no lock
        check_compaction_log(list(events))
        # a new compaction works, in its own bracket, and the agent goes on from the checkpoint
        async with agent.maintenance():
            result = await compactor.compact_now(agent, flush=agent.flush)
        assert result is not None
        agent.followup("still there?")
        await agent.wait_idle()
        assert loop.invariant_failures == []
        session = agent.session
        assert is_checkpoint(session.derive_messages()[0])
        assert "hello hello" not in text_of(conversation(model)[-1].messages[0])
        starts = of_type(session.events, "compaction/start")
        assert len(starts) == 2
        assert data(starts[1])["compactionId"] != orphan_id
        check_compaction_log(list(session.events))
        live = [event.to_wire() for event in session.events]
    async with await crash_child.open_store(tmp_path).open("crashed", "read") as handle:
        assert [event.to_wire() for event in await handle.read(0)] == live


# -- the package README's loop example ---------------------------------------------------------


def test_the_readme_loop_example_runs_and_prints_what_it_says() -> None:
    """The dsh-compaction README's ``no-run`` block needs dsh-agent-loop, which that package's
    own test environment lacks (one implementation never imports another): it runs here."""
    import subprocess

    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location(
        "run_readme_examples", root / "tools" / "run_readme_examples.py"
    )
    assert spec is not None
    assert spec.loader is not None
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    readme = (root / "packages" / "dsh-compaction" / "README.md").read_text(encoding="utf-8")
    looped = [code for _, info, code in runner.blocks(readme) if "AgentLoop" in code]
    assert len(looped) == 1
    result = subprocess.run(
        [sys.executable, "-c", looped[0]], capture_output=True, text=True, timeout=CHILD_TIMEOUT
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["920", "112"]  # the figures its comments state
