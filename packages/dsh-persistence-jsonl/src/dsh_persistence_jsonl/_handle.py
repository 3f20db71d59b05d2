"""``JsonlSessionHandle``: one session opened for read or write on a JSONL root."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from dsh_persistence import (
    Access,
    AppendBatch,
    SessionHandleBase,
    SessionHandleClosedError,
    SessionOwnershipLostError,
    SessionPersistenceError,
    SessionPersistenceNotFoundError,
    assert_contiguous,
    check_read_range,
    materialize_append_batch,
)
from dsh_persistence.filelock import FileLock
from dsh_persistence_jsonl._cancel import run_to_completion
from dsh_persistence_jsonl._errors import storage_error
from dsh_persistence_jsonl._fileio import AppendRollbackError, append_with_rollback
from dsh_persistence_jsonl._rows import StoredRows
from dsh_persistence_jsonl._scan import LogDamage
from dsh_persistence_jsonl._store import Compression, LoadedLog, read_suffix
from dsh_persistence_jsonl._zstdframes import compress_frame
from dsh_session import SessionEvent, SessionHeader, encode_rows

Kept = tuple[Sequence[SessionEvent], Sequence[bytes]] | None
"""What an append keeps: its detached events with the rows written for them, or ``None`` (only
the batch's lines, one per event)."""


class HandleOwner(Protocol):
    """What a handle needs from the backend that made it (``JsonlPersistence``), so this module
    does not import the backend's."""

    @property
    def compression(self) -> Compression:
        """The root's encoding."""
        ...

    @property
    def pack_chunks(self) -> bool:
        """Whether appended chunk runs are packed."""
        ...

    async def _materialize(self, handle: JsonlSessionHandle, payload: bytes) -> None: ...

    async def _path_of_created(self, session_id: str) -> Path | None: ...

    def _load_for_read(self, session_id: str, path: Path) -> LoadedLog: ...

    def _damage(
        self, session_id: str, path: Path, damage: LogDamage
    ) -> SessionPersistenceError: ...

    def _check_generation(
        self,
        session_id: str,
        path: Path,
        header: SessionHeader,
        events: list[SessionEvent],
        first_seq: int,
    ) -> None: ...


INLINE_FSYNC_LIMIT = 0.002
"""Seconds: while this handle's last ``fsync`` took less, the next one runs on the event loop
thread (blocking it about as long as a thread hop would cost); a slower disk sends every
following ``fsync`` to a worker thread until one is fast again."""


class JsonlSessionHandle(SessionHandleBase):
    """A per-session handle of :class:`JsonlPersistence` (an async context manager).

    A write handle is the single owner (in-process registry plus an ``flock`` held on the
    session's lock file); it serves reads from the log it validated at open plus its own appends.
    A read handle never owns anything and re-reads only the bytes appended since its last read.
    """

    def __init__(
        self,
        backend: HandleOwner,
        *,
        header: SessionHeader,
        header_line: bytes,
        inherited_event_count: int,
        access: Access,
        path: Path | None,
        events: list[SessionEvent],
        rows: StoredRows,
        committed_end: int,
        lines: int,
        ino: int = 0,
    ) -> None:
        super().__init__(header=header, inherited_event_count=inherited_event_count, access=access)
        self._backend = backend
        self._header_line = header_line
        self._path = path
        # Every read hands out events the caller owns: a cached event goes out at most once (its
        # slot then holds None and its flag in _gone is 1), and an event without a cached object
        # (handed out before, or appended as a line and never decoded) is decoded from its row.
        self._events: list[SessionEvent | None] = list(events)
        self._gone = bytearray(len(events))
        self._rows = rows
        self._offset = committed_end
        self._lines = lines
        self._ino = ino
        self._mutex = asyncio.Lock()
        self._busy = 0  # operations holding or waiting for the mutex
        # write side
        self._fd: int | None = None
        self._lock: FileLock | None = None
        self._truncate_to: int | None = None
        self._dirty = False
        self._slow_disk = False
        self._released = False
        self._lost: str | None = None  # why the log was taken away from this handle

    # -- identity ---------------------------------------------------------------------------

    @property
    def materialized(self) -> bool:
        """True once the session's artifact exists (write handles of created sessions: after
        the first append or flush)."""
        return self._path is not None and (self._access == "read" or self._fd is not None)

    # -- operations -------------------------------------------------------------------------

    def _check_released(self, operation: str) -> None:
        # an operation called before close() still runs (close drains it); one that reaches
        # storage after close() released everything cannot
        if self._released:
            raise SessionHandleClosedError(self.id, operation=operation)

    async def read(self, offset: int = 0, length: int | None = None) -> Sequence[SessionEvent]:
        """The events with ``seq >= offset``, at most ``length`` of them (``[]`` past the end)."""
        self._check_open("read")
        check_read_range(offset, length)
        if self._access == "read":
            async with self._mutex:  # one refresh at a time: each applies the suffix it read
                await self._refresh()
        cache, gone = self._events, self._gone
        stop = len(cache) if length is None else min(offset + length, len(cache))
        if offset >= stop:
            return []
        out = cache[offset:stop]
        start = gone.find(1, offset, stop)
        while start != -1:  # runs of events without a cached object: decode them again
            end = gone.find(0, start, stop)
            if end == -1:
                end = stop
            out[start - offset : end - offset] = self._rows.decode(start, end)
            start = gone.find(1, end, stop)
        cache[offset:stop] = [None] * (stop - offset)
        gone[offset:stop] = b"\x01" * (stop - offset)
        return out  # type: ignore[return-value]  # every None was replaced by a decoded event

    @property
    def _next_seq(self) -> int:
        return self._rows.count

    async def append(self, events: Sequence[SessionEvent]) -> None:
        """Append a contiguous batch starting at the stored next seq; visible on return."""
        self._check_writable("append")
        batch = materialize_append_batch(self.id, events)  # TypeError: not events / not JSON
        if not batch.lines:
            return
        if self._busy == 0 and self._fd is not None:
            # Nothing queued or in flight and the log is open: the whole append runs now without
            # an await, so nothing can interleave and no cancellation can cut it (no task).
            self._check_released("append")
            payload, kept = self._prepare(batch, events)
            self._write(payload)
            self._commit(batch, kept)
            return
        await run_to_completion(self._append(batch))

    async def _append(self, batch: AppendBatch) -> None:
        self._busy += 1
        try:
            async with self._mutex:
                self._check_released("append")
                # the batch's detached events: the caller may have changed its own meanwhile
                payload, kept = self._prepare(batch, None)
                if self._fd is None:
                    await self._backend._materialize(self, payload)
                else:
                    self._write(payload)
                self._commit(batch, kept)
        finally:
            self._busy -= 1

    def _prepare(
        self, batch: AppendBatch, events: Sequence[SessionEvent] | None
    ) -> tuple[bytes, Kept]:
        """Check contiguity; return the bytes to write and what to keep (``Kept``: the detached
        events with their rows, or ``None``: the plain lines, decoded when a read asks for
        events). ``events`` are the caller's, still carrying the seqs just encoded (no await
        since), or ``None``: use the batch's detached events."""
        pack = self._backend.pack_chunks
        if events is None or pack:
            detached = batch.events
            assert_contiguous(self.id, detached, self._next_seq)
            rows = encode_rows(detached, pack_chunks=True) if pack else batch.lines
            return b"\n".join([*rows, b""]), (detached, rows)
        assert_contiguous(self.id, events, self._next_seq)
        return b"\n".join([*batch.lines, b""]), None

    def _commit(self, batch: AppendBatch, kept: Kept) -> None:
        """Count a written batch as appended (visible to reads)."""
        if kept is None:  # only lines: decoded from the rows when a read asks for them
            count = len(batch.lines)
            self._rows.add(batch.lines, count)
            self._events.extend([None] * count)
            self._gone.extend(b"\x01" * count)
        else:
            detached, rows = kept
            self._rows.add(rows, len(detached))
            self._events.extend(detached)
            self._gone.extend(bytes(len(detached)))

    def _write(self, payload: bytes) -> None:
        # One batch into the page cache runs inline: cheaper than a thread hop (bench_jsonl);
        # the fsync runs inline too while the disk is fast, else in a worker thread (``_sync``).
        fd = self._fd
        assert fd is not None
        self._check_kept()
        data = compress_frame(payload) if self._backend.compression == "zstd" else payload
        try:
            if self._truncate_to is not None:
                os.ftruncate(fd, self._truncate_to)
                os.fsync(fd)
                self._offset = self._truncate_to
                self._truncate_to = None
            self._offset = append_with_rollback(fd, self._offset, data, sync=False)
        except OSError as error:  # a full disk: nothing of the batch stays, a retry may work
            if isinstance(error, AppendRollbackError):
                self._truncate_to = self._offset  # cut the partial bytes before the next write
            raise storage_error(self.id, "append", self._path, error) from error
        self._dirty = True

    def _check_kept(self) -> None:
        """Raise ``SessionOwnershipLostError`` if an earlier check found the log taken away."""
        if self._lost is not None:
            raise SessionOwnershipLostError(self.id, reason=self._lost)

    def _check_log(self) -> None:
        """At each flush (one ``fstat`` and one ``lstat``): the log this handle writes is still
        linked, still at its path and exactly as long as this handle made it. Someone deleting,
        replacing or truncating it behind the lock's back loses the session for this handle:
        ``SessionOwnershipLostError`` naming the path, now and on every later write."""
        self._check_kept()
        fd, path = self._fd, self._path
        assert fd is not None
        assert path is not None
        try:
            held = os.fstat(fd)
            try:
                named = os.lstat(path)
            except FileNotFoundError:
                named = None
        except OSError as error:
            raise storage_error(self.id, "flush", path, error) from error
        if held.st_nlink == 0 or named is None:
            lost = f"{path} was deleted while this handle held it"
        elif (named.st_dev, named.st_ino) != (held.st_dev, held.st_ino):
            lost = f"{path} was replaced by another file while this handle held it"
        elif held.st_size != self._offset and self._truncate_to is None:
            lost = (
                f"{path} is {held.st_size} bytes, not the {self._offset} this handle wrote "
                "(truncated or written by someone else)"
            )
        else:
            return
        self._lost = lost
        raise SessionOwnershipLostError(self.id, reason=lost)

    async def flush(self) -> None:
        """Make every appended event durable; materializes an empty created session."""
        self._check_writable("flush")
        if self._busy == 0 and self._fd is not None and not self._slow_disk:
            # the fast-disk case: fsync on the loop thread, no task, no thread hop
            self._check_released("flush")
            self._check_log()
            if self._dirty:
                self._fsync()
            return
        await run_to_completion(self._flush())

    async def _flush(self) -> None:
        self._busy += 1
        try:
            async with self._mutex:
                self._check_released("flush")
                await self._sync()
        finally:
            self._busy -= 1

    async def _sync(self) -> None:
        if self._fd is None:
            await self._backend._materialize(self, b"")
            return
        self._check_log()
        if self._dirty:
            if self._slow_disk:
                await asyncio.to_thread(self._fsync)
            else:
                self._fsync()

    def _fsync(self) -> None:
        fd = self._fd
        assert fd is not None
        start = time.perf_counter()
        try:
            os.fsync(fd)
        except OSError as error:  # EIO, ENOSPC (NFS): the events since the last flush are unsure
            raise storage_error(self.id, "flush", self._path, error) from error
        self._slow_disk = time.perf_counter() - start >= INLINE_FSYNC_LIMIT
        self._dirty = False

    async def _close(self) -> None:
        """Drain, make durable (``close``: idempotent, shielded), release ownership."""
        self._busy += 1
        try:
            async with self._mutex:
                if self._access == "write" and self._fd is not None and self._dirty:
                    await asyncio.to_thread(self._fsync)
        finally:
            self._busy -= 1
            self.release()

    def release(self) -> None:
        """Drop every resource without syncing (close's last step; also a failed open's)."""
        self._closed = True
        self._released = True
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    # -- read side --------------------------------------------------------------------------

    async def _refresh(self) -> None:
        if self._path is None:
            path = await self._backend._path_of_created(self.id)
            if path is None:
                return  # still pending in this instance: nothing written yet
            self._path = path
            self._offset, self._lines, self._ino = -1, 1, 0
        path = self._path
        try:
            if self._offset < 0:
                found = await asyncio.to_thread(self._backend._load_for_read, self.id, path)
                self._header_line = found.header_line
                self._events.extend(found.body.events)
                self._gone.extend(bytes(len(found.body.events)))
                self._rows.extend(found.body.rows)
                self._offset = found.body.committed_end
                self._lines = 1 + found.body.lines
                self._ino = found.ino
                return
            got = await asyncio.to_thread(
                read_suffix,
                path,
                self._backend.compression,
                offset=self._offset,
                expected_seq=self._rows.count,
                first_line=self._lines + 1,
                ino=self._ino,
            )
        except FileNotFoundError:
            raise SessionPersistenceNotFoundError(self.id) from None
        except LogDamage as damage:
            raise self._backend._damage(self.id, path, damage) from damage
        except OSError as error:
            raise storage_error(self.id, "read", path, error) from error
        if got is None:
            return
        scan, _size = got
        if self._header.version >= 2:  # a later generation's rows, appended by the harness
            self._backend._check_generation(
                self.id, path, self._header, scan.events, self._rows.count
            )
        self._events.extend(scan.events)
        self._gone.extend(bytes(len(scan.events)))
        self._rows.extend(scan.rows)
        self._offset = scan.committed_end
        self._lines += scan.lines
