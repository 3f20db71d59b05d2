"""``migrate_root``: a zstd root to a plain root, one verified session at a time (seed 002 §9).

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
from typing import Literal

from dsh_persistence import SessionPersistenceError
from dsh_persistence_jsonl._backend import JsonlPersistence
from dsh_persistence_jsonl._fileio import make_dirs_durable, publish_exclusive
from dsh_persistence_jsonl._lock import LockContendedError, SessionLock
from dsh_persistence_jsonl._scan import LogDamage
from dsh_persistence_jsonl._store import LOG_NAMES, LoadedLog, read_header_info
from dsh_session import SessionEvent, decode_header_line, encode_event, encode_header_line

Outcome = Literal["migrated", "skipped", "failed"]


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
    found: list[Path] = []
    if not root.is_dir():
        return found
    name = LOG_NAMES["zstd"]
    for project in sorted(os.scandir(root), key=lambda e: e.name):
        if not project.is_dir():
            continue
        for session in sorted(os.scandir(project.path), key=lambda e: e.name):
            candidate = Path(session.path, name)
            if candidate.is_file():
                found.append(candidate)
    return found


def _plain_bytes(loaded: LoadedLog, events: list[SessionEvent]) -> bytes:
    header = encode_header_line(loaded.header, loaded.inherited_event_count)
    return b"".join([header, b"\n", *(encode_event(e) + b"\n" for e in events)])


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
    """
    source = JsonlPersistence(source_root, compression="zstd")
    dest = JsonlPersistence(dest_root, compression="none")
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
    session_id: str | None = None

    def step(outcome: Outcome, reason: str | None = None) -> MigrationStep:
        return MigrationStep(session_id, str(path), outcome, reason, done, total)

    try:
        lock = await asyncio.to_thread(SessionLock.acquire, path.parent)
    except LockContendedError:
        return step("failed", "the session is open for writing; stop its writer and retry")
    except OSError as error:
        return step("failed", f"cannot lock the session: {error}")
    try:
        try:
            loaded = await asyncio.to_thread(_load_source, source, path)
        except SessionPersistenceError as error:
            return step("failed", str(error))
        except LogDamage as damage:
            return step("failed", f"{path}: {damage}")
        except (OSError, ValueError) as error:
            return step("failed", f"cannot read the source log {path}: {error}")
        session_id = loaded.header.id
        target = dest.log_path(loaded.header)
        if await dest.stat(session_id) is not None:
            return step("skipped", f"the destination already holds session {session_id!r}")
        events = loaded.body.events
        content = _plain_bytes(loaded, events)
        try:
            await asyncio.to_thread(_publish, dest.root, target, content)
        except FileExistsError:
            return step("skipped", f"the destination already holds session {session_id!r}")
        except OSError as error:
            return step("failed", f"cannot write {target}: {error}")
        try:
            async with await dest.open(session_id, "read") as reader:
                again = await reader.read()
                same = (
                    reader.header == loaded.header
                    and reader.inherited_event_count == loaded.inherited_event_count
                    and [encode_event(e) for e in again] == [encode_event(e) for e in events]
                )
        except SessionPersistenceError as error:
            return step("failed", f"verification of {target} failed: {error}")
        if not same:
            return step("failed", f"verification of {target} failed: the logs differ")
        return step("migrated")
    finally:
        lock.release()


def _load_source(source: JsonlPersistence, path: Path) -> LoadedLog:
    """Load a source log under the id its header names, checked exactly like ``open``."""
    header, _ = decode_header_line(read_header_info(path, "zstd").header_line)
    return source._load_for_read(header.id, path)


def _publish(root: Path, target: Path, content: bytes) -> None:
    make_dirs_durable(root, target.parent)
    publish_exclusive(target, content)
