"""Strings in TEXT columns, losslessly: lone surrogates included.

SQLite TEXT is UTF-8, and a Python ``str`` holding a lone surrogate (``"\\ud800"``, which JSON and
the session format allow) has no UTF-8 form: ``sqlite3`` raises ``UnicodeEncodeError`` binding it.
So such a string is stored as ``ESCAPE`` followed by its JSON string literal in ASCII
(``"\\ud800"`` as the 8 characters ``"\\ud800"`` after the marker). A string that does not start
with ``ESCAPE`` and has a UTF-8 form — every string a person writes — is stored as itself, so
``SELECT id, cwd FROM sessions`` stays readable. A string that starts with ``ESCAPE`` is escaped
too, which keeps the mapping one-to-one: two ids differing only in a surrogate stay two rows.

``ESCAPE`` is U+FFFF, a Unicode noncharacter ("never to be interchanged"): a stored string that
begins with it was written by this module.
"""

from __future__ import annotations

import json

ESCAPE = "\uffff"


def _needs_escape(value: str) -> bool:
    if value.startswith(ESCAPE):
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def to_column(value: str) -> str:
    """The TEXT column form of ``value`` (``value`` itself unless it needs the escape)."""
    if value.isascii() or not _needs_escape(value):
        return value
    return ESCAPE + json.dumps(value, ensure_ascii=True)


def optional_to_column(value: str | None) -> str | None:
    """``to_column`` for a nullable column."""
    return None if value is None else to_column(value)


def from_column(value: object) -> object:
    """The string a TEXT column holds (``to_column`` undone); anything else is returned as is.

    Raises ``ValueError`` for an escaped value that is not a JSON string literal.
    """
    if type(value) is not str or value.isascii() or not value.startswith(ESCAPE):
        return value
    try:
        decoded = json.loads(value[1:])
    except ValueError as error:
        raise ValueError(f"escaped text column {value!r} does not decode: {error}") from error
    if type(decoded) is not str:
        raise ValueError(f"escaped text column {value!r} does not hold a string")
    return decoded
