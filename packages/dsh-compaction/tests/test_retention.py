"""The retention walk and tool balance (reference §1.5)."""

from __future__ import annotations

import pytest

from dsh_compaction import CompactionError, PricedNode, balanced_cuts, select_compactable_range


def nodes(*spec: tuple[int, int]) -> list[PricedNode]:
    """Nodes seq 10, 11, ... with (tokens, tool_balance) each."""
    return [PricedNode(10 + index, tokens, balance) for index, (tokens, balance) in enumerate(spec)]


def test_the_tail_is_kept_by_tokens_and_the_range_starts_at_the_head() -> None:
    surface = nodes((100, 0), (100, 0), (30, 0), (30, 0))
    picked = select_compactable_range("s", surface, 50)
    assert picked is not None
    assert (picked.start, picked.end, picked.seqs) == (0, 1, (10, 11))
    assert (picked.first_seq, picked.last_seq) == (10, 11)


def test_a_budget_of_zero_keeps_only_the_newest_node() -> None:
    picked = select_compactable_range("s", nodes((5, 0), (5, 0), (5, 0)), 0)
    assert picked is not None
    assert picked.seqs == (10, 11)


def test_nothing_before_the_retained_tail_means_no_range() -> None:
    assert select_compactable_range("s", nodes((10, 0), (10, 0)), 1000) is None
    assert select_compactable_range("s", nodes((10, 0)), 0) is None  # one node
    assert select_compactable_range("s", [], 0) is None


def test_the_cut_snaps_head_ward_so_no_call_loses_its_result() -> None:
    # prompt, answer calling two tools, result, result, answer
    surface = nodes((50, 0), (10, 2), (10, -1), (10, -1), (10, 0))
    # a 15-token budget stops at the last result (index 3): the cut before it splits the pair
    picked = select_compactable_range("s", surface, 15)
    assert picked is not None
    assert picked.seqs == (10,)
    assert balanced_cuts("s", surface) == [True, True, False, False, True, True]


def test_a_surface_that_is_one_tool_pair_cannot_be_compacted() -> None:
    assert select_compactable_range("s", nodes((10, 1), (10, -1)), 0) is None


def test_an_open_call_at_the_tail_blocks_every_cut_after_it() -> None:
    surface = nodes((50, 0), (10, 0), (10, 1))  # the last answer's call has no result yet
    picked = select_compactable_range("s", surface, 0)
    assert picked is not None
    assert picked.seqs == (10, 11)
    blocked = nodes((50, 0), (10, 1), (10, 0))  # a call whose result never came
    assert select_compactable_range("s", blocked, 0) is not None
    assert balanced_cuts("s", blocked) == [True, True, False, False]


def test_an_orphan_result_is_corruption() -> None:
    with pytest.raises(CompactionError, match="seq 11 answers no open tool call") as caught:
        select_compactable_range("s", nodes((10, 0), (10, -1), (10, 0)), 0)
    assert caught.value.code == "range"


def test_a_negative_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="retain_tokens"):
        select_compactable_range("s", nodes((1, 0)), -1)
