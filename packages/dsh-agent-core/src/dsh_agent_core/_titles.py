"""Session titles: the latest ``session/title`` wins; the fallback is the first prompt's start."""

from __future__ import annotations

import weakref
from typing import Any

from dsh_agent import RequestConfig, StepContext
from dsh_session import Session

__all__ = ["FALLBACK_TITLE_WORDS", "FallbackTitles", "fallback_title", "title_of_events"]

FALLBACK_TITLE_WORDS = 5
"""How many words of the first prompt a fallback title keeps (as the TypeScript harness's)."""


def fallback_title(text: str) -> str:
    """The first words of ``text`` (at most 80 characters), as a fallback title."""
    words = text.split()[:FALLBACK_TITLE_WORDS]
    return " ".join(words)[:80]


def _first_prompt(session: Session, start: int = 0) -> tuple[int, str] | None:
    for event in session.events[start:]:
        if event.type != "user/message":
            continue
        data: Any = event.data
        source = data.get("source") if isinstance(data, dict) else None
        if not isinstance(source, dict) or source.get("kind") != "user":
            continue
        texts = [
            block.get("text", "")
            for block in data.get("content", [])
            if isinstance(block, dict) and block.get("type") == "text"
        ]
        text = " ".join(t for t in texts if isinstance(t, str)).strip()
        if text:
            return event.seq, text
    return None


def title_of_events(events: Any) -> str | None:
    """The title of a log: its latest ``session/title`` (``None``: it has none)."""
    title: str | None = None
    for event in events:
        if event.type == "session/title":
            data: Any = event.data
            if isinstance(data, dict) and isinstance(data.get("title"), str):
                title = data["title"]
    return title


class FallbackTitles:
    """A ``request`` listener that logs a fallback ``session/title`` (``source.kind =
    "fallback"``, naming the prompt's seq) on the first request of a session that has no title
    yet, so every listed session has one. It never changes the request."""

    def __init__(self) -> None:
        self._settled: weakref.WeakSet[Session] = weakref.WeakSet()
        self._scanned: weakref.WeakKeyDictionary[Session, int] = weakref.WeakKeyDictionary()

    def __call__(self, step: StepContext, config: RequestConfig) -> None:
        """Title the session if it has no title yet."""
        session = step.agent.session
        if session in self._settled:
            return
        if session.title is not None:
            self._settled.add(session)
            return
        prompt = _first_prompt(session, self._scanned.get(session, 0))
        if prompt is None:  # no user prompt yet: look only at newer events next time
            self._scanned[session] = session.next_seq
            return
        seq, text = prompt
        session.append(
            "session/title",
            {"title": fallback_title(text), "messageSeqs": [seq], "source": {"kind": "fallback"}},
        )
        self._settled.add(session)
