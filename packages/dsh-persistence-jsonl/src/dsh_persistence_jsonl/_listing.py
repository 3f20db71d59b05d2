"""``RootCatalog``: ``stat``/``list`` from headers and file metadata, never a log body."""

from __future__ import annotations

import builtins
import logging
import os
from pathlib import Path
from typing import Literal

from dsh_persistence import SessionSnapshot, gc_paused
from dsh_persistence_jsonl._errors import storage_error
from dsh_persistence_jsonl._generations import generation_logs
from dsh_persistence_jsonl._layout import FLAT_SUFFIXES, NEWEST_READ, RootLayout
from dsh_persistence_jsonl._pathcodec import project_dir_name, session_segment
from dsh_persistence_jsonl._safefs import read_small_regular
from dsh_persistence_jsonl._scan import LogDamage
from dsh_persistence_jsonl._store import (
    WHOLE_READ,
    HeaderInfo,
    read_header_info,
    revision_of,
    whole_log_count,
)
from dsh_session import SessionFormatError, SessionHeader, decode_header_line

_HEADER_MEMO = 65536
_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

logger = logging.getLogger("dsh_persistence_jsonl")


def _skipped(path: str, why: str) -> None:
    """``list()`` leaves out an entry it cannot list and says so (a warning naming the path);
    ``stat``/``open`` of that session raise the typed error."""
    logger.warning("list() skipped %s: %s", path, why)


