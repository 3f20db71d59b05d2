"""``JsonlPersistence``: session logs as files under one root,
``<root>/<project key of the cwd>/<encoded id>/session.jsonl`` (plain) or ``session.jsonl.zstd``."""

from __future__ import annotations

import asyncio
import builtins
import os
from pathlib import Path
from typing import Literal

from dsh_persistence import (
    Access,
    PersistenceBase,
    SessionAlreadyExistsError,
    SessionAlreadyOwnedError,
    SessionFormatUnsupportedError,
    SessionPersistenceNotFoundError,
    SessionSnapshot,
    assert_writable_events,
)
from dsh_persistence.filelock import FileLock, LockContendedError
from dsh_persistence_jsonl._cancel import run_to_completion
from dsh_persistence_jsonl._errors import storage_error
from dsh_persistence_jsonl._fileio import make_dirs_durable, publish_exclusive
from dsh_persistence_jsonl._generations import generation_log_name, generation_of_name
from dsh_persistence_jsonl._handle import JsonlSessionHandle
from dsh_persistence_jsonl._listing import RootCatalog
from dsh_persistence_jsonl._lock import lock_session
from dsh_persistence_jsonl._pathcodec import session_segment
from dsh_persistence_jsonl._rows import StoredRows
from dsh_persistence_jsonl._safefs import OddFileError, open_regular
from dsh_persistence_jsonl._store import LoadedLog
from dsh_persistence_jsonl._zstdframes import compress_frame
from dsh_session import SessionHeader, encode_header_line


class JsonlPersistence(RootCatalog, PersistenceBase[JsonlSessionHandle]):
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
        RootCatalog.__init__(self, root, compression=compression, pack_chunks=pack_chunks)
        PersistenceBase.__init__(self)

    def __repr__(self) -> str:
        return (
            f"JsonlPersistence({str(self._root)!r}, compression={self._compression!r}, "
            f"pack_chunks={self._pack})"
        )

    # -- storage (the books are PersistenceBase's) ------------------------------------------

    async def _claim_new(
        self, header: SessionHeader, inherited_event_count: int
    ) -> JsonlSessionHandle:
        """The handle of a session created lazily: nothing is written (or locked) until its
        first append or flush; an id already stored is ``SessionAlreadyExistsError``."""
        header_line = encode_header_line(header, inherited_event_count)
        session_id = header.id
        session_segment(session_id)
        if await asyncio.to_thread(self._locate, session_id) is not None:
            raise SessionAlreadyExistsError(session_id)
        return JsonlSessionHandle(
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

    async def _open_writer(self, session_id: str) -> JsonlSessionHandle:
        return await run_to_completion(
            asyncio.to_thread(self._open_write, session_id),
            on_cancelled=lambda opened: opened.release(),
        )

    async def _open_reader(self, session_id: str) -> JsonlSessionHandle:
        pending = self._pending_handle(session_id)
        if pending is not None:
            return JsonlSessionHandle(
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
        path = await asyncio.to_thread(self._locate, session_id)
        if path is None:
            raise SessionPersistenceNotFoundError(session_id)
        try:
            loaded = await asyncio.to_thread(self._load_for_read, session_id, path)
        except FileNotFoundError:
            raise SessionPersistenceNotFoundError(session_id) from None
        return self._handle_over(loaded, path, "read")

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
            lock = lock_session(path.parent)
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

    def _publish(self, session_id: str, path: Path, content: bytes) -> tuple[FileLock, int]:
        try:
            return self._publish_at(session_id, path, content)
        except OddFileError as odd:  # a linked directory below the root, a lock that is a link
            raise self._damage(session_id, path, odd) from None
        except OSError as error:  # a full disk, a read-only filesystem, no permission
            raise storage_error(session_id, "create", path, error) from error

    def _publish_at(self, session_id: str, path: Path, content: bytes) -> tuple[FileLock, int]:
        directory = path.parent
        if os.path.lexists(directory / self._other_name):
            raise self._encoding_error(directory / self._other_name)
        make_dirs_durable(self._root, directory)
        try:
            lock = lock_session(directory)
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
        if self._is_pending(session_id):
            return None
        path = await asyncio.to_thread(self._locate, session_id)
        if path is None:
            raise SessionPersistenceNotFoundError(session_id)
        return path

    # -- metadata ---------------------------------------------------------------------------

    async def _stat_stored(self, session_id: str) -> SessionSnapshot | None:
        """From its header and file metadata."""
        return await asyncio.to_thread(self._stat_sync, session_id)

    async def _list_stored(self) -> builtins.list[SessionSnapshot]:
        return await asyncio.to_thread(self._scan_root)
