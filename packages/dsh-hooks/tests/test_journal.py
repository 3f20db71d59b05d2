"""The Stop payload's last assistant text is read from either assistant/message shape."""

from __future__ import annotations

from typing import Any

import pytest

from dsh_hooks._journal import last_assistant_text
from dsh_session import Session, SessionHeader, assistant_message_data

_TEXT = [{"type": "reasoning", "text": "hmm"}, {"type": "text", "text": "all "}]
_MORE = [{"type": "text", "text": "done"}]
_PROVENANCE = {"provider": "p", "model": "m"}


@pytest.mark.parametrize(
    "data",
    [
        assistant_message_data(1, 1, [*_TEXT, *_MORE], _PROVENANCE),
        {"turn": 1, "step": 1, "content": [*_TEXT, *_MORE], "provenance": _PROVENANCE},
    ],
    ids=["identified", "bare"],
)
def test_the_last_assistant_text_of_the_open_turn(data: dict[str, Any]) -> None:
    session = Session(SessionHeader(id="s", created_at=1))
    session.append("turn/start", {"turn": 1})
    assert last_assistant_text(session) is None
    session.append("assistant/message", data, source_event_seqs=[])
    assert last_assistant_text(session) == "all done"