class RootCatalog(RootLayout):
    """Snapshots of stored sessions: the header (first line or frame), ``stat`` of the file and,
    for plain logs, the last physical row (``event_count``)."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        compression: Literal["none", "zstd"] = "none",
        pack_chunks: bool = False,
    ) -> None:
        super().__init__(root, compression=compression, pack_chunks=pack_chunks)
        self._headers: dict[bytes, SessionHeader] = {}  # decoded header lines, by their bytes

    def _snapshot(
        self, header: SessionHeader, path: str | Path, info: HeaderInfo
    ) -> SessionSnapshot:
        st = info.st
        return SessionSnapshot(  # positional (one per listed session): header, revision,
            header,  # event_count, size_bytes, updated_at, plain_path
            revision_of(st),
            info.event_count,
            st.st_size,
            st.st_mtime_ns // 1_000_000,
            str(path) if self._compression == "none" else None,
        )

    def _stat_sync(self, session_id: str) -> SessionSnapshot | None:
        path = self._locate(session_id)
        if path is None:
            return None
        try:
            info = read_header_info(path, self._compression)
        except FileNotFoundError:
            return None
        except LogDamage as damage:  # an odd file (a link, a FIFO) too
            raise self._damage(session_id, path, damage) from damage
        except OSError as error:
            raise storage_error(session_id, "stat", path, error) from error
        header, _ = self._decoder(session_id, path)(info.header_line)
        return self._snapshot(header, path, info)

    def _scan_root(self) -> builtins.list[SessionSnapshot]:
        snapshots: builtins.list[SessionSnapshot] = []
        try:
            projects = os.scandir(self._root)
        except FileNotFoundError:
            return snapshots
        except OSError as error:  # no permission on the root: concerns no one session
            raise storage_error("", "list", self._root, error) from error
        # a bulk load (a listing's hot path): thousands of small objects, none of them cyclic,
        # so the cyclic GC would only re-traverse the caller's heap for nothing
        with projects, gc_paused():
            for project in projects:
                if not project.is_dir(follow_symlinks=False):
                    if project.is_symlink():
                        _skipped(project.path, "a symbolic link, not a directory")
                    continue
                try:
                    self._scan_project(project.name, project.path, snapshots)
                except OSError as error:  # no permission on one project directory
                    _skipped(project.path, error.strerror or str(error))
        return snapshots

    def _scan_project(
        self, name: str, directory: str, snapshots: builtins.list[SessionSnapshot]
    ) -> None:
        with os.scandir(directory) as sessions:
            # logs are opened relative to the project directory: a shorter path walk
            project_fd = os.open(directory, _DIRECTORY_FLAGS)
            quick = self._compression == "none"
            try:
                for session in sessions:
                    if not session.is_dir(follow_symlinks=False):
                        if session.is_symlink():
                            _skipped(session.path, "a symbolic link, not a directory")
                        elif session.name.endswith(FLAT_SUFFIXES):
                            _skipped(session.path, "a log in the obsolete flat-file layout")
                        continue
                    snapshot = self._quick_snapshot(name, session, project_fd) if quick else None
                    if snapshot is None:  # anything but the common case: the full path judges
                        snapshot = self._scan_session(name, session.path, session.name, project_fd)
                    if snapshot is not None:
                        snapshots.append(snapshot)
            finally:
                os.close(project_fd)

    def _header_of(self, line: bytes) -> SessionHeader:
        """``decode_header_line`` memoized on the line's bytes (a header line never changes)."""
        header = self._headers.get(line)
        if header is None:
            header, _ = decode_header_line(line)
            if len(self._headers) >= _HEADER_MEMO:
                self._headers.clear()
            self._headers[line] = header
        return header

    def _quick_snapshot(
        self, project: str, session: os.DirEntry[str], project_fd: int
    ) -> SessionSnapshot | None:
        """``_scan_session``'s common case for a plain root, in one read: a regular log of at most
        ``WHOLE_READ`` bytes whose header line decodes and belongs here. ``None`` for anything
        else, which ``_scan_session`` then reads and judges again (so this only ever gives what
        that gives, and every skip is logged there)."""
        read = read_small_regular(
            f"{session.name}{os.sep}{self._log_name}", WHOLE_READ, dir_fd=project_fd
        )
        if read is None:
            return None
        data, st = read
        # a newer generation published beside session.jsonl changed the directory after the
        # file's last write (the module _generations): then the full path reads the directory
        if session.stat(follow_symlinks=False).st_mtime_ns > st.st_mtime_ns:
            return None
        end = data.find(b"\n")  # within the header cap: the log is far shorter
        if end == -1:
            return None
        try:
            header = self._header_of(data[:end])
        except SessionFormatError:
            return None
        if (
            header.version != 0
            or session_segment(header.id) != session.name
            or project_dir_name(header.cwd) != project
        ):
            return None
        return SessionSnapshot(  # positional, as in _snapshot
            header,
            revision_of(st),
            whole_log_count(data, end + 1),
            st.st_size,
            st.st_mtime_ns // 1_000_000,
            f"{session.path}{os.sep}{self._log_name}",
        )

    def _scan_session(
        self, project: str, directory: str, name: str, project_fd: int
    ) -> SessionSnapshot | None:
        logs = generation_logs(directory)
        if not logs:
            return None
        top = logs[-1]
        if top.generation > NEWEST_READ:
            _skipped(
                f"{directory}{os.sep}{top.name}",
                f"log generation {top.generation}, written by a newer harness or a fork (this "
                f"build reads generations 0-{NEWEST_READ})",
            )
            return None
        log_name = next(
            (
                log.name
                for log in logs
                if log.generation == top.generation and log.compression == self._compression
            ),
            None,
        )
        if log_name is None:  # the highest generation is in the other encoding
            raise self._encoding_error(Path(directory) / top.name)
        path = f"{directory}{os.sep}{log_name}"
        try:
            info = read_header_info(
                f"{name}{os.sep}{log_name}", self._compression, dir_fd=project_fd
            )
        except FileNotFoundError:  # removed since the directory was read
            return None
        except LogDamage as damage:  # a damaged header, a link, a FIFO, a directory
            _skipped(path, damage.reason)
            return None
        except OSError as error:  # no permission, EIO
            _skipped(path, error.strerror or str(error))
            return None
        try:
            header = self._header_of(info.header_line)
        except SessionFormatError as error:
            _skipped(path, str(error))
            return None  # unreadable here; open() names the problem
        if header.version != top.generation:
            _skipped(path, f"its header says format version {header.version}, not {top.generation}")
            return None
        if session_segment(header.id) != name or project_dir_name(header.cwd) != project:
            return None
        # a scandir entry path has no trailing separator
        return self._snapshot(header, path, info)
