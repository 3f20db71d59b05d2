"""`find_program` and `program_inside`: finding a trusted program once, never where a user can
write.

An executor that runs commands starts programs of its own (the outer ``bash``, ``bwrap``).
Looked up on ``PATH``, a program that any earlier command planted in a ``PATH`` folder (an
activated ``.venv/bin``, ``node_modules/.bin``, a ``~/bin`` written by yesterday's run in the
home directory) would run in its place, unconfined. So such a program is never looked up on
``PATH``: a bare name is searched once in the fixed `SYSTEM_PROGRAM_DIRS`, a candidate that
group or others may replace is refused, and the result is kept as an absolute path; a
confining executor then also refuses one that lies inside a folder its commands may write
(`program_inside`). A program named by path is used as given.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final

from dsh_shell._errors import ShellNotFoundError, ShellValueError

SYSTEM_PROGRAM_DIRS: Final[tuple[str, ...]] = (
    "/usr/bin",
    "/bin",
    "/usr/sbin",
    "/sbin",
    "/usr/local/bin",
    "/usr/local/sbin",
)
"""The system program folders a bare program name is searched in, in this order; ``PATH`` is
never consulted (a user-writable ``PATH`` entry such as ``~/bin`` could hold a planted copy)."""


def find_program(name: str, *, dirs: Sequence[str] = SYSTEM_PROGRAM_DIRS) -> str | None:
    """The absolute path ``name`` runs as, or ``None`` when it is not found.

    A ``name`` with a ``/`` is a path, used as given: made absolute (against the current
    directory) and returned when it is an executable file. A bare name is searched only in
    ``dirs`` (default `SYSTEM_PROGRAM_DIRS`), in order, never on ``PATH``; the first executable
    file found is returned unless it, or the folder it lies in (as named or with symlinks
    resolved), is writable by group or others: then `ShellNotFoundError` says so, naming the
    path (anyone in that group, or anyone at all, could have replaced it). Symlinks are kept
    (see `program_inside` for where one points).
    """
    if not isinstance(name, str) or not name or "\0" in name:
        raise ShellValueError("program", name, "a program name or path")
    if "/" in name:
        path = os.path.abspath(name)
        return path if _executable(path) else None
    for entry in dirs:
        if not os.path.isabs(entry):
            continue
        candidate = os.path.join(os.path.normpath(entry), name)
        if _executable(candidate):
            loose = _loosely_writable(candidate)
            if loose is not None:
                raise ShellNotFoundError(
                    name,
                    f"found at {candidate}, but {loose} is writable by group or others, so "
                    "someone else could have replaced it; it was not used (remove that write "
                    "permission, or name a trusted copy by absolute path)",
                )
            return candidate
    return None


def program_inside(program: str, roots: Iterable[Path]) -> Path | None:
    """The first of ``roots`` that ``program`` lies inside (as named, or with every symlink
    resolved), else ``None``; roots are compared with their symlinks resolved too."""
    named = Path(os.path.normpath(os.path.abspath(program)))
    real = Path(os.path.realpath(program))
    for root in roots:
        for base in dict.fromkeys((Path(os.path.normpath(root)), Path(os.path.realpath(root)))):
            for path in (named, real):
                if path == base or base in path.parents:
                    return root
    return None


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _loosely_writable(candidate: str) -> str | None:
    """The first of the file and its folders (as named and resolved) writable by group or
    others, else ``None``."""
    real = os.path.realpath(candidate)
    checks = (candidate, real, os.path.dirname(candidate), os.path.dirname(real))
    for path in dict.fromkeys(checks):
        try:
            mode = os.stat(path).st_mode
        except OSError:
            return path
        if mode & (stat.S_IWGRP | stat.S_IWOTH):
            return path
    return None
