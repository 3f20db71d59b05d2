"""Tool-result pruning: shorten oversized tool results to their head and tail, no model call.

Each pruned result is logged as a pair, back to back: ``compaction/prune`` (what is shadowed and
its price), then a ``tool/result`` with the original data but the shortened content, replacing
the original on the surface (``surfaceOp: {op: "replace", start: seq, end: seq}``, citing it).
The original stays in the log. A pass is idempotent: a pruned result is under the threshold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dsh_compaction._config import PRUNE_MARKER, PruneConfig
from dsh_compaction._errors import CompactionError
from dsh_compaction._estimate import estimate_wire_message
from dsh_session import Session, project_message

__all__ = ["PruneReport", "PrunedResult", "prune_content", "prune_session"]


@dataclass(frozen=True, slots=True)
class PrunedResult:
    """One pruned result: the ``original_seq`` replaced by ``replacement_seq``, its ``call_id``,
    and its text length (code points) before and after."""

    original_seq: int
    replacement_seq: int
    call_id: str | None
    chars_before: int
    chars_after: int


@dataclass(frozen=True, slots=True)
class PruneReport:
    """What a pruning pass did: each result pruned, and the code points removed in all."""

    pruned: tuple[PrunedResult, ...]
    chars_removed: int


def _text_length(blocks: Sequence[Mapping[str, Any]]) -> int:
    return sum(len(block.get("text", "")) for block in blocks if block.get("type") == "text")


def prune_content(
    blocks: Sequence[Mapping[str, Any]], config: PruneConfig
) -> list[dict[str, Any]] | None:
    """The content with its text shortened to ``head_chars`` + marker + ``tail_chars`` code points
    (counted across the text blocks in order; other blocks stay where they are, text blocks left
    empty are dropped, the marker goes once into the first block the cut touches), or ``None``
    when the text is within ``threshold_chars``."""
    total = _text_length(blocks)
    if total <= config.threshold_chars:
        return None
    cut_start, cut_end = config.head_chars, total - config.tail_chars
    result: list[dict[str, Any]] = []
    offset = 0
    marked = False
    for block in blocks:
        if block.get("type") != "text":
            result.append(dict(block))
            continue
        text: str = block.get("text", "")
        start, end = offset, offset + len(text)
        offset = end
        head = text[: max(0, min(end, cut_start) - start)]
        tail = text[max(0, max(start, cut_end) - start) :] if end > cut_end else ""
        if start < cut_end and end > cut_start and not marked:
            kept = head + PRUNE_MARKER + tail
            marked = True
        else:
            kept = head + tail
        if kept:
            result.append({**block, "text": kept})
    return result


def _inner_content(data: Mapping[str, Any]) -> list[Any] | None:
    if "message" in data:
        message = data["message"]
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict):
            inner = content[0].get("content")
            return inner if isinstance(inner, list) else None
        return None
    inner = data.get("content")
    return inner if isinstance(inner, list) else None


def _with_inner_content(data: Mapping[str, Any], content: list[dict[str, Any]]) -> dict[str, Any]:
    if "message" in data:
        message = data["message"]
        block = {**message["content"][0], "content": content}
        return {**data, "message": {**message, "content": [block]}}
    return {**data, "content": content}


def prune_session(session: Session, config: PruneConfig, *, open_turn: int | None) -> PruneReport:
    """Prune every oversized tool result on ``session``'s surface (see the module docs).

    ``open_turn`` is the turn in progress: a tool result is replaced only inside a turn
    (:class:`CompactionError` ``no-open-turn`` otherwise). A refused replacement raises; the
    pairs already logged stay.
    """
    if not config.enabled:
        return PruneReport((), 0)
    if open_turn is None:
        raise CompactionError(session.id, "no-open-turn", "tool results are pruned inside a turn")
    pruned: list[PrunedResult] = []
    removed = 0
    events = session.events
    for seq in session.surface:
        event = events[seq]
        if event.type != "tool/result":
            continue
        data: Any = event.data
        inner = _inner_content(data)
        if inner is None:
            continue
        shortened = prune_content(inner, config)
        if shortened is None:
            continue
        message = project_message(event)
        price = 0 if message is None else estimate_wire_message(message.to_wire())
        session.append(
            "compaction/prune",
            {
                "shadowedRange": {"start": seq, "end": seq},
                "shadowedSeqs": [seq],
                "shadowedTokenCount": price,
            },
        )
        replacement = session.append(
            "tool/result",
            _with_inner_content(data, shortened),
            surface_op={"op": "replace", "start": seq, "end": seq},
            source_event_seqs=[seq],
        )
        before, after = _text_length(inner), _text_length(shortened)
        call_id = data.get("callId") if "message" not in data else None
        if call_id is None and "message" in data:
            call_id = data["message"]["content"][0].get("toolCallId")
        pruned.append(PrunedResult(seq, replacement.seq, call_id, before, after))
        removed += before - after
    return PruneReport(tuple(pruned), removed)
