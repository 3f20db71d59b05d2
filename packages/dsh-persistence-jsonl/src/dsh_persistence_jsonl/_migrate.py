"""``migrate_root``: a zstd root to a plain root, one verified session at a time.

Per session: take its write lock (quiesce: a live writer makes it fail, never race), decompress
and validate the committed log, publish the plain artifact durably under the destination root
(never overwriting), verify it by reopening it through a ``JsonlPersistence`` read handle, then
release the lock. The source is never modified or removed.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from dsh_persistence.filelock import LockContendedError
from dsh_persistence_jsonl._backend import JsonlPersistence
from dsh_persistence_jsonl._fileio import make_dirs_durable, publish_exclusive
from dsh_persistence_jsonl._generations import newer_generation_files, newer_generation_reason
from dsh_persistence_jsonl._lock import lock_session
from dsh_persistence_jsonl._safefs import check_below
from dsh_persistence_jsonl._scan import LogDamage
from dsh_persistence_jsonl._store import LOG_NAMES, LoadedLog, read_header_info
from dsh_session import (
    SessionEvent,
    SessionFormatError,
    decode_header_line,
    encode_header_line,
    encode_stored_event,
)

Outcome = Literal["migrated", "skipped", "failed"]
Stage = Literal["lock", "read", "check", "write", "verify"]
"""Where a session's migration stopped: taking its lock, reading and validating the source,
checking the destination, writing the plain log, verifying it by reopening."""


class MigrationRootError(ValueError):
    """``migrate_root`` refused its roots before touching anything: the source is missing (or
    not a directory), or the destination lies inside the source (or is it)."""

    def __init__(self, source: str, dest: str, reason: str) -> None:
        super().__init__(f"cannot migrate {source} to {dest}: {reason}")
        self.source = source
        self.dest = dest
        self.reason = reason


@dataclass(frozen=True, slots=True)
class MigrationStep:
    """What happened to one session; passed to ``progress`` as each one finishes."""

    session_id: str | None
    """The id from the stored header (``None`` when the header could not be read)."""
    source: str
    """The source artifact's path."""
    outcome: Outcome
    reason: str | None
    done: int
    total: int
    stage: Stage | None = None
    """For a failed session, the stage that failed (``None`` otherwise)."""


