"""Session headers to and from their ``sessions`` columns.

Decoding checks every column against the header model's own rules (types, ranges, an absolute
``cwd``) and then copies a template header, which is several times faster than validating the
model afresh — ``list()`` builds one per session. Text columns hold the seam's
``text_to_column`` form (a string with a lone surrogate is escaped, the id's column included).
"""

from __future__ import annotations

import functools
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

from dsh_persistence import text_from_column, text_to_column
from dsh_session import SessionHeader

_MAX_SAFE_INTEGER = 2**53 - 1


def optional_text_column(value: str | None) -> str | None:
    """``text_to_column`` for a nullable column."""
    return None if value is None else text_to_column(value)


_TEMPLATE = SessionHeader(id="template", created_at=0)
_UPDATED = ("id", "created_at", "cwd", "parent_session", "origin", "delegation_depth",
            "agent_preset", "is_seeded")  # fmt: skip
_FIELDS_SET = frozenset(_TEMPLATE.model_fields_set | set(_UPDATED))
_new_header = SessionHeader.__new__
_set = object.__setattr__


def header_columns(header: SessionHeader) -> tuple[Any, ...]:
    """``(version, created_at, cwd, parent_session, origin, delegation_depth, agent_preset,
    is_seeded)`` of ``header``, text in its column form."""
    return (
        header.version,
        header.created_at,
        optional_text_column(header.cwd),
        optional_text_column(header.parent_session),
        optional_text_column(header.origin),
        header.delegation_depth,
        optional_text_column(header.agent_preset),
        int(header.is_seeded),
    )


@functools.lru_cache(maxsize=4096)
def _is_absolute(cwd: str) -> bool:
    return PurePosixPath(cwd).is_absolute() or PureWindowsPath(cwd).is_absolute()


def _int_in_range(value: object) -> bool:
    return type(value) is int and 0 <= value <= _MAX_SAFE_INTEGER


def _optional_str(value: object) -> bool:
    return value is None or type(value) is str


def header_problem(row: tuple[Any, ...]) -> str | None:
    """What is wrong with header columns ``(id, version, created_at, cwd, parent_session, origin,
    delegation_depth, agent_preset, is_seeded)``, or ``None``."""
    session_id, _version, created_at, cwd, parent, origin, depth, preset, seeded = row
    if type(session_id) is not str or not session_id:
        return f"id {session_id!r} is not a non-empty string"
    if not _int_in_range(created_at):
        return f"created_at {created_at!r} is not epoch milliseconds"
    if cwd is not None and (type(cwd) is not str or not _is_absolute(cwd)):
        return f"cwd {cwd!r} is not an absolute path"
    if not (_optional_str(parent) and _optional_str(preset)):
        return "parent_session and agent_preset must be strings or NULL"
    if origin is not None and origin != "subagent":
        return f"origin {origin!r} is not 'subagent'"
    if depth is not None and not _int_in_range(depth):
        return f"delegation_depth {depth!r} is not a non-negative integer"
    if seeded not in (0, 1) or type(seeded) is not int:
        return f"is_seeded {seeded!r} is not 0 or 1"
    return None


def _copied(values: dict[str, Any]) -> SessionHeader:
    """``_TEMPLATE.model_copy(update=values)``, the reference ``_constructed`` must equal."""
    return _TEMPLATE.model_copy(update=values)


def _constructed(values: dict[str, Any]) -> SessionHeader:
    """What ``_copied(values)`` builds (``values`` holding every ``_UPDATED`` field), without
    pydantic's generic copy: a new instance given its ``__dict__`` and bookkeeping directly.
    Used only when ``_construction_agrees()`` (``list()`` builds one header per session)."""
    header = _new_header(SessionHeader)
    _set(header, "__dict__", {"version": 0, **values})
    _set(header, "__pydantic_extra__", None)
    _set(header, "__pydantic_fields_set__", set(_FIELDS_SET))
    _set(header, "__pydantic_private__", None)
    return header


def _construction_agrees() -> bool:
    """Whether ``_constructed`` builds exactly what ``_copied`` builds with the installed
    pydantic (same fields in the same order, fields set, extra, private, equality, repr)."""
    for values in (
        dict(zip(_UPDATED, ("a", 1, None, None, None, None, None, False), strict=True)),
        dict(zip(_UPDATED, ("b", 2, "/w", "p", "subagent", 1, "x", True), strict=True)),
    ):
        try:
            fast, full = _constructed(values), _copied(values)
        except Exception:
            return False
        if (
            fast != full
            or list(fast.__dict__.items()) != list(full.__dict__.items())
            or fast.model_fields_set != full.model_fields_set
            or fast.__pydantic_extra__ != full.__pydantic_extra__
            or fast.__pydantic_private__ != full.__pydantic_private__
            or repr(fast) != repr(full)
        ):
            return False
    return True


_build = _constructed if _construction_agrees() else _copied


def _plain(value: object) -> bool:
    """Whether ``text_from_column`` returns ``value`` as it is (the common case: ASCII or NULL)."""
    return value is None or (type(value) is str and value.isascii())


def header_from_columns(row: tuple[Any, ...]) -> SessionHeader:
    """The header stored in columns (see ``header_problem``), text columns in their stored form
    (``text_to_column``); raises ``ValueError``."""
    session_id, version, created_at, cwd, parent, origin, depth, preset, seeded = row
    if (  # the common header (a top-level session, ASCII id and POSIX cwd): what the general
        # path below accepts and builds for it, without its calls
        parent is None
        and origin is None
        and depth is None
        and preset is None
        and type(seeded) is int
        and seeded == 0
        and type(session_id) is str
        and session_id
        and session_id.isascii()
        and type(created_at) is int
        and 0 <= created_at <= _MAX_SAFE_INTEGER
        and (cwd is None or (type(cwd) is str and cwd[:1] == "/" and cwd.isascii()))
    ):
        return _build(
            {
                "id": session_id,
                "created_at": created_at,
                "cwd": cwd,
                "parent_session": None,
                "origin": None,
                "delegation_depth": None,
                "agent_preset": None,
                "is_seeded": False,
            }
        )
    if not (
        _plain(session_id) and _plain(cwd) and _plain(parent) and _plain(origin) and _plain(preset)
    ):
        row = (
            text_from_column(session_id),
            version,
            created_at,
            text_from_column(cwd),
            text_from_column(parent),
            text_from_column(origin),
            depth,
            text_from_column(preset),
            seeded,
        )
    problem = header_problem(row)
    if problem is not None:
        raise ValueError(problem)
    session_id, _version, created_at, cwd, parent, origin, depth, preset, seeded = row
    return _build(
        {
            "id": session_id,
            "created_at": created_at,
            "cwd": cwd,
            "parent_session": parent,
            "origin": origin,
            "delegation_depth": depth,
            "agent_preset": preset,
            "is_seeded": seeded == 1,
        }
    )
