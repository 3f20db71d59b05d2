"""Generation-addressed log files: the TypeScript harness writes ``session.jsonl`` (format v0)
and, since 2026-09-04, ``session.vN.jsonl[.zstd]`` (v2, v3, v4) beside it, keeping the older
file byte-identical and never reading it again. This build reads and writes v0 only, so a
session directory holding a newer generation is refused, never read through its stale v0 file
(which would miss the newer history) nor appended to (which would split the session).

``open`` and ``stat`` look for newer generations every time. ``list()`` looks only where the
v0 log is missing or unusual (its full path): a directory holding only a newer generation is
left out with a warning saying why, while one holding both is listed from its v0 file as that
stood when upgraded; opening it is refused. (Looking in every directory costs a directory read
per session: ``list()`` of 2,000 sessions went from 1.2-1.4x to 2.1x of the raw walk, over its
1.5x bar.)"""

from __future__ import annotations

import os
import re

__all__ = ["GENERATION_FILE", "newer_generation_files", "newer_generation_reason"]

GENERATION_FILE = re.compile(r"session\.v([1-9][0-9]{0,5})\.jsonl(?:\.zstd)?")
"""The name of a log of generation N >= 1 (group 1: N)."""


def newer_generation_files(directory: str | os.PathLike[str]) -> list[str]:
    """The names of the generation >= 1 logs in ``directory``, oldest generation first (none
    when the directory is missing or unreadable: the caller's own read reports that)."""
    try:
        with os.scandir(directory) as entries:
            names = [entry.name for entry in entries if GENERATION_FILE.fullmatch(entry.name)]
    except OSError:
        return []
    return sorted(names, key=_generation_of)


def _generation_of(name: str) -> tuple[int, str]:
    found = GENERATION_FILE.fullmatch(name)
    return (int(found[1]) if found else 0), name


def newer_generation_reason(names: list[str], v0_name: str, *, v0_present: bool) -> str:
    """Why a session directory holding ``names`` is refused (for the seam's unsupported-format
    error), naming its files."""
    newest = names[-1]
    stale = (
        f"; its {v0_name} is the older file that generation superseded, kept unchanged, so "
        "reading it would miss the newer history and appending to it would split the session"
        if v0_present
        else ""
    )
    return (
        f"its directory holds {', '.join(names)}, a newer log generation written by the "
        f"TypeScript harness (this build reads and writes format v0, {v0_name}, only){stale}; "
        f"open it with a harness that reads {newest}"
    )