@dataclass(slots=True)
class MigrationReport:
    """The result of ``migrate_root``: every source artifact is in exactly one list."""

    migrated: list[MigrationStep] = field(default_factory=list)
    skipped: list[MigrationStep] = field(default_factory=list)
    failed: list[MigrationStep] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing failed."""
        return not self.failed


def _sources(root: Path) -> list[Path]:
    """Every ``session.jsonl.zstd`` path below ``root``, links and odd files included (each is
    then refused as one failed session, by name, instead of being followed or skipped)."""
    found: list[Path] = []
    name = LOG_NAMES["zstd"]
    for project in sorted(os.scandir(root), key=lambda e: e.name):
        if not project.is_dir():
            continue
        for session in sorted(os.scandir(project.path), key=lambda e: e.name):
            candidate = Path(session.path, name)
            if os.path.lexists(candidate):
                found.append(candidate)
    return found


def _checked_roots(
    source_root: str | os.PathLike[str], dest_root: str | os.PathLike[str]
) -> tuple[Path, Path]:
    source = Path(os.path.abspath(os.path.expanduser(os.fspath(source_root))))
    dest = Path(os.path.abspath(os.path.expanduser(os.fspath(dest_root))))
    _check_roots(source, dest)
    return source, dest


def _check_roots(source: Path, dest: Path) -> None:
    if not source.is_dir():
        what = "does not exist" if not os.path.lexists(source) else "is not a directory"
        raise MigrationRootError(str(source), str(dest), f"the source root {what}")
    real_source = source.resolve()
    real_dest = dest.resolve()
    if real_dest == real_source or real_source in real_dest.parents:
        raise MigrationRootError(
            str(source),
            str(dest),
            "the destination lies inside the source root; choose a directory outside it",
        )


def _plain_bytes(loaded: LoadedLog, events: list[SessionEvent]) -> bytes:
    # encode_stored_event: an integer without an exact double is written as the double the
    # harness's JSON.parse reads (rule R4), so such a log migrates instead of stopping the run
    header = encode_header_line(loaded.header, loaded.inherited_event_count)
    return b"".join([header, b"\n", *(encode_stored_event(e) + b"\n" for e in events)])


async def migrate_root(
    source_root: str | os.PathLike[str],
    dest_root: str | os.PathLike[str],
    *,
    progress: Callable[[MigrationStep], None] | None = None,
) -> MigrationReport:
    """Copy every session of the zstd root ``source_root`` into the plain root ``dest_root``.

    Each session is locked (a session open for writing elsewhere fails with that reason),
    decompressed and validated (a damaged log fails, naming file and line; a torn tail is left
    behind), written durably as plain JSONL with packed rows expanded, and verified by reopening
    it. A session already present under ``dest_root`` is skipped, never overwritten. The source
    is kept. ``progress`` is called once per session.

    A session that fails at any stage is reported (its id when its header could be read, its
    source path, the ``stage`` and the error) and the migration goes on with the next one.
    Raises ``MigrationRootError`` before anything is touched when ``source_root`` is missing
    or ``dest_root`` lies inside it.
    """
    source_path, dest_path = await asyncio.to_thread(_checked_roots, source_root, dest_root)
    source = JsonlPersistence(source_path, compression="zstd")
    dest = JsonlPersistence(dest_path, compression="none")
    report = MigrationReport()
    paths = await asyncio.to_thread(_sources, source.root)
    for index, path in enumerate(paths, start=1):
        step = await _migrate_one(source, dest, path, index, len(paths))
        {"migrated": report.migrated, "skipped": report.skipped, "failed": report.failed}[
            step.outcome
        ].append(step)
        if progress is not None:
            progress(step)
    await dest.aclose()
    await source.aclose()
    return report


async def _migrate_one(
    source: JsonlPersistence, dest: JsonlPersistence, path: Path, done: int, total: int
) -> MigrationStep:
    """One session, every failure a failed step naming it (never an exception: the others
    still run)."""
    state: dict[str, Any] = {"session_id": None, "stage": "lock"}
    try:
        outcome, reason = await _migrate_stages(source, dest, path, state)
    except Exception as error:  # any failure of one session is reported, and the run goes on
        outcome, reason = "failed", _failure(state, path, error)
    stage: Stage | None = state["stage"] if outcome == "failed" else None
    return MigrationStep(state["session_id"], str(path), outcome, reason, done, total, stage)


def _failure(state: dict[str, Any], path: Path, error: BaseException) -> str:
    who = f"session {state['session_id']!r}" if state["session_id"] is not None else str(path)
    detail = str(error) or type(error).__name__
    return f"{who}: {state['stage']} failed: {detail}"


async def _migrate_stages(
    source: JsonlPersistence, dest: JsonlPersistence, path: Path, state: dict[str, Any]
) -> tuple[Outcome, str | None]:
    try:
        # a linked project or session directory gets no lock created through it
        await asyncio.to_thread(check_below, source.root, path.parent)
        lock = await asyncio.to_thread(lock_session, path.parent)
    except LockContendedError:
        return "failed", _failure(
            state, path, OSError("the session is open for writing; stop its writer and retry")
        )
    try:
        state["stage"] = "read"
        newer = await asyncio.to_thread(newer_generation_files, path.parent)
        if newer:  # the v0 log is stale: copying it would split the session
            reason = newer_generation_reason(newer, path.name, v0_present=True)
            return "failed", _failure(state, path, ValueError(reason))
        loaded = await asyncio.to_thread(_load_source, source, path)
        session_id = state["session_id"] = loaded.header.id
        state["stage"] = "check"
        target = dest.log_path(loaded.header)
        skipped = f"the destination already holds session {session_id!r}"
        if await dest.stat(session_id) is not None:
            return "skipped", skipped
        events = loaded.body.events
        state["stage"] = "write"
        content = _plain_bytes(loaded, events)
        try:
            await asyncio.to_thread(_publish, dest.root, target, content)
        except FileExistsError:
            return "skipped", skipped
        state["stage"] = "verify"
        async with await dest.open(session_id, "read") as reader:
            again = await reader.read()
            same = (
                reader.header == loaded.header
                and reader.inherited_event_count == loaded.inherited_event_count
                and [encode_stored_event(e) for e in again]
                == [encode_stored_event(e) for e in events]
            )
        if not same:
            return "failed", _failure(state, path, ValueError(f"{target} differs from the source"))
        return "migrated", None
    finally:
        lock.release()


def _load_source(source: JsonlPersistence, path: Path) -> LoadedLog:
    """Load a source log under the id its header names, checked exactly like ``open``; any
    damage (an odd file included) names the file and line."""
    try:
        header, _ = decode_header_line(read_header_info(path, "zstd").header_line)
    except LogDamage as damage:
        where = f" line {damage.line}" if damage.line is not None else ""
        raise ValueError(f"{path}{where}: {damage.reason}") from damage
    except SessionFormatError as error:
        raise ValueError(f"{path} line 1: {error}") from error
    return source._load_for_read(header.id, path)


def _publish(root: Path, target: Path, content: bytes) -> None:
    make_dirs_durable(root, target.parent)
    publish_exclusive(target, content)
