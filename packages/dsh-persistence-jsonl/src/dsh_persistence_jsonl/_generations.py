"""Generation-addressed log files: the TypeScript harness writes ``session.jsonl`` (format v0)
and, since 2026-09-04, ``session.vN.jsonl[.zstd]`` (v2, v3, v4) beside it, keeping the older
file byte-identical and never reading it again. So does this backend: a session is its
directory's **highest** generation. ``open``/``stat`` read only that file (never the stale lower
one beside it); a write open of a session whose highest generation this library does not write
(anything but v0) is refused naming both files, since appending to the v0 file would split the
session; a generation above 4 (forks define incompatible "v5"s) is refused as written by a newer
harness.

``list()`` finds the highest generation exactly by reading the session directory, except on its
fast path (a plain root's ``session.jsonl`` of at most 64 KiB): there it trusts ``session.jsonl``
while the directory has not changed since that file last did (directory mtime <= file mtime) —
publishing a newer generation changes the directory, and neither the harness nor this backend
touches the lower file afterwards. Reading every directory instead cost ``list()`` of 2,000
sessions 2.1x of the raw walk (its bar is 1.5x); the mtime test costs one ``lstat``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "GENERATION_FILE",
    "GenerationLog",
    "generation_log_name",
    "generation_logs",
    "generation_of_name",
    "newer_generation_files",
    "newer_generation_reason",
]

GENERATION_FILE = re.compile(r"session\.v([1-9][0-9]{0,5})\.jsonl(\.zstd)?")
"""The name of a log of generation N >= 1 (group 1: N; group 2: the zstd suffix)."""

_V0_NAMES: dict[str, Literal["none", "zstd"]] = {
    "session.jsonl": "none",
    "session.jsonl.zstd": "zstd",
}


@dataclass(frozen=True, slots=True)
class GenerationLog:
    """One log file of a session directory: its generation, name and encoding."""

    generation: int
    name: str
    compression: Literal["none", "zstd"]


def generation_of_name(name: str) -> GenerationLog | None:
    """``session.jsonl[.zstd]`` is generation 0, ``session.vN.jsonl[.zstd]`` generation N (no
    leading zero, lower-case ``v``); any other name (``session.v0.jsonl``, temp names) is no log."""
    compression = _V0_NAMES.get(name)
    if compression is not None:
        return GenerationLog(0, name, compression)
    found = GENERATION_FILE.fullmatch(name)
    if found is None:
        return None
    return GenerationLog(int(found[1]), name, "zstd" if found[2] else "none")


def generation_log_name(generation: int, compression: Literal["none", "zstd"]) -> str:
    """The file name of a generation's log in an encoding (the inverse of
    :func:`generation_of_name`)."""
    base = "session.jsonl" if generation == 0 else f"session.v{generation}.jsonl"
    return base + (".zstd" if compression == "zstd" else "")


def generation_logs(directory: str | os.PathLike[str]) -> list[GenerationLog]:
    """The logs in ``directory``, lowest generation first (none when the directory is missing
    or unreadable: the caller's own read reports that)."""
    try:
        with os.scandir(directory) as entries:
            logs = [log for entry in entries if (log := generation_of_name(entry.name))]
    except OSError:
        return []
    return sorted(logs, key=lambda log: (log.generation, log.name))


def newer_generation_files(directory: str | os.PathLike[str]) -> list[str]:
    """The names of the generation >= 1 logs in ``directory``, oldest generation first."""
    return [log.name for log in generation_logs(directory) if log.generation >= 1]


def newer_generation_reason(names: list[str], v0_name: str, *, v0_present: bool) -> str:
    """Why an operation that handles format v0 only (``migrate_root``) refuses a session
    directory holding the newer generation logs ``names``, naming its files."""
    newest = names[-1]
    stale = (
        f"; its {v0_name} is the older file that generation superseded, kept unchanged, so "
        "copying it would miss the newer history and split the session"
        if v0_present
        else ""
    )
    return (
        f"its directory holds {', '.join(names)}, a newer log generation written by the "
        f"TypeScript harness (this operation handles format v0, {v0_name}, only){stale}; "
        f"read {newest} through a JsonlPersistence instead"
    )
