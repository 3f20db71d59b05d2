"""Which range a compaction replaces: the retention walk over the priced surface.

From the tail toward the head, node prices add up until they reach the retained budget; the cut
goes just before that node, then moves head-ward until no tool call on one side has its result on
the other. The range always starts at the surface head, so an earlier checkpoint is summarized
again and merged into the new one. Retention is by tokens, not turns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dsh_compaction._errors import CompactionError
from dsh_compaction._meter import PricedNode

__all__ = ["CompactionRange", "balanced_cuts", "select_compactable_range"]


@dataclass(frozen=True, slots=True)
class CompactionRange:
    """Surface nodes ``start`` to ``end`` (positions, inclusive) and their ``seqs``."""

    start: int
    end: int
    seqs: tuple[int, ...]

    @property
    def first_seq(self) -> int:
        """The seq of the first shadowed node."""
        return self.seqs[0]

    @property
    def last_seq(self) -> int:
        """The seq of the last shadowed node."""
        return self.seqs[-1]


def balanced_cuts(session_id: str, nodes: Sequence[PricedNode]) -> list[bool]:
    """For each cut ``0..len(nodes)`` (cut ``i`` lies before node ``i``), whether no tool call
    before it waits for a result after it. A result with no call before it is corruption
    (:class:`CompactionError` ``range``)."""
    cuts = [True]
    open_calls = 0
    for node in nodes:
        open_calls += node.tool_balance
        if open_calls < 0:
            raise CompactionError(
                session_id, "range", f"tool result seq {node.seq} answers no open tool call"
            )
        cuts.append(open_calls == 0)
    return cuts


def select_compactable_range(
    session_id: str, nodes: Sequence[PricedNode], retain_tokens: int
) -> CompactionRange | None:
    """The range to compact keeping a tail worth ``retain_tokens`` (0: everything but the newest
    indivisible unit), or ``None`` when nothing lies before the retained tail."""
    if retain_tokens < 0:
        raise ValueError(f"retain_tokens must be >= 0, not {retain_tokens}")
    if not nodes:
        return None
    keep = len(nodes) - 1
    kept = nodes[keep].tokens
    while kept < retain_tokens and keep > 0:
        keep -= 1
        kept += nodes[keep].tokens
    if keep == 0:
        return None
    cuts = balanced_cuts(session_id, nodes)
    while keep > 0 and not cuts[keep]:
        keep -= 1
    if keep == 0:
        return None
    return CompactionRange(0, keep - 1, tuple(node.seq for node in nodes[:keep]))
