"""``JsonlPersistence``: session logs as files under one root, plain or zstd (seed 002)."""

from __future__ import annotations

import asyncio
import builtins
import itertools
import os
from pathlib import Path
from typing import Literal

from dsh_persistence import (
    SessionAlreadyExistsError,
    SessionAlreadyOwnedError,
    SessionHandleClosedError,
    SessionPersistenceCorruptionError,
    SessionPersistenceError,
    SessionPersistenceNotFoundError,
    SessionSnapshot,
    assert_writable_events,
    decode_stored_header,
    materialize_create_header,
)
from dsh_persistence_jsonl._cancel import run_to_completion
from dsh_persistence_jsonl._errors import RootEncodingError
from dsh_persistence_jsonl._fileio import make_dirs_durable, publish_exclusive
from dsh_persistence_jsonl._handle import Access, JsonlSessionHandle
from dsh_persistence_jsonl._lock import LockContendedError, SessionLock
from dsh_persistence_jsonl._pathcodec import project_dir_name, session_segment
from dsh_persistence_jsonl._scan import LogDamage
from dsh_persistence_jsonl._store import (
    LOG_NAMES,
    Compression,
    HeaderDecoder,
    HeaderInfo,
    LoadedLog,
    load_log,
    read_header_info,
    revision_of,
)
from dsh_persistence_jsonl._zstdframes import compress_frame
from dsh_session import SessionFormatError, SessionHeader, decode_header_line, encode_header_line

_HEADER_MEMO = 65536


