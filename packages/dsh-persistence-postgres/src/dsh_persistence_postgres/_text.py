"""Strings in TEXT columns, losslessly: lone surrogates and NUL included.

PostgreSQL ``text`` is UTF-8 without NUL, and a Python ``str`` may hold a lone surrogate
(``"\\ud800"``, which JSON and the session format allow) or ``"\\x00"``. Such a string is stored as
``ESCAPE`` followed by its JSON string literal in ASCII; every other string (every string a person
writes) is stored as itself, so ``SELECT id FROM sessions`` stays readable. A string that starts
with ``ESCAPE`` is escaped too, which keeps the mapping one-to-one. ``ESCAPE`` is U+FFFF, a Unicode
noncharacter. (The same rule as the SQLite backend's, plus NUL.)
"""

from __future__ import annotations

import json

ESCAPE = "\uffff"


def _needs_escape(value: str) -> bool:
    if value.startswith(ESCAPE) or "\x00" in value:
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def to_column(value: str) -> str:
    """The TEXT column form of ``value`` (``value`` itself unless it needs the escape)."""
    if (value.isascii() and "\x00" not in value) or not _needs_escape(value):
        return value
    return ESCAPE + json.dumps(value, ensure_ascii=True)
