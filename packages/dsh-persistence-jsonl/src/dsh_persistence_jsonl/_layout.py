"""``RootLayout``: where logs live under a JSONL root, and how one is found, decoded and loaded."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from dsh_persistence import (
    SessionFormatUnsupportedError,
    SessionPersistenceCorruptionError,
    SessionPersistenceError,
    decode_stored_header,
)
from dsh_persistence_jsonl._errors import RootEncodingError, storage_error
from dsh_persistence_jsonl._generations import generation_logs, generation_of_name
from dsh_persistence_jsonl._pathcodec import encode_segment, project_dir_name, session_segment
from dsh_persistence_jsonl._safefs import OddFileError, check_below
from dsh_persistence_jsonl._scan import LogDamage
from dsh_persistence_jsonl._store import LOG_NAMES, Compression, HeaderDecoder, LoadedLog, load_log
from dsh_session import (
    READ_GENERATIONS,
    EventDecodeError,
    SessionEvent,
    SessionHeader,
    check_generation_event,
    generation_cut,
)

NEWEST_READ = max(READ_GENERATIONS)
"""The newest log generation this backend reads (4)."""

FLAT_SUFFIXES = (".jsonl", ".jsonl.zstd")
"""File name endings of a log in the harness's obsolete flat layout (``<project>/<id>.jsonl``)."""


