"""Strings in SQL TEXT columns, losslessly: lone surrogates (and, where asked, NUL) included.

A database TEXT column holds UTF-8, and a Python ``str`` may hold a lone surrogate
(``"\\ud800"``, which JSON and the session format allow) that has no UTF-8 form; PostgreSQL's
``text`` refuses ``"\\x00"`` too. Such a string is stored as ``TEXT_COLUMN_ESCAPE`` followed by
its JSON string literal in ASCII (``"\\ud800"`` as the 8 characters ``"\\ud800"`` after the
marker). Every other string (every string a person writes) is stored as itself, so a
``SELECT id FROM sessions`` stays readable. A string that starts with the marker is escaped too,
which keeps the mapping one-to-one: two ids differing only in a surrogate stay two rows.

``TEXT_COLUMN_ESCAPE`` is U+FFFF, a Unicode noncharacter ("never to be interchanged"): a stored
string that begins with it was written by ``text_to_column``.
"""

from __future__ import annotations

import json

__all__ = ["TEXT_COLUMN_ESCAPE", "text_from_column", "text_to_column"]

TEXT_COLUMN_ESCAPE = "\uffff"
"""The marker that starts an escaped TEXT column value."""


def _needs_escape(value: str, escape_nul: bool) -> bool:
    if value.startswith(TEXT_COLUMN_ESCAPE) or (escape_nul and "\x00" in value):
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def text_to_column(value: str, *, escape_nul: bool = False) -> str:
    """The TEXT column form of ``value``: ``value`` itself unless it has no UTF-8 form, starts
    with the marker, or (with ``escape_nul``, for a database whose TEXT refuses it) holds NUL.

    A backend keeps one ``escape_nul`` for the life of its store: it decides the stored form.
    """
    if value.isascii() and not (escape_nul and "\x00" in value):
        return value
    if not _needs_escape(value, escape_nul):
        return value
    return TEXT_COLUMN_ESCAPE + json.dumps(value, ensure_ascii=True)


def text_from_column(value: object) -> object:
    """The string a TEXT column holds (``text_to_column`` undone); anything else as it is.

    Raises ``ValueError`` for an escaped value that is not a JSON string literal.
    """
    if type(value) is not str or value.isascii() or not value.startswith(TEXT_COLUMN_ESCAPE):
        return value
    try:
        decoded = json.loads(value[1:])
    except ValueError as error:
        raise ValueError(f"escaped text column {value!r} does not decode: {error}") from error
    if type(decoded) is not str:
        raise ValueError(f"escaped text column {value!r} does not hold a string")
    return decoded
