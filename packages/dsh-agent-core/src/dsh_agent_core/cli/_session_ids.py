"""Session ids as a person types them: the shortest unique prefix of an id stands for it
wherever ``dsh`` takes an id, ``sessions list`` shows ids that short (8 characters at least),
and ``--continue`` finds the most recent session of the current directory."""

from __future__ import annotations

import os
from collections.abc import Iterable

from dsh_agent_core._errors import DshError
from dsh_persistence import SessionPersistence, SessionSnapshot

__all__ = [
    "SHORT_ID_LENGTH",
    "AmbiguousSessionIdError",
    "NoSessionHereError",
    "SessionIdError",
    "UnknownSessionIdError",
    "latest_session_here",
    "resolve_session_id",
    "sessions_here",
    "short_ids",
]

SHORT_ID_LENGTH = 8
"""The fewest characters of an id ``sessions list`` shows (more when 8 are not unique)."""

_LISTED = 5
"""How many of the matching ids an ambiguous prefix's error names."""


class SessionIdError(DshError):
    """A session named on the command line that does not name exactly one stored session;
    ``text`` is what was typed."""

    def __init__(self, text: str, message: str) -> None:
        super().__init__(message)
        self.text = text


class UnknownSessionIdError(SessionIdError):
    """No stored session's id is or starts with ``text``."""

    def __init__(self, text: str) -> None:
        super().__init__(text, f"no session starts with {text!r} (dsh sessions list shows the ids)")


class AmbiguousSessionIdError(SessionIdError):
    """Several stored sessions' ids start with ``text``; ``matches`` are all of them."""

    def __init__(self, text: str, matches: list[str]) -> None:
        named = ", ".join(matches[:_LISTED]) + (", …" if len(matches) > _LISTED else "")
        super().__init__(
            text,
            f"{text!r} matches {len(matches)} sessions: {named}; type more of the id",
        )
        self.matches = matches


class NoSessionHereError(DshError):
    """``--continue`` found no stored session whose cwd is ``cwd``."""

    def __init__(self, cwd: str) -> None:
        super().__init__(
            f"no session to continue in {cwd} (none was started here; start one with dsh run)"
        )
        self.cwd = cwd


async def resolve_session_id(
    persistence: SessionPersistence, text: str, *, missing_ok: bool = False
) -> str:
    """The full id of the one stored session ``text`` names: the id itself, or the only id
    that starts with it.

    Raises :class:`AmbiguousSessionIdError` when several ids start with ``text`` and
    :class:`UnknownSessionIdError` when none does, unless ``missing_ok`` (then ``text`` is
    returned as typed, for a command that reports a missing session its own way)."""
    if not text:
        raise UnknownSessionIdError(text)
    if await persistence.stat(text) is not None:
        return text
    matches = sorted(s.id for s in await persistence.list() if s.id.startswith(text))
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise AmbiguousSessionIdError(text, matches)
    if missing_ok:
        return text
    raise UnknownSessionIdError(text)


def short_ids(ids: Iterable[str], minimum: int = SHORT_ID_LENGTH) -> dict[str, str]:
    """Each of ``ids`` shortened to its shortest prefix of at least ``minimum`` characters that
    no other of ``ids`` starts with (the whole id when it is a prefix of another)."""
    ordered = sorted(set(ids))
    shortest: dict[str, str] = {}
    for index, session_id in enumerate(ordered):
        # in sorted order the longest prefix an id shares is with one of its neighbours
        shared = 0
        for other in ordered[max(index - 1, 0) : index + 2]:
            if other != session_id:
                shared = max(shared, _shared_length(session_id, other))
        shortest[session_id] = session_id[: max(minimum, shared + 1)]
    return shortest


def _shared_length(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` have in common."""
    length = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        length += 1
    return length


async def latest_session_here(persistence: SessionPersistence, cwd: str) -> str:
    """The id of the most recently updated stored session of ``cwd`` (see
    :func:`sessions_here`). Raises :class:`NoSessionHereError` when there is none."""
    return _latest_in(await persistence.list(), cwd)


def _latest_in(snapshots: Iterable[SessionSnapshot], cwd: str) -> str:
    recent = sessions_here(snapshots, cwd)
    if not recent:
        raise NoSessionHereError(os.path.realpath(cwd))
    return recent[0].id


def sessions_here(snapshots: Iterable[SessionSnapshot], cwd: str) -> list[SessionSnapshot]:
    """The stored sessions whose cwd is ``cwd`` (compared as real paths), most recently updated
    first; a delegated child (``origin`` ``subagent``) is left out: it is never continued or
    picked on its own."""
    here = os.path.realpath(cwd)
    found = [
        snapshot
        for snapshot in snapshots
        if snapshot.header.origin != "subagent"
        and snapshot.header.cwd is not None
        and os.path.realpath(snapshot.header.cwd) == here
    ]
    return sorted(found, key=lambda s: (s.updated_at or 0, s.id), reverse=True)
