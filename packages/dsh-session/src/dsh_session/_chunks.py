"""Chunk packing, a storage-only codec (the JSONL ``pack_chunks`` option, as the TypeScript
harness packs ``text-chunks``, ``reasoning-chunks`` and ``tool-call-chunks`` rows).

A run of at least three consecutive ``assistant/chunk`` deltas of one block is stored as one row
``{type, seq0, time0, data:{turn, step, index, dt[], texts[]}}`` (tool calls: ``{..., dt[], id,
name?, args[]}``), member *k* having seq ``seq0+k`` and time ``time0 + sum(dt[:k])``. Rows are
never session events: :func:`decode_row` expands them. Packing is per written batch, so a run
split by a flush stays split; reading does not care how a file was packed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeGuard

from pydantic_core import from_json

from dsh_session._codec import _parse_slow, encode_event, wrap_wire
from dsh_session._errors import ChunkRowError, EventDecodeError, SessionFormatError
from dsh_session._events import (
    AssistantChunkEvent,
    SessionEvent,
    _new,
    _set_wire,
)
from dsh_session._json import (
    MAX_SAFE_INTEGER,
    JsonObject,
    dumps_canonical,
)
from dsh_session._shape import BUILDERS

ROW_TYPES: dict[str, str] = {
    "text-chunks": "text-delta",
    "reasoning-chunks": "reasoning-delta",
    "tool-call-chunks": "tool-call-delta",
}
"""Packed row tag → the chunk type of its members."""
_ROW_OF = {chunk: row for row, chunk in ROW_TYPES.items()}
_ENVELOPE = ["type", "seq", "time", "data"]
_DATA = ["turn", "step", "chunk"]
_TEXT_CHUNK = ["type", "index", "text"]
_TOOL_CHUNK = ["type", "index", "id", "argumentsDelta"]
_TOOL_CHUNK_NAMED = ["type", "index", "id", "name", "argumentsDelta"]
_TEXT_ROW_DATA = ["turn", "step", "index", "dt", "texts"]
_TOOL_ROW_DATA = ["turn", "step", "index", "dt", "id", "args"]
_TOOL_ROW_DATA_NAMED = ["turn", "step", "index", "dt", "id", "name", "args"]
_MIN_RUN = 3


def _safe(value: object) -> TypeGuard[int]:
    return type(value) is int and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER


def _member(event: SessionEvent) -> tuple[Any, ...] | None:
    """The run key and payload of a packable chunk event, or ``None`` if it is stored verbatim.

    Packable means the unpacked form rebuilds the exact bytes: exactly these keys in this order,
    integer turn/step/index, string payloads.
    """
    if event.type != "assistant/chunk":
        return None
    wire = event.to_wire()
    if list(wire) != _ENVELOPE:
        return None
    data = wire["data"]
    if type(data) is not dict or list(data) != _DATA:
        return None
    chunk = data["chunk"]
    if type(chunk) is not dict:
        return None
    kind = chunk.get("type")
    keys = list(chunk)
    if kind in ("text-delta", "reasoning-delta"):
        if keys != _TEXT_CHUNK or type(chunk["text"]) is not str:
            return None
        payload = chunk["text"]
        identity: tuple[Any, ...] = ()
    elif kind == "tool-call-delta":
        if keys == _TOOL_CHUNK_NAMED:
            if type(chunk["name"]) is not str:
                return None
            identity = (chunk["id"], True, chunk["name"])
        elif keys == _TOOL_CHUNK:
            identity = (chunk["id"], False, None)
        else:
            return None
        if type(chunk["id"]) is not str or type(chunk["argumentsDelta"]) is not str:
            return None
        payload = chunk["argumentsDelta"]
    else:
        return None
    turn, step, index = data["turn"], data["step"], chunk["index"]
    if not (_safe(turn) and _safe(step) and _safe(index)):
        return None
    return (kind, turn, step, index, *identity), payload


def _row(kind: str, key: tuple[Any, ...], run: list[SessionEvent], payloads: list[str]) -> bytes:
    first = run[0]
    dt = [run[k].time - run[k - 1].time for k in range(1, len(run))]
    data: JsonObject = {"turn": key[1], "step": key[2], "index": key[3], "dt": dt}
    if kind == "tool-call-delta":
        data["id"] = key[4]
        if key[5]:
            data["name"] = key[6]
        data["args"] = payloads
    else:
        data["texts"] = payloads
    return dumps_canonical(
        {"type": _ROW_OF[kind], "seq0": first.seq, "time0": first.time, "data": data}
    )


def encode_rows(events: Sequence[SessionEvent], *, pack_chunks: bool) -> list[bytes]:
    """The physical lines of one written batch (no newlines).

    With ``pack_chunks``, runs of at least three consecutive packable chunk events of one block
    become one packed row; everything else (and everything without ``pack_chunks``) is one line
    per event. Stateless: a run split across batches stays split.
    """
    if not pack_chunks:
        return [encode_event(event) for event in events]
    lines: list[bytes] = []
    run: list[SessionEvent] = []
    payloads: list[str] = []
    run_key: tuple[Any, ...] | None = None

    def flush() -> None:
        if run_key is not None and len(run) >= _MIN_RUN:
            lines.append(_row(run_key[0], run_key, run, payloads))
        else:
            lines.extend(encode_event(event) for event in run)
        run.clear()
        payloads.clear()

    for event in events:
        member = _member(event)
        if member is not None:
            key, payload = member
            if (
                run
                and key == run_key
                and event.seq == run[-1].seq + 1
                and _safe(event.time - run[-1].time)
            ):
                run.append(event)
                payloads.append(payload)
                continue
            flush()
            run_key = key
            run.append(event)
            payloads.append(payload)
            continue
        flush()
        run_key = None
        lines.append(encode_event(event))
    flush()
    return lines


def _expand(row_type: str, wire: JsonObject) -> list[SessionEvent]:
    def bad(reason: str) -> ChunkRowError:
        return ChunkRowError(row_type, reason)

    if wire.keys() != {"type", "seq0", "time0", "data"}:
        raise bad(f"keys must be type, seq0, time0, data; got {list(wire)}")
    seq0, time0, data = wire["seq0"], wire["time0"], wire["data"]
    if not _safe(seq0) or seq0 < 0:
        raise bad(f"seq0 must be a non-negative safe integer, not {seq0!r:.40}")
    if not _safe(time0):
        raise bad(f"time0 must be a safe integer, not {time0!r:.40}")
    chunk_type = ROW_TYPES[row_type]
    tool = chunk_type == "tool-call-delta"
    if type(data) is not dict:
        raise bad("data must be an object")
    keys = set(data)
    allowed = (_TOOL_ROW_DATA, _TOOL_ROW_DATA_NAMED) if tool else (_TEXT_ROW_DATA,)
    if not any(keys == set(option) for option in allowed):
        raise bad(f"unexpected data keys {sorted(keys)}")
    turn, step, index, dt = data["turn"], data["step"], data["index"], data["dt"]
    if not (_safe(turn) and _safe(step) and _safe(index)):
        raise bad("turn, step and index must be safe integers")
    payloads = data["args" if tool else "texts"]
    if type(payloads) is not list or not payloads or any(type(p) is not str for p in payloads):
        raise bad("the payload must be a non-empty array of strings")
    if type(dt) is not list or len(dt) != len(payloads) - 1 or not all(_safe(d) for d in dt):
        raise bad("dt must hold one safe integer per member after the first")
    if tool:
        if type(data["id"]) is not str or ("name" in data and type(data["name"]) is not str):
            raise bad("id and name must be strings")
        head: JsonObject = {"type": chunk_type, "index": index, "id": data["id"]}
        if "name" in data:
            head["name"] = data["name"]
        field = "argumentsDelta"
    else:
        head = {"type": chunk_type, "index": index}
        field = "text"
    events: list[SessionEvent] = []
    time = time0
    for k, payload in enumerate(payloads):
        if k:
            time += dt[k - 1]
        seq = seq0 + k
        if not (_safe(time) and seq <= MAX_SAFE_INTEGER):
            raise bad(f"member {k} has an unsafe seq or time")
        event = _new(AssistantChunkEvent)
        chunk = {**head, field: payload}
        _set_wire(
            event,
            {
                "type": "assistant/chunk",
                "seq": seq,
                "time": time,
                "data": {"turn": turn, "step": step, "chunk": chunk},
            },
        )
        events.append(event)
    return events


def _parse(line: bytes | str) -> Any:
    try:
        return from_json(line, allow_inf_nan=False)
    except ValueError as exc:
        return _parse_slow(line, exc)


def decode_row(line: bytes | str) -> list[SessionEvent]:
    """One physical line to its logical events: a packed row expands, an event line is one event.

    Raises :class:`ChunkRowError` for a malformed packed row and :class:`EventDecodeError` for
    a malformed event line.
    """
    try:
        wire = from_json(line, allow_inf_nan=False)
    except ValueError as exc:
        wire = _parse_slow(line, exc)
    try:  # the hot path, as in decode_event: a known event type
        build = BUILDERS[wire["type"]]
    except (KeyError, TypeError):
        kind = wire.get("type") if type(wire) is dict else None
        if type(kind) is str and kind in ROW_TYPES:
            return _expand(kind, wire)
        return [wrap_wire(wire)]  # refuses a type that is not a string, naming it
    return [build(wire)]


def decode_rows(lines: Sequence[bytes], first_seq: int) -> tuple[list[SessionEvent], int]:
    """Decode physical lines while each decodes (exactly as :func:`decode_row`) and the seqs run
    on from ``first_seq``; return the events and how many lines were consumed.

    Stops before the first line that does not decode or does not continue the seqs (the caller
    decodes that line itself to word the problem). The bulk path of a backend loading a log: the
    common line costs one parse, one dict lookup and one generated check, with no per-line list.
    """
    events: list[SessionEvent] = []
    append = events.append
    seq = first_seq
    done = 0
    for line in lines:
        try:
            wire = from_json(line, allow_inf_nan=False)
            event = BUILDERS[wire["type"]](wire)
        except Exception:  # anything unusual (slow parse, packed row, unknown type, bad line)
            try:
                rows = decode_row(line)
            except (SessionFormatError, ValueError, IndexError):
                break
            if rows[0].seq != seq:
                break
            events.extend(rows)
            seq += len(rows)
            done += 1
            continue
        if wire["seq"] != seq:
            break
        append(event)
        seq += 1
        done += 1
    return events, done


def row_last_seq(line: bytes | str) -> int:
    """The last logical seq a physical line stands for (for event counts from the last row)."""
    wire = _parse(line)
    if type(wire) is not dict:
        raise EventDecodeError("a log line must be a JSON object")
    kind = wire.get("type")
    if type(kind) is str and kind in ROW_TYPES:
        data = wire.get("data")
        payloads = (
            data.get("args" if kind == "tool-call-chunks" else "texts")
            if type(data) is dict
            else None
        )
        seq0 = wire.get("seq0")
        if not _safe(seq0) or type(payloads) is not list or not payloads:
            raise ChunkRowError(kind, "seq0 and a non-empty payload are required")
        return seq0 + len(payloads) - 1
    seq = wire.get("seq")
    if not _safe(seq) or seq < 0:
        raise EventDecodeError(f"seq must be a non-negative safe integer, not {seq!r:.40}")
    return seq
