"""`find_program` and `program_inside`: finding a trusted program once, never in a writable root.

An executor that runs commands starts programs of its own (the outer ``bash``, ``bwrap``).
Looked up on ``PATH`` at every spawn, a program a command planted in a ``PATH`` folder (an
activated ``.venv/bin``, ``node_modules/.bin``) would run in its place, unconfined. So such a
program is looked up once, ignoring every relative ``PATH`` entry (an empty one means the
current directory), and kept as an absolute path; a confining executor then refuses one that
lies inside a folder its commands may write (`program_inside`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from dsh_shell._errors import ShellValueError


def find_program(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The absolute path ``name`` runs as, or ``None`` when it is not found.

    A ``name`` with a ``/`` is a path: made absolute (against the current directory) and
    returned when it is an executable file. A bare name is searched in the absolute entries of
    ``PATH`` (of ``environ``, default `os.environ`; ``os.defpath`` when unset), in order;
    relative and empty entries are never searched (they name whatever the current directory
    holds). Symlinks are kept (see `program_inside` for where one points).
    """
    if not isinstance(name, str) or not name or "\0" in name:
        raise ShellValueError("program", name, "a program name or path")
    if "/" in name:
        path = os.path.abspath(name)
        return path if _executable(path) else None
    search = (os.environ if environ is None else environ).get("PATH", os.defpath)
    for entry in search.split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        candidate = os.path.join(os.path.normpath(entry), name)
        if _executable(candidate):
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
