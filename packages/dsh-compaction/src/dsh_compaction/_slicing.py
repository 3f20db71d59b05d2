"""The summary call sized to the routed model's window, in slices when the history does not fit.

A summary request is the session's envelope (system prompt, tools, session prefix), the
messages to summarise and the final instruction; its estimate (this package's heuristic) plus
its ``max_tokens`` must stay within the window less a safety margin. When the whole range does
not fit, it is summarised oldest first in slices of whole units (a tool call never leaves its
result): each slice's request opens with the previous slice's summary as a checkpoint, so the
last slice's summary covers the whole range and becomes the one checkpoint.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dsh_compaction._errors import CompactionError
from dsh_compaction._estimate import estimate_message
from dsh_compaction._summary import (
    CHECKPOINT_PLUGIN,
    INSTRUCTION_PLUGIN,
    SUMMARY_INSTRUCTION,
    Summarizer,
    Summary,
    SummaryRequest,
    checkpoint_content,
)
from dsh_llm import MESSAGE_ADAPTER, Message, PluginSource, UserMessage

__all__ = [
    "MIN_SUMMARY_TOKENS",
    "SUMMARY_MARGIN_RATIO",
    "SummaryBudget",
    "SummarySlice",
]

SUMMARY_MARGIN_RATIO = 0.05
"""The share of the window (at least 16 tokens) a summary request leaves unused, because the
estimate is a heuristic and a server's tokenizer may count more."""
MIN_SUMMARY_TOKENS = 64
"""The smallest output limit a summary call is made with; less is refused as useless."""

_INSTRUCTION_TOKENS = estimate_message(
    UserMessage.from_text(SUMMARY_INSTRUCTION, source=PluginSource(plugin=INSTRUCTION_PLUGIN))
)


