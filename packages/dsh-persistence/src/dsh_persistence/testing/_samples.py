"""Sample headers and events the clauses write, built from wire lines shaped like the v0 fixtures.

Building them with the wire decoder keeps the suite independent of the typed event classes'
constructors: whatever ``dsh_session`` decodes is what a backend must store.
"""

from __future__ import annotations

import json
from typing import Any

from dsh_session import SessionEvent, SessionHeader, decode_event, decode_header_line

CREATED_AT = 1000
_SOURCE = {"kind": "user", "rpcId": "rpc-1"}
_TRIGGER = {"kind": "message", "source": _SOURCE}


def _line(value: dict[str, Any]) -> bytes:
    # ensure_ascii keeps lone surrogates as \uXXXX escapes, which the decoder accepts.
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True).encode()


def header(
    session_id: str,
    *,
    cwd: str | None = None,
    seed_length: int = 0,
    parent_session: str | None = None,
    agent_preset: str | None = None,
) -> SessionHeader:
    """A current-format header created at epoch ms 1000; seeded when ``seed_length`` > 0; a
    subagent's (``origin``, ``delegationDepth`` 2, ``agentPreset``) when ``parent_session`` is
    given."""
    value: dict[str, Any] = {"type": "session", "version": 0, "id": session_id}
    value["createdAt"] = CREATED_AT
    if cwd is not None:
        value["cwd"] = cwd
    if parent_session is not None:
        value["parentSession"] = parent_session
        value["origin"] = "subagent"
        value["delegationDepth"] = 2
        value["agentPreset"] = agent_preset if agent_preset is not None else "reviewer"
    if seed_length:
        value["seedLength"] = seed_length
    decoded, _ = decode_header_line(_line(value))
    return decoded


def event(
    event_type: str,
    seq: int,
    data: Any,
    *,
    ignorable: bool | None = None,
    surface_append: bool = False,
) -> SessionEvent:
    """One event, decoded from its wire line (time = 1001 + seq)."""
    value: dict[str, Any] = {"type": event_type, "seq": seq, "time": 1001 + seq, "data": data}
    if ignorable is not None:
        value["ignorable"] = ignorable
    if surface_append:
        value["surfaceOp"] = "append"
    return decode_event(_line(value))


def user_message(seq: int, text: str) -> SessionEvent:
    """A ``user/message`` with one text block."""
    data = {"content": [{"type": "text", "text": text}], "source": _SOURCE}
    return event("user/message", seq, data, surface_append=True)


def one_turn(start: int = 0) -> list[SessionEvent]:
    """Six events (seqs ``start``..``start+5``): one completed turn, ``hi`` then ``hello``."""
    usage = {"inputTokens": 1, "outputTokens": 1, "cacheReadTokens": 0, "reasoningTokens": 0}
    assistant = {
        "turn": 1,
        "step": 1,
        "content": [{"type": "text", "text": "hello"}],
        "provenance": {"provider": "mock", "model": "mock"},
        "usage": usage,
    }
    return [
        event("turn/start", start, {"turn": 1, "trigger": _TRIGGER}),
        user_message(start + 1, "hi"),
        event("step/start", start + 2, {"turn": 1, "step": 1}),
        event("assistant/message", start + 3, assistant, surface_append=True),
        event("step/end", start + 4, {"turn": 1, "step": 1}),
        event("turn/end", start + 5, {"turn": 1, "reason": {"kind": "completed"}}),
    ]


def second_turn(start: int = 6) -> list[SessionEvent]:
    """Two events (seqs ``start``, ``start+1``): an empty completed turn 2."""
    return [
        event("turn/start", start, {"turn": 2, "trigger": _TRIGGER}),
        event("turn/end", start + 1, {"turn": 2, "reason": {"kind": "completed"}}),
    ]


def streamed_turn(start: int = 0, turn: int = 1) -> list[SessionEvent]:
    """Eleven events (seqs ``start``..``start+10``): a turn whose answer streams as a run of
    ``assistant/chunk`` text deltas (what a backend with ``pack_chunks`` packs into one row)."""
    pieces = ["Str", "eam", "ed ", "ans", "wer"]
    data = {"turn": turn, "step": 1}
    chunks = [
        event(
            "assistant/chunk",
            start + 3 + i,
            {**data, "chunk": {"type": "text-delta", "index": 0, "text": text}},
        )
        for i, text in enumerate(pieces)
    ]
    usage = {"inputTokens": 3, "outputTokens": 5, "cacheReadTokens": 0, "reasoningTokens": 0}
    assistant = {
        **data,
        "content": [{"type": "text", "text": "".join(pieces)}],
        "provenance": {"provider": "mock", "model": "mock"},
        "usage": usage,
    }
    return [
        event("turn/start", start, {"turn": turn, "trigger": _TRIGGER}),
        user_message(start + 1, "stream please"),
        event("step/start", start + 2, data),
        *chunks,
        event("assistant/message", start + 8, assistant, surface_append=True),
        event("step/end", start + 9, data),
        event("turn/end", start + 10, {"turn": turn, "reason": {"kind": "completed"}}),
    ]


def unknown_event(seq: int, *, ignorable: bool | None = None) -> SessionEvent:
    """An event of a type no build knows (``mystery/event``), optionally ignorable."""
    return event("mystery/event", seq, {"note": "from the future", "n": 1}, ignorable=ignorable)


def nested_event(seq: int) -> SessionEvent:
    """An ignorable unknown event whose data nests dicts and lists (something to mutate)."""
    data = {"outer": {"inner": {"list": [1, {"deep": "value"}]}, "tags": ["a", "b"]}, "n": 1}
    return event("mystery/nested", seq, data, ignorable=True)
