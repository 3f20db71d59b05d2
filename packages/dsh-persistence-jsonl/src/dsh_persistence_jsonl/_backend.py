"""``JsonlPersistence``: session logs as files under one root,
``<root>/<project key of the cwd>/<encoded id>/session.jsonl`` (plain) or ``session.jsonl.zstd``."""

from __future__ import annotations

import asyncio
import builtins
import itertools
import os
from pathlib import Path
from typing import Literal

from dsh_persistence import (
    PersistenceClosedError,
    SessionAlreadyExistsError,
    SessionAlreadyOwnedError,
    SessionFormatUnsupportedError,
    SessionPersistenceNotFoundError,
    SessionSnapshot,
    assert_writable_events,
    flush_handles,
    materialize_create_header,
)
from dsh_persistence_jsonl._cancel import run_to_completion
from dsh_persistence_jsonl._errors import storage_error
from dsh_persistence_jsonl._fileio import make_dirs_durable, publish_exclusive
from dsh_persistence_jsonl._generations import generation_log_name, generation_of_name
from dsh_persistence_jsonl._handle import Access, JsonlSessionHandle
from dsh_persistence_jsonl._listing import RootCatalog
from dsh_persistence_jsonl._lock import LockContendedError, SessionLock
from dsh_persistence_jsonl._pathcodec import session_segment
from dsh_persistence_jsonl._rows import StoredRows
from dsh_persistence_jsonl._safefs import OddFileError, open_regular
from dsh_persistence_jsonl._store import LoadedLog
from dsh_persistence_jsonl._zstdframes import compress_frame
from dsh_session import SessionHeader, encode_header_line


