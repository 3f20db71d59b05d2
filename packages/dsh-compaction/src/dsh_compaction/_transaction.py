"""One compaction, logged as format v0 writes it (the bracket every trigger shares).

``compaction/start`` goes first, before any await: the durable marker is the only lock. Then the
summary call; then, with no await between them, ``compaction/summary``, the checkpoint
``user/message`` replacing the range on the surface (``sourceEventSeqs: [start, summary,
...shadowed]``, source ``{kind: "plugin", plugin: "compact", compactionId}``) and
``compaction/end``. Any failure before the end closes the bracket with ``compaction/end{error}``
and leaves the surface as it was; if even that append fails the start stays unmatched, visibly.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from dsh_compaction._brackets import BracketState
from dsh_compaction._errors import CompactionError
from dsh_compaction._estimate import estimate_wire_message
from dsh_compaction._meter import PricedNode, TokenMeter
from dsh_compaction._retention import CompactionRange, balanced_cuts
from dsh_compaction._slicing import SummaryBudget, SummarySlice, slice_records, summarize_within
from dsh_compaction._summary import (
    CHECKPOINT_PLUGIN,
    Summarizer,
    SummaryFailure,
    SummaryRequest,
    checkpoint_content,
)
from dsh_llm import Message
from dsh_session import Session, project_message, user_message_data

_log = logging.getLogger("dsh_compaction")

__all__ = ["CompactionResult", "run_compaction"]


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """A compaction that landed: its ``compaction_id``, the seqs of its ``compaction/start``,
    ``compaction/summary``, checkpoint message and ``compaction/end``, the ``shadowed_seqs`` it
    replaced (first and last: the replaced range), what they cost (``shadowed_token_count``)
    and what the checkpoint costs (``checkpoint_tokens``)."""

    compaction_id: str
    start_seq: int
    summary_seq: int
    checkpoint_seq: int
    end_seq: int
    shadowed_seqs: tuple[int, ...]
    shadowed_token_count: int
    checkpoint_tokens: int
    source_command_id: str | None = None

    @property
    def shadowed_range(self) -> tuple[int, int]:
        """The first and last replaced seq."""
        return self.shadowed_seqs[0], self.shadowed_seqs[-1]


def _error_text(error: BaseException) -> str:
    """The text ``compaction/end.error`` records: the error and its causes, outermost first."""
    parts: list[str] = []
    current: BaseException | None = error
    while current is not None and len(parts) < 8:
        if isinstance(current, asyncio.CancelledError):
            parts.append("cancelled")
        else:
            text = str(current)
            parts.append(f"{type(current).__name__}: {text}" if text else type(current).__name__)
        current = current.__cause__ or current.__context__
    return "; caused by ".join(parts)


def _check_range(
    session_id: str, nodes: Sequence[PricedNode], selection: CompactionRange
) -> list[PricedNode]:
    start, end = selection.start, selection.end
    if not 0 <= start <= end < len(nodes):
        raise CompactionError(
            session_id, "range", f"positions {start}..{end} are not on the surface"
        )
    chosen = list(nodes[start : end + 1])
    if tuple(node.seq for node in chosen) != selection.seqs:
        raise CompactionError(session_id, "changed", "the range is no longer on the surface")
    cuts = balanced_cuts(session_id, nodes)
    if not cuts[start] or not cuts[end + 1]:
        raise CompactionError(
            session_id, "range", "the range separates a tool call from its result"
        )
    return chosen


def _units(
    session: Session, nodes: Sequence[PricedNode], chosen: Sequence[PricedNode], start: int
) -> list[list[tuple[int, Message]]]:
    """The chosen nodes' messages grouped into units a slice never splits (a tool call stays
    with its results)."""
    cuts = balanced_cuts(session.id, nodes)
    events = session.events
    units: list[list[tuple[int, Message]]] = []
    current: list[tuple[int, Message]] = []
    for offset, node in enumerate(chosen):
        message = project_message(events[node.seq])
        if message is not None:
            current.append((node.seq, message))
        if cuts[start + offset + 1] and current:
            units.append(current)
            current = []
    if current:
        units.append(current)
    return units


def _span_unchanged(nodes: Sequence[PricedNode], chosen: Sequence[PricedNode]) -> bool:
    """Whether the chosen nodes are still on the surface, contiguous, in order, same prices."""
    seqs = [node.seq for node in nodes]
    try:
        start = seqs.index(chosen[0].seq)
    except ValueError:
        return False
    return list(nodes[start : start + len(chosen)]) == list(chosen)


async def run_compaction(
    session: Session,
    brackets: BracketState,
    meter: TokenMeter,
    selection: CompactionRange,
    summarizer: Summarizer,
    request_for: Callable[[tuple[Message, ...]], SummaryRequest],
    *,
    manual: bool = False,
    source_command_id: str | None = None,
    budget: SummaryBudget | None = None,
) -> CompactionResult:
    """Compact ``selection`` of ``session``'s surface into one checkpoint (see the module docs).

    Automatic compactions (``manual=False``) belong to the open turn and need the whole surface
    unchanged while the summary is written; a manual one needs no open turn (owner ``null``)
    and only its own span unchanged. ``request_for(messages)`` builds the summary call for the
    shadowed messages. With a ``budget`` (the routed model's window), every summary request's
    estimate plus its ``max_tokens`` fits the window: a range too big for one request is
    summarised in slices, oldest first, logged under ``compaction/summary.slices``. Raises
    :class:`CompactionError`: ``busy``, ``no-open-turn``, ``range``, ``summary``, ``changed``,
    ``commit``; a cancellation closes the bracket and re-raises.
    """
    sid = session.id
    brackets.catch_up(session)
    live = brackets.live_bracket()
    if live is not None:
        raise CompactionError(
            sid, "busy", f"compaction {live.compaction_id} (seq {live.seq}) is still in progress"
        )
    if manual and brackets.open_turn is not None:
        raise CompactionError(sid, "busy", f"turn {brackets.open_turn} is open")
    if not manual and brackets.open_turn is None:
        raise CompactionError(sid, "no-open-turn", "an automatic compaction needs an open turn")
    owner = None if manual else brackets.open_turn
    before = meter.measure(session)
    chosen = _check_range(sid, before.nodes, selection)
    compaction_id = str(uuid.uuid4())
    ids: dict[str, Any] = {"compactionId": compaction_id}
    if source_command_id is not None:
        if not isinstance(source_command_id, str) or not source_command_id:
            raise ValueError(
                f"source_command_id must be a non-empty string, not {source_command_id!r}"
            )
        ids["sourceCommandId"] = source_command_id
    start = session.append("compaction/start", {**ids, "turn": owner})
    committed = False
    try:
        shadowed = selection.seqs
        shadowed_tokens = sum(node.tokens for node in chosen)
        units = _units(session, before.nodes, chosen, selection.start)
        messages = tuple(message for unit in units for _, message in unit)
        slices: list[SummarySlice] = []
        lean = False
        try:
            if budget is None:
                summary = await summarizer(request_for(messages))
            else:
                summary, slices, lean = await summarize_within(
                    sid, units, summarizer, request_for(messages), budget
                )
        except CompactionError:
            raise
        except SummaryFailure as failure:
            raise CompactionError(
                sid, "summary", failure.message, failure_code=failure.code
            ) from failure
        except Exception as failure:  # a summarizer or model that raised: a failed summary too
            raise CompactionError(
                sid, "summary", f"the summary call raised {_error_text(failure)}"
            ) from failure
        content = checkpoint_content(summary.blocks)
        checkpoint_tokens = estimate_wire_message({"content": content})
        if checkpoint_tokens >= shadowed_tokens:
            raise CompactionError(
                sid,
                "summary",
                f"the summary is not smaller ({checkpoint_tokens} tokens for the "
                f"{shadowed_tokens} it would replace)",
                failure_code="NOT_SMALLER",
            )
        after = meter.measure(session)
        stable = _span_unchanged(after.nodes, chosen) if manual else after.nodes == before.nodes
        if not stable:
            raise CompactionError(
                sid, "changed", "the surface changed while the summary was written"
            )
        record: dict[str, Any] = {**ids, "summary": [dict(block) for block in summary.blocks]}
        if summary.raw_output is not None:
            record["rawOutput"] = [dict(block) for block in summary.raw_output]
        if summary.llm_stream_call:
            record["llmStreamCall"] = True
        record |= {
            "shadowedRange": {"start": shadowed[0], "end": shadowed[-1]},
            "shadowedSeqs": list(shadowed),
            "shadowedTokenCount": shadowed_tokens,
            "provider": summary.provider,
            "model": summary.model,
        }
        if summary.max_tokens is not None:
            record["maxTokens"] = summary.max_tokens
        if summary.usage is not None:
            record["usage"] = dict(summary.usage)
        if slices:
            record["slices"] = slice_records(slices)
        if lean:
            record["withoutSystemAndTools"] = True
        summary_event = session.append("compaction/summary", record)
        checkpoint = session.append(
            "user/message",
            user_message_data(content, {"kind": "plugin", "plugin": CHECKPOINT_PLUGIN, **ids}),
            surface_op={"op": "replace", "start": shadowed[0], "end": shadowed[-1]},
            source_event_seqs=[start.seq, summary_event.seq, *shadowed],
        )
        committed = True
        end = session.append("compaction/end", {**ids, "turn": owner})
    except BaseException as error:
        if committed:  # the checkpoint landed; only the closing end failed
            raise CompactionError(
                sid, "commit", f"the checkpoint landed but compaction/end failed: {error}"
            ) from error
        try:
            session.append("compaction/end", {**ids, "turn": owner, "error": _error_text(error)})
        except Exception as close_error:
            if not isinstance(error, Exception):  # a cancellation wins over the close failure
                _log.warning(
                    "session %r: compaction %s could not be closed (%s); its start (seq %d) "
                    "stays unmatched",
                    sid,
                    compaction_id,
                    close_error,
                    start.seq,
                )
                raise error from close_error
            raise CompactionError(
                sid,
                "commit",
                f"compaction {compaction_id} could not be closed ({close_error}); its start "
                f"(seq {start.seq}) stays unmatched",
            ) from error
        raise
    return CompactionResult(
        compaction_id=compaction_id,
        start_seq=start.seq,
        summary_seq=summary_event.seq,
        checkpoint_seq=checkpoint.seq,
        end_seq=end.seq,
        shadowed_seqs=tuple(shadowed),
        shadowed_token_count=shadowed_tokens,
        checkpoint_tokens=checkpoint_tokens,
        source_command_id=source_command_id,
    )
