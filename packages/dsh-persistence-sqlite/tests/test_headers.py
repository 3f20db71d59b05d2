"""Header columns to headers: the fast builds give exactly what pydantic's copy gives, and every
column check still refuses what it refused."""

from __future__ import annotations

from typing import Any

import pytest

from dsh_persistence import text_from_column, text_to_column
from dsh_persistence_sqlite import _headers
from dsh_session import SessionHeader


def _reference(columns: tuple[Any, ...]) -> SessionHeader:
    """The header as the general path built it before the fast paths: ``model_copy``."""
    session_id, _version, created_at, cwd, parent, origin, depth, preset, seeded = columns
    return _headers._copied(
        {
            "id": text_from_column(session_id),
            "created_at": created_at,
            "cwd": text_from_column(cwd),
            "parent_session": text_from_column(parent),
            "origin": text_from_column(origin),
            "delegation_depth": depth,
            "agent_preset": text_from_column(preset),
            "is_seeded": seeded == 1,
        }
    )


def _same(a: SessionHeader, b: SessionHeader) -> bool:
    return (
        a == b
        and list(a.__dict__.items()) == list(b.__dict__.items())
        and a.model_fields_set == b.model_fields_set
        and a.__pydantic_extra__ == b.__pydantic_extra__
        and a.__pydantic_private__ == b.__pydantic_private__
        and repr(a) == repr(b)
    )


def test_the_construction_agrees_with_pydantic() -> None:
    assert _headers._construction_agrees()
    assert _headers._build is _headers._constructed


@pytest.mark.parametrize(
    "columns",
    [
        ("s1", 0, 1, "/home/u", None, None, None, None, 0),  # the common fast path
        ("s2", 0, 0, None, None, None, None, None, 0),
        ("s3", 0, 2**53 - 1, "C:\\work", None, None, None, None, 0),  # Windows cwd: general
        ("s4", 0, 5, "/w", "parent", "subagent", 2, "preset", 1),
        (text_to_column("s\ud800"), 0, 5, text_to_column("/w\udfff"), None, None, None, None, 0),
        ("sé", 0, 5, "/wü", None, None, None, None, 0),
        (text_to_column("\uffffx"), 0, 5, "/w", None, None, None, None, 0),
    ],
)
def test_header_from_columns_builds_what_model_copy_builds(columns: tuple[Any, ...]) -> None:
    header = _headers.header_from_columns(columns)
    assert _same(header, _reference(columns))
    assert header.model_dump() == SessionHeader.model_validate(header.model_dump()).model_dump()


@pytest.mark.parametrize(
    ("columns", "problem"),
    [
        (("", 0, 1, "/w", None, None, None, None, 0), "id"),
        ((7, 0, 1, "/w", None, None, None, None, 0), "id"),
        (("s", 0, -1, "/w", None, None, None, None, 0), "created_at"),
        (("s", 0, 2**53, "/w", None, None, None, None, 0), "created_at"),
        (("s", 0, 1.0, "/w", None, None, None, None, 0), "created_at"),
        (("s", 0, 1, "relative", None, None, None, None, 0), "cwd"),
        (("s", 0, 1, 3, None, None, None, None, 0), "cwd"),
        (("s", 0, 1, "/w", None, None, None, None, 2), "is_seeded"),
        (("s", 0, 1, "/w", None, None, None, None, 0.0), "is_seeded"),
        (("s", 0, 1, "/w", None, "other", None, None, 0), "origin"),
        (("s", 0, 1, "/w", None, None, -1, None, 0), "delegation_depth"),
        (("s", 0, 1, "/w", 5, None, None, None, 0), "parent_session"),
    ],
)
def test_bad_columns_are_still_refused(columns: tuple[Any, ...], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        _headers.header_from_columns(columns)
