"""The error vocabulary of the session model: one base class, subclasses carrying the facts."""

from __future__ import annotations

from typing import Any


class SessionFormatError(ValueError):
    """Base class: session data that does not follow format v0 (or a rule of the session model)."""


class UnsupportedFormatVersionError(SessionFormatError):
    """A header whose ``version`` is not the supported format version (upgrade, not corruption)."""

    def __init__(self, version: object) -> None:
        self.version = version
        super().__init__(
            f"session format version {version!r} is not supported (this library reads and writes "
            f"version 0); upgrade dsh-session to read it"
        )


class HeaderDecodeError(SessionFormatError):
    """A malformed header line (line 1 of a log); ``reason`` says what is wrong."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"malformed session header: {reason}")


class EventDecodeError(SessionFormatError):
    """A malformed event line; ``reason`` says what is wrong."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"malformed session event: {reason}")


class ChunkRowError(SessionFormatError):
    """A malformed packed chunk row (``text-chunks``, ``reasoning-chunks``, ``tool-call-chunks``).

    ``row_type`` is the row's tag, ``reason`` what is wrong with it."""

    def __init__(self, row_type: str, reason: str) -> None:
        self.row_type = row_type
        self.reason = reason
        super().__init__(f"malformed {row_type} storage row: {reason}")


class SessionValidationError(SessionFormatError):
    """An event a :class:`Session` refuses (bad seq, envelope, data or surface transition).

    ``seq`` is the seq of the refused event (``None`` when it has none), ``code`` a stable
    machine-readable reason (``SEQ``, ``ENVELOPE``, ``SURFACE``, ``REENTRANT``, ``DATA``,
    ``HEADER``, ``DERIVE``, ``LEGACY``). When a pydantic validation refused the data, the error
    names every problem (field path, message, the value) and chains the
    ``pydantic.ValidationError`` as ``__cause__``.
    """

    def __init__(self, message: str, *, code: str, seq: int | None = None) -> None:
        self.code = code
        self.seq = seq
        super().__init__(message if seq is None else f"event seq {seq}: {message}")


class SessionForkError(SessionFormatError):
    """A fork boundary the session model refuses.

    ``code`` is ``INVALID_BOUNDARY`` or ``OPEN_TURN``; ``boundary`` the refused value."""

    def __init__(self, message: str, *, code: str, boundary: object) -> None:
        self.code = code
        self.boundary = boundary
        super().__init__(message)


class LosslessJsonError(TypeError):
    """A value that is not losslessly JSON-serializable; ``path`` names the bad value."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"value at {path} is not losslessly JSON-serializable: {reason}")


def describe_validation_error(exc: Any, *, limit: int = 8) -> str:
    """Every problem of a ``pydantic.ValidationError`` on one line: ``path: message (got
    value)``, joined by ``; `` (the first ``limit``, then how many more)."""
    errors = exc.errors(include_url=False)
    parts = []
    for error in errors[:limit]:
        where = ".".join(str(part) for part in error["loc"]) or "(the value)"
        got = repr(error.get("input"))
        got = got if len(got) <= 60 else got[:57] + "..."
        parts.append(f"{where}: {error['msg']} (got {got})")
    if len(errors) > limit:
        parts.append(f"and {len(errors) - limit} more")
    return "; ".join(parts)
