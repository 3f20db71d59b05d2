"""The session header and its physical line 1 in a JSONL log (tagged ``"type":"session"``)."""

from __future__ import annotations

import json
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import from_json

from dsh_session._errors import (
    HeaderDecodeError,
    UnsupportedFormatVersionError,
    describe_validation_error,
)
from dsh_session._generations import (
    READ_GENERATIONS,
    generation_header_fields,
    generation_header_wire,
)
from dsh_session._json import MAX_SAFE_INTEGER, dumps_canonical

SESSION_FORMAT_VERSION = 0
"""The session log format this library writes (v0, as the TypeScript harness wrote it); it reads
v0 and the harness's later generations v1-v4 too (:mod:`dsh_session._generations`)."""

_HEADER_KEYS = (
    "type",
    "version",
    "id",
    "createdAt",
    "cwd",
    "parentSession",
    "seedLength",
    "origin",
    "delegationDepth",
    "agentPreset",
)
_HEADER_KEY_SET = frozenset(_HEADER_KEYS)


class SessionHeader(BaseModel):
    """Metadata kept beside the log: identity, creation time, working directory, lineage.

    ``is_seeded`` says the log starts with events inherited from a fork parent; how many
    (``inherited_event_count``) travels beside the header (on disk: ``seedLength`` in v0; in the
    harness's generations v2-v4, which store ``isSeeded`` itself, a cut marker in the body).
    ``version`` is the log's generation: 0 for what this library writes, 1-4 for a log of a
    later generation read as it was stored.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, populate_by_name=True)

    version: Literal[0, 1, 2, 3, 4] = 0
    id: str  # non-empty, checked below: min_length cannot count a lone surrogate
    created_at: int = Field(alias="createdAt", ge=0, le=MAX_SAFE_INTEGER)
    cwd: str | None = None
    parent_session: str | None = Field(None, alias="parentSession")
    origin: Literal["subagent"] | None = None
    delegation_depth: int | None = Field(None, alias="delegationDepth", ge=0, le=MAX_SAFE_INTEGER)
    agent_preset: str | None = Field(None, alias="agentPreset")
    is_seeded: bool = Field(False, alias="isSeeded")

    @field_validator("id")
    @classmethod
    def _id_has_no_nul(cls, ident: str) -> str:
        # an id travels as DSH_SESSION_ID into every command (and a NUL ends a C string)
        if not ident:
            raise ValueError("a session id cannot be empty")
        if "\x00" in ident:
            raise ValueError(f"a session id cannot hold a NUL character: {ident!r}")
        return ident

    @field_validator("cwd")
    @classmethod
    def _cwd_is_absolute(cls, cwd: str | None) -> str | None:
        if cwd is not None and "\x00" in cwd:
            raise ValueError(f"cwd cannot hold a NUL character: {cwd!r}")
        if (
            cwd is not None
            and cwd[:1] != "/"  # POSIX absolute, the common case: no pathlib parse
            and not (PurePosixPath(cwd).is_absolute() or PureWindowsPath(cwd).is_absolute())
        ):
            raise ValueError(f"cwd must be an absolute path, not {cwd!r}")
        return cwd


_validate_header = SessionHeader.__pydantic_validator__.validate_python
"""``SessionHeader.model_validate`` without its Python-level wrapper (one header per listed
session)."""


_new_header = SessionHeader.__new__
_set = object.__setattr__


def _common_header(wire: dict[str, Any]) -> SessionHeader | None:
    """The most common header line, ``{type:'session', version:0, id, createdAt, cwd?}`` with a
    POSIX ``cwd``, built as ``model_construct`` builds a model (no validator run); ``None`` for
    any other line, which the full path then judges. Only ever gives what the full path gives
    (compared at import: ``_COMMON_HEADERS``)."""
    ident = wire.get("id")
    created = wire.get("createdAt")
    cwd = wire.get("cwd")
    version = wire.get("version")
    if (
        len(wire) != (4 if cwd is None else 5)
        or wire.get("type") != "session"
        or type(version) is not int
        or version != 0
        or type(ident) is not str
        or not ident
        or "\x00" in ident
        or type(created) is not int
        or not 0 <= created <= MAX_SAFE_INTEGER
        or (cwd is not None and (type(cwd) is not str or cwd[:1] != "/" or "\x00" in cwd))
    ):
        return None
    header = _new_header(SessionHeader)
    _set(
        header,
        "__dict__",
        {
            "version": 0,
            "id": ident,
            "created_at": created,
            "cwd": cwd,
            "parent_session": None,
            "origin": None,
            "delegation_depth": None,
            "agent_preset": None,
            "is_seeded": False,
        },
    )
    fields_set = {"version", "id", "created_at", "is_seeded"}
    if cwd is not None:
        fields_set.add("cwd")
    _set(header, "__pydantic_fields_set__", fields_set)
    _set(header, "__pydantic_extra__", None)
    _set(header, "__pydantic_private__", None)
    return header


def _common_header_agrees() -> bool:
    """Whether :func:`_common_header` builds exactly what the validator builds with the
    installed pydantic; if not, every header line takes the full path."""
    for wire in (
        {"type": "session", "version": 0, "id": "a", "createdAt": 1},
        {"type": "session", "version": 0, "id": "b", "createdAt": 2, "cwd": "/w"},
    ):
        fields = {k: v for k, v in wire.items() if k != "type"}
        try:
            fast = _common_header(dict(wire))
            full = _validate_header({**fields, "isSeeded": False})
        except Exception:
            return False
        if (
            fast is None
            or fast != full
            or list(fast.__dict__.items()) != list(full.__dict__.items())
            or fast.model_fields_set != full.model_fields_set
            or fast.__pydantic_extra__ != full.__pydantic_extra__
            or fast.__pydantic_private__ != full.__pydantic_private__
            or repr(fast) != repr(full)
            or fast.model_dump(exclude_unset=True) != full.model_dump(exclude_unset=True)
        ):
            return False
    return True


_COMMON_HEADERS = _common_header_agrees()


def _check_cut(header: SessionHeader, inherited_event_count: int) -> None:
    if type(inherited_event_count) is not int or not (
        0 <= inherited_event_count <= MAX_SAFE_INTEGER
    ):
        raise ValueError(
            f"inherited_event_count must be a non-negative safe integer, not "
            f"{inherited_event_count!r}"
        )
    if header.is_seeded and inherited_event_count == 0:
        raise ValueError(f"session {header.id!r} is seeded but its inherited_event_count is 0")
    if not header.is_seeded and inherited_event_count != 0:
        raise ValueError(
            f"session {header.id!r} is not seeded but has inherited_event_count "
            f"{inherited_event_count}"
        )


def header_to_wire(header: SessionHeader, inherited_event_count: int = 0) -> dict[str, Any]:
    """The physical header object, keys in the writer's order; optional fields omitted (a
    v2+ header writes ``isSeeded`` and no ``seedLength``: its cut is a marker in the body)."""
    _check_cut(header, inherited_event_count)
    if header.version >= 2:
        return generation_header_wire(
            {
                "version": header.version,
                "id": header.id,
                "createdAt": header.created_at,
                "cwd": header.cwd,
                "parentSession": header.parent_session,
                "isSeeded": header.is_seeded,
                "origin": header.origin,
                "delegationDepth": header.delegation_depth,
                "agentPreset": header.agent_preset,
            }
        )
    wire: dict[str, Any] = {
        "type": "session",
        "version": header.version,
        "id": header.id,
        "createdAt": header.created_at,
    }
    if header.cwd is not None:
        wire["cwd"] = header.cwd
    if header.parent_session is not None:
        wire["parentSession"] = header.parent_session
    if header.is_seeded:
        wire["seedLength"] = inherited_event_count
    if header.origin is not None:
        wire["origin"] = header.origin
    if header.delegation_depth is not None:
        wire["delegationDepth"] = header.delegation_depth
    if header.agent_preset is not None:
        wire["agentPreset"] = header.agent_preset
    return wire


def encode_header_line(header: SessionHeader, inherited_event_count: int = 0) -> bytes:
    """The physical line 1 of a log (no trailing newline).

    ``seedLength`` is written iff the header is seeded, and then equals ``inherited_event_count``;
    a seeded header with a zero count, or an unseeded one with a non-zero count, raises
    ``ValueError``.
    """
    return dumps_canonical(header_to_wire(header, inherited_event_count))


def _refuse_constant(constant: str) -> Any:
    raise HeaderDecodeError(f"{constant} is not a JSON value")


def _loads(line: bytes | str) -> Any:
    try:
        return json.loads(line, parse_constant=_refuse_constant)
    except HeaderDecodeError:
        raise
    except (ValueError, UnicodeDecodeError) as exc:
        raise HeaderDecodeError(f"not JSON ({exc})") from None


def decode_header_line(line: bytes | str) -> tuple[SessionHeader, int]:
    """Line 1 of a log to ``(header, inherited_event_count)``.

    The ``version`` is checked first: any value other than 0-4 raises
    :class:`UnsupportedFormatVersionError` (a newer writer means "upgrade", not "corrupt");
    anything else malformed raises :class:`HeaderDecodeError`. A v2-v4 header has no
    ``seedLength``: its count is returned as 0 and a seeded log's cut is found in its body
    (:func:`~dsh_session.generation_cut`).
    """
    try:  # the Rust parser first (list() decodes one header per session)
        wire = from_json(line, allow_inf_nan=False)
    except (ValueError, TypeError):  # not UTF-8 JSON, lone surrogates: the stdlib decides, words it
        wire = _loads(line)
    else:  # from_json strings hold no lone surrogates: the common header may skip the validator
        if _COMMON_HEADERS and type(wire) is dict:
            header = _common_header(wire)
            if header is not None:
                return header, 0
    if type(wire) is not dict:
        raise HeaderDecodeError("the header line must be a JSON object")
    if "version" not in wire:
        raise HeaderDecodeError("the header has no version")
    version = wire["version"]
    if type(version) is not int or version not in READ_GENERATIONS:
        raise UnsupportedFormatVersionError(version)
    if version >= 2:
        try:
            return _validate_header(generation_header_fields(wire)), 0
        except ValidationError as exc:
            raise HeaderDecodeError(describe_validation_error(exc)) from exc
    if wire.get("type") != "session":
        raise HeaderDecodeError(f"line 1 must be tagged type 'session', not {wire.get('type')!r}")
    if not wire.keys() <= _HEADER_KEY_SET:
        unknown = [key for key in wire if key not in _HEADER_KEY_SET]
        raise HeaderDecodeError(f"unexpected header key(s) {unknown}")
    seed_length = wire.get("seedLength")
    if seed_length is not None and (
        type(seed_length) is not int or not 0 < seed_length <= MAX_SAFE_INTEGER
    ):
        raise HeaderDecodeError(f"seedLength must be a positive safe integer, not {seed_length!r}")
    fields = wire  # a fresh dict of our own: reshape it in place
    del fields["type"]
    fields.pop("seedLength", None)
    if None in fields.values():
        for key in ("cwd", "parentSession", "origin", "delegationDepth", "agentPreset"):
            if key in fields and fields[key] is None:
                raise HeaderDecodeError(f"{key} is null (optional header fields are omitted)")
    fields["isSeeded"] = seed_length is not None
    try:
        header = _validate_header(fields)
    except ValidationError as exc:
        raise HeaderDecodeError(describe_validation_error(exc)) from exc
    return header, seed_length or 0