class RootLayout:
    """One root, one encoding: paths, the encoding check, lookup by id, and checked loading."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        compression: Literal["none", "zstd"] = "none",
        pack_chunks: bool = False,
    ) -> None:
        if compression not in LOG_NAMES:
            raise ValueError(f"compression must be 'none' or 'zstd', got {compression!r}")
        if not isinstance(pack_chunks, bool):
            raise TypeError(f"pack_chunks must be a bool, got {pack_chunks!r}")
        self._root = Path(os.path.abspath(os.path.expanduser(os.fspath(root))))
        if self._root.exists() and not self._root.is_dir():
            raise NotADirectoryError(f"JSONL root {self._root} exists and is not a directory")
        self._compression: Compression = compression
        self._pack = pack_chunks
        self._log_name = LOG_NAMES[compression]
        self._other_name = LOG_NAMES["zstd" if compression == "none" else "none"]
        self._probe_root_encoding()

    @property
    def root(self) -> Path:
        """The absolute root directory (resolved once, at construction)."""
        return self._root

    @property
    def compression(self) -> Compression:
        """``"none"`` or ``"zstd"``."""
        return self._compression

    @property
    def pack_chunks(self) -> bool:
        """Whether appended runs of chunk events are stored as packed rows."""
        return self._pack

    def log_path(self, header: SessionHeader) -> Path:
        """Where the log of a session with ``header`` lives (or will live) under this root."""
        directory = self._root / project_dir_name(header.cwd) / session_segment(header.id)
        return directory / self._log_name

    # -- encoding of the root ---------------------------------------------------------------

    def _encoding_error(self, path: Path) -> RootEncodingError:
        return RootEncodingError(str(self._root), self._compression, str(path))

    def _probe_root_encoding(self) -> None:
        """Refuse a root whose first stored artifact has the other encoding (cheap probe)."""
        try:
            projects = os.scandir(self._root)
        except (FileNotFoundError, NotADirectoryError):
            return
        with projects:
            for project in projects:
                if not project.is_dir(follow_symlinks=False):
                    continue
                with os.scandir(project.path) as sessions:
                    for session in sessions:
                        if os.path.lexists(os.path.join(session.path, self._log_name)):
                            return
                        other = os.path.join(session.path, self._other_name)
                        if os.path.lexists(other):
                            raise self._encoding_error(Path(other))

    # -- locating ---------------------------------------------------------------------------

    def _locate(self, session_id: str) -> Path | None:
        """The log of ``session_id``, or ``None``. A log found through a linked project or
        session directory, or one that is not a regular file, is found too and refused when
        opened: ``SessionPersistenceCorruptionError`` naming the path."""
        segment = session_segment(session_id)
        found: list[Path] = []
        searched: list[str] = []
        try:
            projects = os.scandir(self._root)
        except FileNotFoundError:
            return None
        with projects:
            for project in projects:
                if not project.is_dir():  # a link to a directory too: found, then refused
                    continue
                searched.append(project.path)
                found_log = self._session_log(session_id, Path(project.path) / segment)
                if found_log is not None:
                    found.append(found_log)
        if len(found) > 1:
            raise SessionPersistenceCorruptionError(
                session_id,
                "duplicate JSONL session id appears in multiple project directories: "
                + ", ".join(str(p) for p in found),
                artifact=str(found[0]),
            )
        if not found:
            self._refuse_flat_layout(session_id, searched)
            return None
        try:
            check_below(self._root, found[0].parent)
        except OddFileError as odd:
            raise self._damage(session_id, found[0], odd) from None
        return found[0]

    def _session_log(self, session_id: str, directory: Path) -> Path | None:
        """The log of the highest generation in a session directory (``None``: no log). A
        generation above the newest this build reads is refused as written by a newer harness;
        a highest generation stored only in the other encoding is the root's encoding error."""
        logs = generation_logs(directory)
        if not logs:
            return None
        top = logs[-1]
        if top.generation > NEWEST_READ:
            raise SessionFormatUnsupportedError(
                session_id,
                f"its directory holds {top.name}, log generation {top.generation}, written by a "
                f"newer harness or a fork (this build reads generations 0-{NEWEST_READ}); "
                "upgrade dsh to open it",
                artifact=str(directory / top.name),
                version=top.generation,
            )
        for log in logs:
            if log.generation == top.generation and log.compression == self._compression:
                return directory / log.name
        raise self._encoding_error(directory / top.name)

    def _refuse_flat_layout(self, session_id: str, projects: list[str]) -> None:
        """Refuse (never ignore) a log of ``session_id`` in the harness's obsolete flat layout,
        ``<project>/<encoded id>.jsonl`` or ``.jsonl.zstd``: only looked for when the id has no
        log in the current layout, so a found session pays nothing for it."""
        encoded = encode_segment(session_id)  # the flat layout never cut long ids
        for project in projects:
            for suffix in FLAT_SUFFIXES:
                flat = os.path.join(project, encoded + suffix)
                if os.path.lexists(flat):  # False for a name too long to exist, too
                    raise SessionFormatUnsupportedError(
                        session_id,
                        "its log is in the obsolete flat-file layout (<project>/<id>.jsonl), "
                        "which this build does not read (it reads "
                        "<project>/<id>/session.jsonl); move it to that layout to open it",
                        artifact=flat,
                    )

    def _decoder(self, session_id: str, path: Path) -> HeaderDecoder:
        named = generation_of_name(path.name)
        generation = 0 if named is None else named.generation

        def decode(line: bytes) -> tuple[SessionHeader, int]:
            header, inherited = decode_stored_header(session_id, line, artifact=str(path))
            if header.version != generation:
                raise SessionPersistenceCorruptionError(
                    session_id,
                    f"its header says format version {header.version} but the file name "
                    f"{path.name} is generation {generation}'s",
                    artifact=str(path),
                    line=1,
                )
            expected = project_dir_name(header.cwd)
            if path.parent.parent.name != expected:
                raise SessionPersistenceCorruptionError(
                    session_id,
                    f"stored under project directory {path.parent.parent.name!r} but its cwd "
                    f"maps to {expected!r}",
                    artifact=str(path),
                    line=1,
                )
            return header, inherited

        return decode

    def _damage(self, session_id: str, path: Path, damage: LogDamage) -> SessionPersistenceError:
        artifact = damage.path if isinstance(damage, OddFileError) else str(path)
        return SessionPersistenceCorruptionError(
            session_id, damage.reason, artifact=artifact, line=damage.line
        )

    def _load_for_read(self, session_id: str, path: Path) -> LoadedLog:
        """Load and check a whole log. Raises ``FileNotFoundError`` when it is gone, the seam's
        corruption error for damage or an odd file, ``SessionStorageError`` for any other
        ``OSError`` (no permission, EIO)."""
        decode = self._decoder(session_id, path)
        try:
            loaded = load_log(path, self._compression, decode)
            if loaded.header.version >= 2:
                self._check_generation(session_id, path, loaded.header, loaded.body.events, 0)
                loaded.inherited_event_count = self._generation_cut(
                    session_id, path, loaded.header, loaded.body.events
                )
            return loaded
        except LogDamage as damage:
            raise self._damage(session_id, path, damage) from damage
        except FileNotFoundError:
            raise
        except OSError as error:
            raise storage_error(session_id, "read", path, error) from error

    def _check_generation(
        self,
        session_id: str,
        path: Path,
        header: SessionHeader,
        events: list[SessionEvent],
        first_seq: int,
    ) -> None:
        """Check the events ``first_seq..`` of a v2+ log (one event per row: event ``seq`` is
        on line ``seq + 2``) against its generation's rules; the seam's corruption error names
        the file and line. ``events`` starts at ``first_seq`` (earlier ones are not cited)."""
        for index, event in enumerate(events):
            try:
                check_generation_event(header.version, event, events if first_seq == 0 else None)
            except EventDecodeError as error:
                raise SessionPersistenceCorruptionError(
                    session_id,
                    f"not a valid generation {header.version} event: {error.reason}",
                    artifact=str(path),
                    line=first_seq + index + 2,
                ) from error

    def _generation_cut(
        self, session_id: str, path: Path, header: SessionHeader, events: list[SessionEvent]
    ) -> int:
        """The inherited cut of a v2+ log (its ``session/end-seed {inherited: true}``)."""
        try:
            return generation_cut(events, seeded=header.is_seeded)
        except EventDecodeError as error:
            raise SessionPersistenceCorruptionError(
                session_id, f"bad inherited cut: {error.reason}", artifact=str(path)
            ) from error

    # -- service ----------------------------------------------------------------------------
