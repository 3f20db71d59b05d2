"""Matchers: which hooks of an event run for a subject (a tool name, a session source).

Both dialects read a matcher the way Claude Code does: absent, ``""`` and ``"*"`` match
everything; a pattern made only of letters, digits, ``_`` and ``|`` is a list of exact names
(``"Bash|Write"`` matches ``Bash`` and ``Write``, not ``BashOutput``); anything else is a regular
expression searched anywhere in the subject (``"mcp__.*"``, ``"^Write$"``). Python's ``re``
stands in for JavaScript's (Claude Code) and Rust's (Codex) engines; the patterns hook configs
use (alternation, classes, anchors, ``.*``) mean the same in all three.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Matcher"]

_EXACT = re.compile(r"[A-Za-z0-9_|]+")


@dataclass(frozen=True, slots=True)
class Matcher:
    """A compiled matcher; ``Matcher.compile(pattern)`` raises ``re.error`` for a bad regex."""

    pattern: str | None
    names: frozenset[str] | None = None
    regex: re.Pattern[str] | None = None

    @classmethod
    def compile(cls, pattern: str | None) -> Matcher:
        """The matcher of ``pattern`` (see the module docs for the three forms)."""
        if pattern is None or pattern in ("", "*"):
            return cls(pattern)
        if _EXACT.fullmatch(pattern):
            return cls(pattern, names=frozenset(pattern.split("|")))
        return cls(pattern, regex=re.compile(pattern))

    def matches(self, subject: str) -> bool:
        """Whether hooks under this matcher run for ``subject``."""
        if self.names is not None:
            return subject in self.names
        if self.regex is not None:
            return self.regex.search(subject) is not None
        return True