@dataclass(frozen=True, slots=True)
class SummaryBudget:
    """What a summary call may take: the routed model's ``window``, the ``envelope`` every
    request of the session carries (:func:`~dsh_compaction.estimate_envelope`), and the
    configured ``max_tokens``; ``route`` names the model in errors."""

    window: int
    envelope: int
    max_tokens: int
    route: str = ""
    lean_envelope: int | None = None
    """The envelope without the system prompt and tools (the session prefix alone): what the
    request costs when they are left out because they leave too little room."""

    @property
    def crowded(self) -> bool:
        """Whether the system prompt and tools leave less than a quarter of the window for the
        messages (then, given a :attr:`lean_envelope`, the summary call leaves them out)."""
        room = self.window - self.margin - self.envelope - _INSTRUCTION_TOKENS - self.wanted
        return room < self.window // 4

    @property
    def margin(self) -> int:
        """Tokens left unused: :data:`SUMMARY_MARGIN_RATIO` of the window, at least 16."""
        return max(16, int(self.window * SUMMARY_MARGIN_RATIO))

    @property
    def wanted(self) -> int:
        """The output a slice is packed to leave room for: the configured limit, or a quarter
        of the window when that is smaller (never below :data:`MIN_SUMMARY_TOKENS`)."""
        return min(self.max_tokens, max(MIN_SUMMARY_TOKENS, self.window // 4))

    def estimate(self, messages: Sequence[Message]) -> int:
        """The estimate of a summary request holding ``messages``: envelope, messages and the
        instruction."""
        return (
            self.envelope
            + sum(estimate_message(message) for message in messages)
            + _INSTRUCTION_TOKENS
        )

    def output_limit(self, session_id: str, messages: Sequence[Message]) -> int:
        """``min(max_tokens, window - estimate - margin)``; a :class:`CompactionError`
        (``summary``, failure code ``NO_ROOM``) naming the numbers when that is below
        :data:`MIN_SUMMARY_TOKENS`."""
        estimate = self.estimate(messages)
        left = self.window - estimate - self.margin
        if left < MIN_SUMMARY_TOKENS:
            raise CompactionError(
                session_id,
                "summary",
                f"a summary request of {estimate} estimated tokens on "
                f"{self.route or 'the model'}'s {self.window}-token window leaves {left} tokens "
                f"for the summary after a {self.margin}-token margin (at least "
                f"{MIN_SUMMARY_TOKENS} needed)",
                failure_code="NO_ROOM",
            )
        return min(self.max_tokens, left)

    def fits(self, messages: Sequence[Message]) -> bool:
        """Whether a request holding ``messages`` leaves :attr:`wanted` tokens of output."""
        return self.estimate(messages) + self.wanted + self.margin <= self.window


@dataclass(frozen=True, slots=True)
class SummarySlice:
    """One call of a sliced summary: the ``seqs`` it summarised (the earlier slices' summary
    came with them), its ``summary``, the ``max_tokens`` it was asked for, and whether the
    unit's long texts were ``shortened`` (head and tail kept) to fit the window."""

    seqs: tuple[int, ...]
    summary: Summary
    max_tokens: int
    shortened: bool = False

    def record(self) -> dict[str, Any]:
        """The slice as ``compaction/summary.slices`` logs it."""
        entry: dict[str, Any] = {
            "shadowedSeqs": list(self.seqs),
            "summary": [dict(block) for block in self.summary.blocks],
            "maxTokens": self.max_tokens,
        }
        if self.shortened:
            entry["shortened"] = True
        if self.summary.raw_output is not None:
            entry["rawOutput"] = [dict(block) for block in self.summary.raw_output]
        if self.summary.usage is not None:
            entry["usage"] = dict(self.summary.usage)
        return entry


_MIN_KEPT = 64
"""Characters of a text below which it is never shortened."""


def _shorten_text(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head, tail = limit * 3 // 4, limit // 4
    omitted = len(text) - head - tail
    return f"{text[:head]}\n[... {omitted} characters left out of this summary call ...]\n" + (
        text[-tail:] if tail else ""
    )


def _shorten_blocks(blocks: Sequence[Mapping[str, Any]], limit: int) -> list[dict[str, Any]]:
    shortened: list[dict[str, Any]] = []
    for block in blocks:
        entry = dict(block)
        kind = entry.get("type")
        if kind in ("text", "reasoning") and isinstance(entry.get("text"), str):
            entry["text"] = _shorten_text(entry["text"], limit)
        elif kind == "tool-result" and entry.get("content"):
            entry["content"] = _shorten_blocks(entry["content"], limit)
        shortened.append(entry)
    return shortened


def _shortened(
    budget: SummaryBudget, carried: Sequence[Message], unit: Sequence[Message]
) -> list[Message]:
    """``unit`` with every long text cut to head and tail, the cut halved until the request
    leaves :attr:`SummaryBudget.wanted` tokens of output (or the texts are as short as they
    get: :meth:`SummaryBudget.output_limit` then says whether what is left will do)."""
    wires = [message.to_wire() for message in unit]
    limit = max(len(json.dumps(wire.get("content") or [])) for wire in wires)
    messages = list(unit)
    while limit > _MIN_KEPT:
        limit //= 2
        messages = [
            MESSAGE_ADAPTER.validate_python(
                {**wire, "content": _shorten_blocks(wire.get("content") or [], limit)}
            )
            for wire in wires
        ]
        if budget.fits([*carried, *messages]):
            break
    return [*carried, *messages]


def _carried(summary: Summary) -> Message:
    """The previous slice's summary as the checkpoint the next slice opens with."""
    message: Message = MESSAGE_ADAPTER.validate_python(
        {
            "role": "user",
            "content": checkpoint_content(summary.blocks),
            "source": {"kind": "plugin", "plugin": CHECKPOINT_PLUGIN},
        }
    )
    return message


async def summarize_within(
    session_id: str,
    units: Sequence[Sequence[tuple[int, Message]]],
    summarizer: Summarizer,
    request: SummaryRequest,
    budget: SummaryBudget,
) -> tuple[Summary, list[SummarySlice], bool]:
    """Summarise ``units`` (each a run of ``(seq, message)`` never split) within ``budget``:
    one call when they all fit, else oldest-first slices. Returns the final summary, the
    slices (empty for one call) and whether the system prompt and tools were left out (they
    crowd the window: :attr:`SummaryBudget.crowded`). ``request`` gives the route, envelope
    and configured limit."""
    lean_envelope = budget.lean_envelope
    lean = lean_envelope is not None and budget.crowded
    if lean_envelope is not None and lean:
        budget = dataclasses.replace(budget, envelope=lean_envelope, lean_envelope=None)
        request = dataclasses.replace(request, system=None, tools=())
    everything = [message for unit in units for _, message in unit]
    if budget.fits(everything):
        limit = budget.output_limit(session_id, everything)
        call = dataclasses.replace(request, messages=tuple(everything), max_tokens=limit)
        return await summarizer(call), [], lean
    slices: list[SummarySlice] = []
    carried: list[Message] = []
    index = 0
    while index < len(units):
        messages = list(carried)
        seqs: list[int] = []
        while index < len(units):
            unit = units[index]
            candidate = [*messages, *(message for _, message in unit)]
            if seqs and not budget.fits(candidate):
                break
            messages = candidate
            seqs.extend(seq for seq, _ in unit)
            index += 1
            if not budget.fits(messages):
                break
        shortened = False
        if not budget.fits(messages):  # one unit alone too big: its long texts are shortened
            messages, shortened = _shortened(budget, carried, messages[len(carried) :]), True
        limit = budget.output_limit(session_id, messages)
        call = dataclasses.replace(request, messages=tuple(messages), max_tokens=limit)
        summary = await summarizer(call)
        slices.append(
            SummarySlice(seqs=tuple(seqs), summary=summary, max_tokens=limit, shortened=shortened)
        )
        carried = [_carried(summary)]
    return slices[-1].summary, slices, lean


def slice_records(slices: Sequence[SummarySlice]) -> list[Mapping[str, Any]]:
    """The ``slices`` field of ``compaction/summary`` (empty: one call)."""
    return [piece.record() for piece in slices]
