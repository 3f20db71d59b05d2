"""``short_ids`` (issue 34 §2): the short form ``sessions list`` shows names exactly one id."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from dsh_agent_core.cli._session_ids import short_ids

_IDS = st.lists(st.text(alphabet="01ab-", min_size=1, max_size=14), max_size=30)


@given(_IDS)
def test_each_short_id_is_the_shortest_prefix_of_8_or_more_no_other_id_shares(
    ids: list[str],
) -> None:
    shortened = short_ids(ids)
    assert set(shortened) == set(ids)
    for session_id, short in shortened.items():
        assert session_id.startswith(short)
        assert len(short) >= min(8, len(session_id))
        others = [other for other in set(ids) if other != session_id]
        if short != session_id:  # the whole id is shown when it is a prefix of another
            assert not any(other.startswith(short) for other in others), (session_id, short)
        if len(short) > 8:  # one character fewer would be shared
            assert any(other.startswith(short[:-1]) for other in others), (session_id, short)


def test_uuids_that_differ_early_are_shown_with_8_characters() -> None:
    ids = ["04fbbc47-01ac-425b-905e-b0fd2d2e898c", "14283638-8150-4a32-89c8-2924a6e6c52d"]
    assert short_ids(ids) == {ids[0]: "04fbbc47", ids[1]: "14283638"}
