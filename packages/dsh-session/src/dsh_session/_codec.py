"""The event line codec: bytes to typed events in one parse, and back, byte for byte."""

from __future__ import annotations

import json
from typing import Any

from pydantic_core import from_json as _from_json

from dsh_session._errors import EventDecodeError, LosslessJsonError
from dsh_session._events import (
    SessionEvent,
    SurfaceReplace,
)
from dsh_session._json import (
    JsonObject,
    JsonValue,
    as_javascript_reads,
    dumps_canonical,
)
from dsh_session._shape import BUILDERS, OPAQUE_BUILD, Build


def _refuse_constant(constant: str) -> Any:
    raise EventDecodeError(f"not JSON ({constant} is not a JSON value)")


def _parse_slow(line: bytes | str, first_error: ValueError) -> Any:
    """The stdlib parser reads lone-surrogate escapes (``\\ud800``) that pydantic's refuses."""
    try:
        return json.loads(line, parse_constant=_refuse_constant)
    except EventDecodeError:
        raise
    except (ValueError, UnicodeDecodeError):
        raise EventDecodeError(f"not JSON ({first_error})") from None


def _build_of_unknown(wire: Any) -> Build:
    if type(wire) is not dict:
        raise EventDecodeError("an event line must be a JSON object")
    kind = wire.get("type")
    if type(kind) is not str:
        raise EventDecodeError(f"type must be a string, not {kind!r:.40}")
    return OPAQUE_BUILD


def wrap_wire(wire: Any) -> SessionEvent:
    """Check a parsed event object and wrap it (not copied) in its event class."""
    try:
        build = BUILDERS[wire["type"]]
    except (KeyError, TypeError):
        build = _build_of_unknown(wire)
    return build(wire)  # type: ignore[no-any-return]


def decode_event(line: bytes | str) -> SessionEvent:
    """One event line (no trailing newline needed) to its typed event.

    Raises :class:`EventDecodeError` on anything malformed: not JSON (``NaN`` and ``Infinity``
    included), a bad envelope, or a core event whose data does not have its shape. Rules that
    need the log (seq equals index, ``sourceEventSeqs`` items, surface transitions, ``-0.0``)
    are checked by :class:`Session`; :func:`encode_event` refuses non-lossless values too.
    """
    try:
        wire = _from_json(line, allow_inf_nan=False)
    except ValueError as exc:
        wire = _parse_slow(line, exc)
    try:
        build = BUILDERS[wire["type"]]
    except (KeyError, TypeError):
        build = _build_of_unknown(wire)
    return build(wire)  # type: ignore[no-any-return]


def check_event(event: SessionEvent) -> None:
    """Check that ``event``'s wire object, as it is now, has its type's shape.

    An event's wire object is shared (a caller can mutate ``data``), so a writer that keeps the
    :func:`encode_event` bytes instead of decoding them back calls this at the same moment to
    refuse what a read would refuse. Raises :class:`EventDecodeError` naming the problem. (A
    refused event may still decode after its round trip, e.g. a float ``1.0`` written as ``1``:
    decode the encoded line to decide.)
    """
    wrap_wire(event.to_wire())


def encode_event(event: SessionEvent) -> bytes:
    """The compact canonical JSON line of ``event`` (no trailing newline).

    Raises :class:`~dsh_session.LosslessJsonError` if the event holds a value JSON cannot carry.
    """
    return dumps_canonical(event.to_wire())


def encode_stored_event(event: SessionEvent) -> bytes:
    """The line of an event *read from a log*, written again (export, migration).

    As :func:`encode_event`, except for an integer with no exact JavaScript number (such as
    ``11111111111111111111111111``, which only a foreign or hand-edited log holds): the
    TypeScript harness's ``JSON.parse`` reads it as the nearest double, so it is written as that
    double — the bytes the harness itself would write back. A read keeps the integer as Python
    parsed it (checking every stored number on every read would tax the hot path); new events
    holding one are still refused by :func:`encode_event`. Raises
    :class:`~dsh_session.LosslessJsonError` for anything else JSON cannot carry.
    """
    try:
        return dumps_canonical(event.to_wire())
    except LosslessJsonError:
        read_as = as_javascript_reads(event.to_wire())
        return dumps_canonical(read_as)


def make_event(
    type: str,
    seq: int,
    time: int,
    data: JsonValue,
    *,
    ignorable: bool | None = None,
    source_event_seqs: tuple[int, ...] | list[int] | None = None,
    surface_op: str | SurfaceReplace | JsonObject | None = None,
) -> SessionEvent:
    """Build the right event class from Python values, validating exactly like :func:`decode_event`.

    ``data`` is snapshotted (the event does not share it with the caller). Raises
    :class:`~dsh_session.LosslessJsonError` for data that is not lossless JSON and
    :class:`EventDecodeError` for anything else malformed.
    """
    wire: JsonObject = {"type": type, "seq": seq, "time": time, "data": data}
    if ignorable is not None:
        wire["ignorable"] = ignorable
    if source_event_seqs is not None:
        wire["sourceEventSeqs"] = list(source_event_seqs)
    if surface_op is not None:
        wire["surfaceOp"] = (
            surface_op.to_wire() if isinstance(surface_op, SurfaceReplace) else surface_op
        )
    return decode_event(dumps_canonical(wire))