class JsonlPersistence(RootCatalog):
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
        super().__init__(root, compression=compression, pack_chunks=pack_chunks)
        self._pending: dict[str, JsonlSessionHandle] = {}
        self._pending_tokens: dict[str, int] = {}
        self._writers: dict[str, JsonlSessionHandle | None] = {}
        self._handles: set[JsonlSessionHandle] = set()
        self._tokens = itertools.count(1)
        self._closed = False

    def _check_instance(self, operation: str, session_id: str = "") -> None:
        if self._closed:
            backend = f"JsonlPersistence({self._root})"
            raise PersistenceClosedError(session_id, backend=backend, operation=operation)

    async def create(
        self, header: SessionHeader, *, inherited_event_count: int = 0
    ) -> JsonlSessionHandle:
        """Start a session (materialized lazily by its first append or flush); its write handle.

        Raises ``SessionAlreadyExistsError`` if the id is stored or pending here.
        """
        self._check_instance("create", header.id)
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
            rows=StoredRows(),
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
        self._check_instance("open", session_id)
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
                rows=StoredRows(),
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
            handle = self._handle_over(loaded, path, "read")
        self._handles.add(handle)
        return handle

    def _handle_over(self, loaded: LoadedLog, path: Path, access: Access) -> JsonlSessionHandle:
        """A handle over a log just loaded from ``path`` (the same for read and write opens)."""
        return JsonlSessionHandle(
            self,
            header=loaded.header,
            header_line=loaded.header_line,
            inherited_event_count=loaded.inherited_event_count,
            access=access,
            path=path,
            events=loaded.body.events,
            rows=loaded.body.rows,
            committed_end=loaded.body.committed_end,
            lines=1 + loaded.body.lines,
            ino=loaded.ino,
        )

    def _open_write(self, session_id: str) -> JsonlSessionHandle:
        path = self._locate(session_id)
        if path is None:
            raise SessionPersistenceNotFoundError(session_id)
        self._refuse_generation_write(session_id, path)
        try:
            return self._open_write_at(session_id, path)
        except OddFileError as odd:  # the lock file: a link, a FIFO
            raise self._damage(session_id, path, odd) from None
        except FileNotFoundError:
            raise SessionPersistenceNotFoundError(session_id) from None
        except OSError as error:  # a read-only filesystem, no permission, EIO
            raise storage_error(session_id, "open for writing", path, error) from error

    def _refuse_generation_write(self, session_id: str, path: Path) -> None:
        """Refuse a write open of a session whose highest log is a generation this library
        does not write (only v0, ``session.jsonl[.zstd]``), naming both files: appending to the
        v0 file beside it would split the session, and this library does not write the newer
        one."""
        named = generation_of_name(path.name)
        if named is None or named.generation == 0:
            return
        v0 = path.parent / generation_log_name(0, self._compression)
        beside = (
            f"appending to {v0}, the older log kept beside it, would split the session"
            if os.path.lexists(v0)
            else f"this library writes only {v0.name} (format v0)"
        )
        raise SessionFormatUnsupportedError(
            session_id,
            f"its log is {path.name}, generation {named.generation}, written by the TypeScript "
            f"harness, which this library reads but does not write; {beside}. Open it for "
            "reading, or resume it with the harness",
            artifact=str(path),
            version=named.generation,
        )

    def _open_write_at(self, session_id: str, path: Path) -> JsonlSessionHandle:
        try:
            lock = SessionLock.acquire(path.parent)
        except LockContendedError:
            raise SessionAlreadyOwnedError(session_id) from None
        fd: int | None = None
        try:
            loaded = self._load_for_read(session_id, path)
            assert_writable_events(session_id, loaded.body.events, artifact=str(path))
            # O_APPEND: a write lands at the true end, so a log truncated behind this handle's
            # back is noticed by flush (its size) instead of getting a hole of NUL bytes
            fd, _st = open_regular(path, os.O_RDWR | os.O_APPEND)
            handle = self._handle_over(loaded, path, "write")
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
        try:
            return self._publish_at(session_id, path, content)
        except OddFileError as odd:  # a linked directory below the root, a lock that is a link
            raise self._damage(session_id, path, odd) from None
        except OSError as error:  # a full disk, a read-only filesystem, no permission
            raise storage_error(session_id, "create", path, error) from error

    def _publish_at(self, session_id: str, path: Path, content: bytes) -> tuple[SessionLock, int]:
        directory = path.parent
        if os.path.lexists(directory / self._other_name):
            raise self._encoding_error(directory / self._other_name)
        make_dirs_durable(self._root, directory)
        try:
            lock = SessionLock.acquire(directory)
        except LockContendedError:
            if os.path.lexists(path):
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
            fd, _st = open_regular(path, os.O_RDWR | os.O_APPEND)
            return lock, fd
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

    async def stat(self, session_id: str) -> SessionSnapshot | None:
        """The snapshot of one session from its header and file metadata; ``None`` if absent."""
        self._check_instance("stat", session_id)
        pending = self._pending.get(session_id)
        if pending is not None:
            return self._pending_snapshot(pending)
        return await asyncio.to_thread(self._stat_sync, session_id)

    async def list(self) -> builtins.list[SessionSnapshot]:
        """Every visible session (materialized, plus this instance's pending creates)."""
        self._check_instance("list")
        pending = builtins.list(self._pending.values())
        snapshots = await asyncio.to_thread(self._scan_root)
        seen = {snapshot.header.id for snapshot in snapshots}
        snapshots.extend(self._pending_snapshot(h) for h in pending if h.id not in seen)
        return snapshots

    async def flush(self) -> None:
        """Durability barrier over every write handle active now; failures are aggregated."""
        self._check_instance("flush")
        await flush_handles([h for h in self._writers.values() if h is not None])

    async def aclose(self) -> None:
        """Close every handle of this instance (draining writers) and release every lock."""
        self._closed = True
        handles = builtins.list(self._handles)
        results = await asyncio.gather(*(h.close() for h in handles), return_exceptions=True)
        errors = [r for r in results if isinstance(r, Exception)]
        if errors:
            raise ExceptionGroup(f"closing {len(errors)} handle(s) failed", errors)
