"""``export_session``: the logical log as plain JSONL bytes, the same from every backend."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from dsh_persistence._errors import SessionPersistenceCorruptionError
from dsh_persistence._protocols import SessionPersistence
from dsh_session import SessionEvent, encode_header_line, encode_stored_event

_PAGE = 4096  # events per read: bounded memory for any log length


async def export_session(
    persistence: SessionPersistence,
    session_id: str,
    out: BinaryIO | str | os.PathLike[str],
) -> int:
    """Write session ``session_id`` as plain JSONL and return its number of events.

    The output is the header line (``"type":"session"``, with ``seedLength`` when seeded) and
    then one canonical line per *logical* event (packed chunk rows come out expanded), each
    ending in ``\\n`` (``encode_stored_event``: a stored integer with no exact double is written
    as the double the harness's ``JSON.parse`` reads). Everything is read through a read
    handle, so every backend exports the same bytes for the same log and a writer may keep
    writing meanwhile. ``out`` is a binary file object (written, not closed) or a path: the
    export is written to a temporary file beside it, synced, and renamed over it only once it is
    whole, so a failed export (a missing or corrupt session) leaves an existing file as it was
    and the log is read in full before anything is replaced. Never point the path into the
    store itself (the ``dsh`` command refuses such a destination). A read that does not
    return the next seqs in order (at most the page asked for) raises
    ``SessionPersistenceCorruptionError`` naming the session instead of looping.
    """
    if isinstance(out, (str, os.PathLike)):
        return await _export_to_path(persistence, session_id, Path(out))
    return await _export_to(persistence, session_id, out)


async def _export_to_path(persistence: SessionPersistence, session_id: str, out: Path) -> int:
    # Writes are plain blocking file writes either way (a caller's file object is synchronous
    # too); an export is a bulk job, not a latency-sensitive path.
    fd, temporary = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(fd, "wb") as file:
            count = await _export_to(persistence, session_id, file)
            file.flush()
            os.fsync(file.fileno())
        with contextlib.suppress(FileNotFoundError):
            os.chmod(temporary, stat.S_IMODE(os.stat(out).st_mode))  # keep the file's mode
        os.replace(temporary, out)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    return count


async def _export_to(persistence: SessionPersistence, session_id: str, out: BinaryIO) -> int:
    async with await persistence.open(session_id, "read") as handle:
        out.write(encode_header_line(handle.header, handle.inherited_event_count) + b"\n")
        count = 0
        while True:
            events = await handle.read(count, _PAGE)
            if not events:
                return count
            _check_page(session_id, count, events)
            out.write(b"".join(encode_stored_event(event) + b"\n" for event in events))
            count += len(events)


def _check_page(session_id: str, offset: int, events: Sequence[SessionEvent]) -> None:
    """Refuse a page that is not the next seqs: an export of a backend whose ``read`` ignores
    its range would otherwise never end (or write the log twice)."""
    if len(events) > _PAGE:
        raise SessionPersistenceCorruptionError(
            session_id,
            f"read({offset}, {_PAGE}) returned {len(events)} events, more than asked for; "
            "export stopped",
        )
    for index, event in enumerate(events):
        if event.seq != offset + index:
            raise SessionPersistenceCorruptionError(
                session_id,
                f"read({offset}, {_PAGE}) returned seq {event.seq} at index {index} where seq "
                f"{offset + index} belongs; export stopped",
            )
