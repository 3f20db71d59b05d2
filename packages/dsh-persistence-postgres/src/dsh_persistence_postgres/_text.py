"""Strings in ``text`` columns: the seam's lossless rule (``text_to_column``), NUL escaped too.

PostgreSQL ``text`` is UTF-8 without NUL, so besides a string with no UTF-8 form (a lone
surrogate) or one starting with the marker, a string holding ``"\\x00"`` is escaped; the SQLite
store keeps NUL as it is.
"""

from __future__ import annotations

from dsh_persistence import text_to_column


def to_column(value: str) -> str:
    """The ``text`` column form of ``value`` (``value`` itself unless it needs the escape)."""
    return text_to_column(value, escape_nul=True)