class JsonlPersistence:
    """Session logs under ``root/<project-key(cwd)>/<encoded-id>/session.jsonl[.zstd]``.

    ``compression="none"`` (default) keeps each log a plain UTF-8 JSONL file (``plain_path`` of
    every snapshot); ``"zstd"`` writes a header frame plus one checksummed frame per append.
    ``pack_chunks`` stores runs of ``assistant/chunk`` events as packed rows. One root holds one
    encoding. A write handle owns its session in this process and, through ``flock``, across
    processes.
    """

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
        self._pending: dict[str, JsonlSessionHandle] = {}
        self._pending_tokens: dict[str, int] = {}
        self._writers: dict[str, JsonlSessionHandle | None] = {}
        self._handles: set[JsonlSessionHandle] = set()
        self._tokens = itertools.count(1)
        self._headers: dict[bytes, SessionHeader] = {}
        self._closed = False
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
                if not project.is_dir():
                    continue
                with os.scandir(project.path) as sessions:
                    for session in sessions:
                        if os.path.exists(os.path.join(session.path, self._log_name)):
                            return
                        other = os.path.join(session.path, self._other_name)
                        if os.path.exists(other):
                            raise self._encoding_error(Path(other))

    # -- locating ---------------------------------------------------------------------------

    def _locate(self, session_id: str) -> Path | None:
        segment = session_segment(session_id)
        found: list[Path] = []
        try:
            projects = os.scandir(self._root)
        except FileNotFoundError:
            return None
        with projects:
            for project in projects:
                if not project.is_dir():
                    continue
                directory = Path(project.path) / segment
                log = directory / self._log_name
                if log.exists():
                    found.append(log)
                elif (directory / self._other_name).exists():
                    raise self._encoding_error(directory / self._other_name)
        if len(found) > 1:
            raise SessionPersistenceCorruptionError(
                session_id,
                "duplicate JSONL session id appears in multiple project directories: "
                + ", ".join(str(p) for p in found),
                artifact=str(found[0]),
            )
        return found[0] if found else None

    def _decoder(self, session_id: str, path: Path) -> HeaderDecoder:
        def decode(line: bytes) -> tuple[SessionHeader, int]:
            header, inherited = decode_stored_header(session_id, line, artifact=str(path))
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
        return SessionPersistenceCorruptionError(
            session_id, damage.reason, artifact=str(path), line=damage.line
        )

    def _load_for_read(self, session_id: str, path: Path) -> LoadedLog:
        decode = self._decoder(session_id, path)
        try:
            return load_log(path, self._compression, decode)
        except LogDamage as damage:
            raise self._damage(session_id, path, damage) from damage

    # -- service ----------------------------------------------------------------------------

    def _check_instance(self) -> None:
        if self._closed:
            raise RuntimeError(f"JsonlPersistence({self._root}) is closed")

    async def create(
        self, header: SessionHeader, *, inherited_event_count: int = 0
    ) -> JsonlSessionHandle:
        """Start a session (materialized lazily by its first append or flush); its write handle.

        Raises ``SessionAlreadyExistsError`` if the id is stored or pending here.
        """
        self._check_instance()
        materialize_create_header(header, inherited_event_count)
        header_line = encode_header_line(header, inherited_event_count)
        session_id = header.id
        session_segment(session_id)
        if session_id in self._pending or session_id in self._writers:
            raise SessionAlreadyExistsError(session_id)
        handle = JsonlSessionHandle(
            self,
            header=header,
            header_line=header_line,
            inherited_event_count=inherited_event_count,
            access="write",
            path=None,
            events=[],
            committed_end=0,
            lines=1,
        )
        handle._created = True
        self._pending[session_id] = handle
        self._pending_tokens[session_id] = next(self._tokens)
        self._writers[session_id] = handle
        try:
            if await asyncio.to_thread(self._locate, session_id) is not None:
                raise SessionAlreadyExistsError(session_id)
        except BaseException:
            self._forget(handle)
            raise
        self._handles.add(handle)
        return handle

    async def open(self, session_id: str, access: Access) -> JsonlSessionHandle:
        """Open a stored (or, in this instance, pending) session for ``"read"`` or ``"write"``."""
        self._check_instance()
        if access not in ("read", "write"):
            raise ValueError(f"access must be 'read' or 'write', got {access!r}")
        if access == "read":
            return await self._open_read(session_id)
        if session_id in self._writers:
            raise SessionAlreadyOwnedError(session_id)
        self._writers[session_id] = None  # the claim; released on any failure below
        try:
            handle = await run_to_completion(
                asyncio.to_thread(self._open_write, session_id),
                on_cancelled=lambda opened: opened.release(),
            )
        except BaseException:
            if self._writers.get(session_id) is None:
                self._writers.pop(session_id, None)
            raise
        self._writers[session_id] = handle
        self._handles.add(handle)
        return handle

    async def _open_read(self, session_id: str) -> JsonlSessionHandle:
        pending = self._pending.get(session_id)
        if pending is not None:
            handle = JsonlSessionHandle(
                self,
                header=pending.header,
                header_line=pending._header_line,
                inherited_event_count=pending.inherited_event_count,
                access="read",
                path=None,
                events=[],
                committed_end=0,
                lines=1,
            )
        else:
            path = await asyncio.to_thread(self._locate, session_id)
            if path is None:
                raise SessionPersistenceNotFoundError(session_id)
            try:
                loaded = await asyncio.to_thread(self._load_for_read, session_id, path)
            except FileNotFoundError:
                raise SessionPersistenceNotFoundError(session_id) from None
            handle = JsonlSessionHandle(
                self,
                header=loaded.header,
                header_line=loaded.header_line,
                inherited_event_count=loaded.inherited_event_count,
                access="read",
                path=path,
                events=loaded.body.events,
                committed_end=loaded.body.committed_end,
                lines=1 + loaded.body.lines,
                ino=loaded.ino,
            )
        self._handles.add(handle)
        return handle

    def _open_write(self, session_id: str) -> JsonlSessionHandle:
        path = self._locate(session_id)
        if path is None:
            raise SessionPersistenceNotFoundError(session_id)
        try:
            lock = SessionLock.acquire(path.parent)
        except LockContendedError:
            raise SessionAlreadyOwnedError(session_id) from None
        fd: int | None = None
        try:
            try:
                loaded = self._load_for_read(session_id, path)
            except FileNotFoundError:
                raise SessionPersistenceNotFoundError(session_id) from None
            assert_writable_events(session_id, loaded.body.events, artifact=str(path))
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
            handle = JsonlSessionHandle(
                self,
                header=loaded.header,
                header_line=loaded.header_line,
                inherited_event_count=loaded.inherited_event_count,
                access="write",
                path=path,
                events=loaded.body.events,
                committed_end=loaded.body.committed_end,
                lines=1 + loaded.body.lines,
                ino=loaded.ino,
            )
        except BaseException:
            if fd is not None:
                os.close(fd)
            lock.release()
            raise
        handle._fd = fd
        handle._lock = lock
        if loaded.size != loaded.body.committed_end:
            handle._truncate_to = loaded.body.committed_end
        return handle

    async def _materialize(self, handle: JsonlSessionHandle, payload: bytes) -> None:
        """Publish header (+ first batch) of a created session; the handle takes ownership."""
        path = self.log_path(handle.header)
        header = handle._header_line + b"\n"
        if self._compression == "zstd":
            content = compress_frame(header) + (compress_frame(payload) if payload else b"")
        else:
            content = header + payload
        lock, fd = await asyncio.to_thread(self._publish, handle.id, path, content)
        handle._path, handle._fd, handle._lock = path, fd, lock
        handle._offset = len(content)
        handle._ino = os.fstat(fd).st_ino
        handle._dirty = False
        if self._pending.get(handle.id) is handle:
            del self._pending[handle.id]
            self._pending_tokens.pop(handle.id, None)

    def _publish(self, session_id: str, path: Path, content: bytes) -> tuple[SessionLock, int]:
        directory = path.parent
        if (directory / self._other_name).exists():
            raise self._encoding_error(directory / self._other_name)
        make_dirs_durable(self._root, directory)
        try:
            lock = SessionLock.acquire(directory)
        except LockContendedError:
            if path.exists():
                raise SessionAlreadyExistsError(session_id) from None
            raise SessionAlreadyOwnedError(session_id) from None
        try:
            existing = self._locate(session_id)
            if existing is not None:
                raise SessionAlreadyExistsError(session_id)
            try:
                publish_exclusive(path, content)
            except FileExistsError:
                raise SessionAlreadyExistsError(session_id) from None
            return lock, os.open(path, os.O_RDWR | os.O_CLOEXEC)
        except BaseException:
            lock.release()
            raise

    async def _path_of_created(self, session_id: str) -> Path | None:
        """For a read handle opened while the session was pending: its path once published."""
        if session_id in self._pending:
            return None
        path = await asyncio.to_thread(self._locate, session_id)
        if path is None:
            raise SessionPersistenceNotFoundError(session_id)
        return path

    def _forget(self, handle: JsonlSessionHandle) -> None:
        self._handles.discard(handle)
        session_id = handle.id
        if self._writers.get(session_id) is handle:
            del self._writers[session_id]
        if self._pending.get(session_id) is handle:
            del self._pending[session_id]  # a created session closed unwritten never existed
            self._pending_tokens.pop(session_id, None)

    # -- metadata ---------------------------------------------------------------------------

    def _pending_snapshot(self, handle: JsonlSessionHandle) -> SessionSnapshot:
        token = self._pending_tokens.get(handle.id, 0)
        return SessionSnapshot(header=handle.header, revision=f"memory:{token}", event_count=0)

    def _snapshot(
        self, header: SessionHeader, path: str | Path, info: HeaderInfo
    ) -> SessionSnapshot:
        st = info.st
        return SessionSnapshot(
            header=header,
            revision=revision_of(st),
            event_count=info.event_count,
            size_bytes=st.st_size,
            updated_at=st.st_mtime_ns // 1_000_000,
            plain_path=str(path) if self._compression == "none" else None,
        )

    def _stat_sync(self, session_id: str) -> SessionSnapshot | None:
        path = self._locate(session_id)
        if path is None:
            return None
        try:
            info = read_header_info(path, self._compression)
        except FileNotFoundError:
            return None
        except LogDamage as damage:
            raise self._damage(session_id, path, damage) from damage
        header, _ = self._decoder(session_id, path)(info.header_line)
        return self._snapshot(header, path, info)

    async def stat(self, session_id: str) -> SessionSnapshot | None:
        """The snapshot of one session from its header and file metadata; ``None`` if absent."""
        pending = self._pending.get(session_id)
        if pending is not None:
            return self._pending_snapshot(pending)
        return await asyncio.to_thread(self._stat_sync, session_id)

    def _scan_root(self) -> builtins.list[SessionSnapshot]:
        snapshots: builtins.list[SessionSnapshot] = []
        try:
            projects = os.scandir(self._root)
        except FileNotFoundError:
            return snapshots
        with projects:
            for project in projects:
                if not project.is_dir():
                    continue
                with os.scandir(project.path) as sessions:
                    for session in sessions:
                        snapshot = self._scan_session(project.name, session.path, session.name)
                        if snapshot is not None:
                            snapshots.append(snapshot)
        return snapshots

    def _header_of(self, line: bytes) -> SessionHeader:
        """``decode_header_line`` memoized on the line's bytes (a header line never changes)."""
        header = self._headers.get(line)
        if header is None:
            header, _ = decode_header_line(line)
            if len(self._headers) >= _HEADER_MEMO:
                self._headers.clear()
            self._headers[line] = header
        return header

    def _scan_session(self, project: str, directory: str, name: str) -> SessionSnapshot | None:
        path = os.path.join(directory, self._log_name)
        try:
            info = read_header_info(path, self._compression)
        except FileNotFoundError:
            other = os.path.join(directory, self._other_name)
            if os.path.exists(other):
                raise self._encoding_error(Path(other)) from None
            return None
        except (LogDamage, NotADirectoryError):
            return None
        try:
            header = self._header_of(info.header_line)
        except SessionFormatError:
            return None  # unreadable here; open() names the problem
        if session_segment(header.id) != name or project_dir_name(header.cwd) != project:
            return None
        return self._snapshot(header, path, info)

    async def list(self) -> builtins.list[SessionSnapshot]:
        """Every visible session (materialized, plus this instance's pending creates)."""
        pending = builtins.list(self._pending.values())
        snapshots = await asyncio.to_thread(self._scan_root)
        seen = {snapshot.header.id for snapshot in snapshots}
        snapshots.extend(self._pending_snapshot(h) for h in pending if h.id not in seen)
        return snapshots

    async def flush(self) -> None:
        """Durability barrier over every write handle active now; failures are aggregated."""
        errors: builtins.list[Exception] = []
        for handle in builtins.list(self._writers.values()):
            if handle is None:
                continue
            try:
                await handle.flush()
            except SessionHandleClosedError:
                continue  # it is closing, and close drains: counts as flushed
            except Exception as error:
                errors.append(error)
        if errors:
            raise ExceptionGroup(f"flush failed for {len(errors)} session(s)", errors)

    async def aclose(self) -> None:
        """Close every handle of this instance (draining writers) and release every lock."""
        self._closed = True
        handles = builtins.list(self._handles)
        results = await asyncio.gather(*(h.close() for h in handles), return_exceptions=True)
        errors = [r for r in results if isinstance(r, Exception)]
        if errors:
            raise ExceptionGroup(f"closing {len(errors)} handle(s) failed", errors)
