"""Pure validation helpers every backend shares: the same checks give the same errors everywhere.

None of them touches storage. A backend calls them at its boundaries: on ``create`` (the header),
on ``append`` (the batch and its contiguity), on ``read`` (the range), on open (the stored header,
its id and format version — version first — and, for a write open, the event vocabulary).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import FrozenInstanceError
from typing import Any

from dsh_persistence._errors import (
    SessionFormatUnsupportedError,
    SessionPersistenceCorruptionError,
)
from dsh_session import (
    READ_GENERATIONS,
    ROW_TYPES,
    SESSION_FORMAT_VERSION,
    HeaderDecodeError,
    LosslessJsonError,
    SessionEvent,
    SessionHeader,
    UnsupportedFormatVersionError,
    check_event,
    decode_event,
    decode_header_line,
    encode_event,
    encode_header_line,
    is_known_event_type,
)

_EVENT_TYPES: Any = SessionEvent  # the union of event classes, for isinstance


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_read_range(offset: object, length: object) -> None:
    """Refuse a ``read`` range that is not ``offset >= 0`` and ``length`` ``None`` or ``>= 0``.

    A non-integer raises ``TypeError``, a negative integer ``ValueError``; both messages say
    "non-negative integer".
    """
    for name, value, optional in (("offset", offset, False), ("length", length, True)):
        if optional and value is None:
            continue
        if not _is_int(value):
            raise TypeError(f"read {name} must be a non-negative integer, got {value!r}")
        assert isinstance(value, int)
        if value < 0:
            raise ValueError(f"read {name} must be a non-negative integer, got {value}")


def format_version_refusal(
    session_id: str, version: object, *, artifact: str | None = None
) -> SessionFormatUnsupportedError:
    """The direction-aware error for a stored format ``version`` this build does not handle."""
    current = SESSION_FORMAT_VERSION
    newest = max(READ_GENERATIONS)
    if _is_int(version) and isinstance(version, int) and version > newest:
        reason = (
            f"format version {version} was written by a newer harness (this build reads "
            f"v{current}-v{newest} and writes v{current}); upgrade dsh to open it"
        )
    elif _is_int(version) and isinstance(version, int) and version > current:
        reason = (
            f"format version {version} was written by a newer harness (this build handles "
            f"v{current}); upgrade dsh to open it"
        )
    elif _is_int(version):
        reason = (
            f"format version {version} is older than the supported v{current}, and this build "
            "ships no upgrade path for it"
        )
    else:
        reason = f"format version {version!r} is not a version this build knows (v{current})"
    number = version if isinstance(version, int) and _is_int(version) else None
    return SessionFormatUnsupportedError(session_id, reason, artifact=artifact, version=number)


def assert_format_version(session_id: str, version: object, *, artifact: str | None = None) -> None:
    """Raise ``SessionFormatUnsupportedError`` unless ``version`` is the current format.

    Backends check this *before* any shape validation, so a newer log reads as "upgrade", never
    as "corrupt".
    """
    if not (_is_int(version) and version == SESSION_FORMAT_VERSION):
        raise format_version_refusal(session_id, version, artifact=artifact)


def assert_stored_id(
    session_id: str, header: SessionHeader, *, artifact: str | None = None
) -> None:
    """Raise ``SessionPersistenceCorruptionError`` when a stored header names another session."""
    if header.id != session_id:
        raise SessionPersistenceCorruptionError(
            session_id,
            f"the stored header belongs to session {header.id!r}",
            artifact=artifact,
            line=1 if artifact is not None else None,
        )


def decode_stored_header(
    session_id: str, line: bytes, *, artifact: str | None = None
) -> tuple[SessionHeader, int]:
    """Decode the physical header line of a stored log: version first, then shape, then the id.

    Returns ``(header, inherited_event_count)``. A foreign version raises
    ``SessionFormatUnsupportedError``; a malformed header or another session's id raises
    ``SessionPersistenceCorruptionError`` naming ``artifact`` line 1.
    """
    try:
        header, inherited = decode_header_line(line)
    except UnsupportedFormatVersionError as error:
        raise format_version_refusal(session_id, error.version, artifact=artifact) from error
    except HeaderDecodeError as error:
        raise SessionPersistenceCorruptionError(
            session_id, f"bad header: {error.reason}", artifact=artifact, line=1
        ) from error
    assert_stored_id(session_id, header, artifact=artifact)
    return header, inherited


def decode_stored_event(
    session_id: str,
    record: bytes | str,
    seq: int,
    *,
    artifact: str | None = None,
    line: int | None = None,
) -> SessionEvent:
    """Decode the stored record of event ``seq`` (one event, not a packed row).

    Whatever is wrong with the record (not JSON, not an object, a type that is not a string, a
    seq or time missing or of the wrong type, data missing, a packed-row type, the seq of
    another event) raises ``SessionPersistenceCorruptionError`` naming the session,
    ``artifact`` and the 1-based physical ``line`` when given, else the row ``seq``; never
    another exception. For backends that store one record per event; a torn tail is the
    caller's to recognize before calling this.
    """
    where: dict[str, int] = {"line": line} if line is not None else {"row": seq}
    try:
        event = decode_event(record)
    except Exception as error:  # any failure to decode a stored record is corruption
        raise SessionPersistenceCorruptionError(
            session_id, f"the record of seq {seq} is no event: {error}", artifact=artifact, **where
        ) from error
    if event.type in ROW_TYPES:
        reason = f"the record of seq {seq} is a packed {event.type} row, not one event"
        raise SessionPersistenceCorruptionError(session_id, reason, artifact=artifact, **where)
    if event.seq != seq:
        reason = f"the record of seq {seq} holds seq {event.seq}"
        raise SessionPersistenceCorruptionError(session_id, reason, artifact=artifact, **where)
    return event


def assert_writable_event(
    session_id: str,
    event: SessionEvent,
    *,
    artifact: str | None = None,
) -> None:
    """Raise ``SessionFormatUnsupportedError`` for an event a write open must refuse.

    An event type this build does not know, not marked ``ignorable: true``, may carry invariants
    this build would break by appending after it; reading it is fine (it is opaque data).
    """
    if event.ignorable is True or is_known_event_type(event.type):
        return
    raise SessionFormatUnsupportedError(
        session_id,
        f"event type {event.type!r} (seq {event.seq}) is unknown to this build and not marked "
        "ignorable, so the session cannot be resumed for writing; upgrade dsh to write it "
        "(reading it works)",
        artifact=artifact,
        event_type=event.type,
    )


def assert_writable_events(
    session_id: str, events: Iterable[SessionEvent], *, artifact: str | None = None
) -> None:
    """``assert_writable_event`` over a whole stored log (the write-open vocabulary check)."""
    for event in events:
        assert_writable_event(session_id, event, artifact=artifact)


def assert_contiguous(session_id: str, events: Sequence[SessionEvent], next_seq: int) -> None:
    """Raise ``ValueError`` unless ``events`` have seqs ``next_seq, next_seq + 1, ...``.

    The message names the expected seq: ``expected seq 6 at index 0, got 0``.
    """
    for index, event in enumerate(events):
        expected = next_seq + index
        if event.seq != expected:
            raise ValueError(
                f"session {session_id!r}: append out of order: expected seq {expected} at "
                f"index {index}, got {event.seq}; nothing of this batch was stored"
            )


class AppendBatch:
    """A batch ready to store: its canonical ``lines`` (no newline) and the detached ``events``
    those lines decode to (what a read returns).

    A backend that stores the lines needs no event objects on its write path, so ``events`` are
    decoded from ``lines`` on first access. Immutable; equal when the lines are equal.
    """

    __slots__ = ("_events", "lines")
    lines: tuple[bytes, ...]
    _events: tuple[SessionEvent, ...] | None

    def __init__(self, events: Sequence[SessionEvent] | None, lines: Sequence[bytes]) -> None:
        """``events`` may be ``None``: they are then decoded from ``lines`` when first read."""
        _set(self, "lines", tuple(lines))
        _set(self, "_events", None if events is None else tuple(events))

    @property
    def events(self) -> tuple[SessionEvent, ...]:
        """The detached events (decoded from ``lines`` on first access)."""
        events = self._events
        if events is None:
            events = tuple(map(decode_event, self.lines))
            _set(self, "_events", events)
        return events

    def __len__(self) -> int:
        return len(self.lines)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AppendBatch):
            return NotImplemented
        return self.lines == other.lines

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"AppendBatch(lines={self.lines!r})"

    def __reduce__(self) -> tuple[object, ...]:
        return (AppendBatch, (self._events, self.lines))

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")


_set = object.__setattr__


def refuse_reserved_type(session_id: str, index: int, event_type: object) -> None:
    """Raise ``ValueError`` when ``event_type`` names a packed chunk row (``text-chunks``,
    ``reasoning-chunks``, ``tool-call-chunks``).

    Those names are the physical rows of a packed log, not events: a stored event under one of
    them would be read back as a malformed packed row, so no backend may accept one, even marked
    ``ignorable``. ``materialize_append_batch`` calls this; a backend that encodes its own batch
    calls it for each event.
    """
    if isinstance(event_type, str) and event_type in ROW_TYPES:
        raise ValueError(
            f"session {session_id!r}: event at index {index} has type {event_type!r}, which is "
            "reserved for packed chunk rows and cannot be stored as an event"
        )


def encode_append_batch(session_id: str, events: Sequence[SessionEvent]) -> list[bytes]:
    """The canonical line of each event of an ``append`` batch: the stored copy, detached from
    the caller's objects (later changes to them cannot reach it).

    For backends that store the lines as they are: the events were validated when they were
    built (``decode_event`` / ``make_event``) and are not decoded again (see
    `materialize_append_batch` for the batch that also checks and keeps the decoded events).
    Raises ``TypeError`` for a batch that is not a sequence of session events or an event that
    is not losslessly JSON-serializable, and ``ValueError`` for a packed chunk row's type name
    (``refuse_reserved_type``), each naming the session and the index; nothing is stored then.
    """
    given: object = events
    if isinstance(given, (str, bytes)) or not isinstance(given, Sequence):
        raise TypeError(f"append takes a sequence of events, got {type(given).__name__}")
    lines: list[bytes] = []
    for index, event in enumerate(events):
        if not isinstance(event, _EVENT_TYPES):
            raise TypeError(
                f"session {session_id!r}: item at index {index} is not a session event "
                f"({type(event).__name__})"
            )
        refuse_reserved_type(session_id, index, event.type)
        try:
            lines.append(encode_event(event))
        except LosslessJsonError as error:
            raise TypeError(
                f"session {session_id!r}: event at index {index} is not losslessly "
                f"JSON-serializable: {error}"
            ) from error
    return lines


def materialize_append_batch(session_id: str, events: Sequence[SessionEvent]) -> AppendBatch:
    """Snapshot a batch losslessly before it is queued or stored.

    Each event is encoded with the wire codec, and its shape checked at that same moment, so the
    stored lines are detached from the caller's objects (later mutation cannot reach them) and
    decode to what a read will return: ``batch.events`` (decoded on first access). Anything that
    is not a losslessly JSON-serializable event raises ``TypeError`` (the message says "not
    losslessly JSON-serializable" for bad data); a reserved packed-row type raises ``ValueError``
    (``refuse_reserved_type``). Contiguity is checked separately
    (``assert_contiguous``).
    """
    given: object = events
    if isinstance(given, (str, bytes)) or not isinstance(given, Sequence):
        raise TypeError(f"append takes a sequence of events, got {type(given).__name__}")
    lines: list[bytes] = []
    for index, event in enumerate(events):
        refuse_reserved_type(session_id, index, getattr(event, "type", None))
        try:
            line = encode_event(event)
        except LosslessJsonError as error:
            raise TypeError(
                f"session {session_id!r}: event at index {index} is not losslessly "
                f"JSON-serializable: {error}"
            ) from error
        except Exception as error:
            raise TypeError(
                f"session {session_id!r}: item at index {index} is not a session event "
                f"({type(event).__name__}): {error}"
            ) from error
        try:
            check_event(event)
        except Exception:
            # the encoded line decides (its round trip may mend it, e.g. 1.0 written as 1)
            try:
                decode_event(line)
            except ValueError as error:
                raise TypeError(
                    f"session {session_id!r}: event at index {index} does not survive its own "
                    f"encoding: {error}"
                ) from error
        lines.append(line)
    return AppendBatch(None, lines)


def materialize_create_header(
    header: SessionHeader, inherited_event_count: int = 0
) -> SessionHeader:
    """Check a header given to ``create`` and return the header to store.

    The header must be a current-format ``SessionHeader``; ``inherited_event_count`` is
    required (``>= 1``) iff ``header.is_seeded`` and must be 0 otherwise. The header must encode
    losslessly. Raises ``TypeError``/``ValueError``.
    """
    if not isinstance(header, SessionHeader):
        raise TypeError(f"create takes a SessionHeader, got {type(header).__name__}")
    if not _is_int(inherited_event_count):
        raise TypeError(
            f"inherited_event_count must be a non-negative integer, got {inherited_event_count!r}"
        )
    if inherited_event_count < 0:
        raise ValueError(
            f"inherited_event_count must be a non-negative integer, got {inherited_event_count}"
        )
    if header.version != SESSION_FORMAT_VERSION:
        raise ValueError(
            f"session {header.id!r}: cannot create a log in format version {header.version}; "
            f"this build writes v{SESSION_FORMAT_VERSION}"
        )
    if header.is_seeded and inherited_event_count == 0:
        raise ValueError(
            f"session {header.id!r}: a seeded header (is_seeded=True) needs "
            "inherited_event_count >= 1 (the length of the inherited prefix)"
        )
    if not header.is_seeded and inherited_event_count != 0:
        raise ValueError(
            f"session {header.id!r}: inherited_event_count={inherited_event_count} needs a "
            "seeded header (is_seeded=True)"
        )
    try:
        line = encode_header_line(header, inherited_event_count)
    except LosslessJsonError as error:
        raise TypeError(
            f"session {header.id!r}: header is not losslessly JSON-serializable: {error}"
        ) from error
    try:  # a header built without validation (model_copy(update=...)) must still read back
        decode_header_line(line)
    except ValueError as error:
        raise ValueError(
            f"session {header.id!r}: header would not read back as a valid header line: {error}"
        ) from error
    return header
