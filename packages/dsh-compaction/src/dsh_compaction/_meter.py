"""The token meter: how big a session's next request is, folded from its log one event at a time.

Per session the meter keeps the priced surface (one node per surface event, in surface order), the
open step, the latest request header, and an *anchor*: what the latest successful model call
reported (its ``usage``) or, without usage, what the heuristic says it cost. A measurement is the
anchor's tokens plus what the surface gained or lost since (a signed delta: a checkpoint that
replaces many nodes with one makes it negative), or the heuristic price of the whole request when
no anchor holds for the current header.

Each event is folded once, transactionally (everything computed, then committed): the cost of a
measurement does not grow with the log, and an event that cannot be folded is not counted, so the
same :class:`MeterError` is raised on every later measurement.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, overload

from pydantic import ValidationError

from dsh_compaction._errors import MeterError
from dsh_compaction._estimate import (
    ROLE_OVERHEAD,
    estimate_content,
    estimate_envelope,
    estimate_message,
    estimate_wire_message,
)
from dsh_llm import Message
from dsh_session import (
    EpochHeader,
    Session,
    SessionEvent,
    SurfaceReplace,
)

__all__ = [
    "Baseline",
    "BaselineKind",
    "PricedNode",
    "PricedNodes",
    "TokenMeasurement",
    "TokenMeter",
]

BaselineKind = Literal["none", "estimated", "usage"]
"""Where a measurement's baseline comes from: nothing yet, the heuristic, or a model's usage."""


@dataclass(frozen=True, slots=True)
class PricedNode:
    """One surface node: its event ``seq``, heuristic ``tokens``, and ``tool_balance`` (the tool
    calls an assistant message opens, ``-1`` for a tool result, else 0)."""

    seq: int
    tokens: int
    tool_balance: int


@dataclass(frozen=True, slots=True)
class Baseline:
    """The tokens a measurement starts from: ``kind``, ``tokens``, and the ``usage`` (wire
    object) when the kind is ``usage``."""

    kind: BaselineKind
    tokens: int
    usage: Mapping[str, Any] | None = None


class PricedNodes(Sequence[PricedNode]):
    """The priced surface of one measurement: a read-only, detached view (later appends and
    replaces do not show through)."""

    __slots__ = ("_items", "_length")

    def __init__(self, items: list[PricedNode], length: int) -> None:
        self._items = items  # shared with the meter, which only appends past _length or copies
        self._length = length

    @overload
    def __getitem__(self, index: int) -> PricedNode: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[PricedNode]: ...
    def __getitem__(self, index: int | slice) -> PricedNode | Sequence[PricedNode]:
        if isinstance(index, slice):
            return self._items[: self._length][index]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("priced node index out of range")
        return self._items[index]

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[PricedNode]:
        items = self._items
        return (items[index] for index in range(self._length))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PricedNodes({self._length} nodes)"


@dataclass(frozen=True, slots=True)
class TokenMeasurement:
    """What the next request of a session costs, by the heuristic and the latest usage.

    ``log_revision`` is the number of events folded; ``total_tokens = max(0, baseline.tokens +
    surface_delta_tokens)`` (request and answer: a usage counts the output too);
    ``surface_tokens`` the heuristic price of the whole surface; ``nodes`` each surface node's
    price, in surface order.
    """

    log_revision: int
    baseline: Baseline
    surface_delta_tokens: int
    total_tokens: int
    surface_tokens: int
    nodes: PricedNodes


@dataclass(frozen=True, slots=True)
class _Anchor:
    header_version: int
    header: EpochHeader | None
    surface_tokens: int
    baseline: Baseline


@dataclass(frozen=True, slots=True)
class _StepStart:
    turn: Any
    step: Any
    surface_tokens: int


class _State:
    __slots__ = (
        "anchor",
        "consumed",
        "envelope",
        "header",
        "header_version",
        "nodes",
        "positions",
        "step_start",
        "surface_tokens",
    )

    def __init__(self) -> None:
        self.consumed = 0
        self.header: EpochHeader | None = None
        self.header_version = 0
        self.envelope = 0
        self.nodes: list[PricedNode] = []
        self.positions: dict[int, int] = {}
        self.surface_tokens = 0
        self.step_start: _StepStart | None = None
        self.anchor: _Anchor | None = None


def _node_content(session: Session, event: SessionEvent) -> list[Any] | None:
    """The content of the message a surface event stands for, read from its wire data (the
    shapes ``project_message`` knows), or ``None`` for a node that derives to nothing."""
    data: Any = event.data
    if not isinstance(data, dict):
        raise MeterError(session.id, event.seq, f"{event.type} data is not an object")
    kind = event.type
    if kind == "tool/result" and "message" not in data:
        content: Any = [{"type": "tool-result", "content": data.get("content")}]
    elif "message" in data and kind != "user/message":
        message = data["message"]
        content = message.get("content") if isinstance(message, dict) else None
    else:
        content = data.get("content")
    if kind == "assistant/message" and not content:
        return None  # the empty assistant node (usage only)
    if not isinstance(content, list) or not all(isinstance(block, dict) for block in content):
        raise MeterError(session.id, event.seq, f"{event.type} content is not a list of blocks")
    _check_blocks(session, event, content)
    return content


_STRING_FIELDS = {"text": ("text",), "reasoning": ("text",), "tool-call": ("name", "arguments")}


def _check_blocks(session: Session, event: SessionEvent, blocks: list[Any]) -> None:
    """Every field the price reads has the type it needs (a log is untrusted input), nested
    tool results included."""
    pending = [blocks]
    while pending:
        for block in pending.pop():
            if not isinstance(block, dict):
                raise MeterError(session.id, event.seq, f"{event.type}: a block is not an object")
            kind = block.get("type")
            for name in _STRING_FIELDS.get(kind, ()) if isinstance(kind, str) else ():
                if name in block and not isinstance(block[name], str):
                    raise MeterError(
                        session.id,
                        event.seq,
                        f"{event.type}: a {kind} block's {name} is not a string",
                    )
            if kind == "tool-result":
                inner = block.get("content")
                if not isinstance(inner, list):
                    raise MeterError(session.id, event.seq, "a tool result's content is not a list")
                pending.append(inner)


def _tool_balance(event: SessionEvent, content: list[Any] | None) -> int:
    if event.type == "tool/result":
        return -1
    if event.type == "assistant/message" and content is not None:
        return sum(1 for block in content if block.get("type") == "tool-call")
    return 0


def _usage_tokens(usage: Mapping[str, Any]) -> int | None:
    total = 0
    for key in ("inputTokens", "cacheReadTokens", "cacheWriteTokens", "outputTokens"):
        value = usage.get(key, 0)
        if type(value) is not int or value < 0:
            return None
        total += value
    return total


def _assembled_output_price(
    session: Session, event: SessionEvent, turn: Any, step: Any, cited: Sequence[int]
) -> int:
    """The price of the provider's own output, rebuilt from the ``assistant/chunk``s the
    message cites (a block's ``block-end`` is final; one cut short is rebuilt from deltas)."""
    events = session.events  # the Session guarantees cited seqs are unique and before it
    ended: dict[int, Mapping[str, Any]] = {}
    open_blocks: dict[int, dict[str, Any]] = {}
    for seq in cited:
        chunk_event = events[seq]
        data: Any = chunk_event.data
        chunk: Any = data.get("chunk") if isinstance(data, dict) else None
        if (
            chunk_event.type != "assistant/chunk"
            or not isinstance(chunk, dict)
            or data.get("turn") != turn
            or data.get("step") != step
        ):
            raise MeterError(
                session.id, event.seq, f"cites seq {seq}, not an assistant/chunk of its step"
            )
        kind: Any = chunk.get("type")
        index: Any = chunk.get("index")
        if kind == "block-end" and isinstance(chunk.get("block"), dict):
            ended[index] = chunk["block"]
            open_blocks.pop(index, None)
        elif kind == "block-start":
            open_blocks[index] = {"type": chunk.get("blockType"), "parts": [], "name": ""}
        elif kind in ("text-delta", "reasoning-delta"):
            piece = chunk.get("text", "")
            if not isinstance(piece, str):
                raise MeterError(
                    session.id, event.seq, f"cites seq {seq}: its text is not a string"
                )
            open_blocks.setdefault(index, {"type": None, "parts": [], "name": ""})["parts"].append(
                piece
            )
        elif kind == "tool-call-delta":
            piece, name = chunk.get("argumentsDelta", ""), chunk.get("name")
            if not isinstance(piece, str) or not isinstance(name, str | None):
                raise MeterError(
                    session.id, event.seq, f"cites seq {seq}: its name or arguments is not a string"
                )
            state = open_blocks.setdefault(index, {"type": "tool-call", "parts": [], "name": ""})
            state["name"] = name or state["name"]
            state["parts"].append(piece)
    blocks: list[Mapping[str, Any]] = list(ended.values())
    for index, state in open_blocks.items():
        if index in ended or state["type"] not in ("text", "reasoning", "tool-call"):
            continue
        text = "".join(state["parts"])
        if state["type"] == "tool-call":
            blocks.append({"type": "tool-call", "name": state["name"], "arguments": text})
        else:
            blocks.append({"type": state["type"], "text": text})
    _check_blocks(session, event, blocks)
    return estimate_wire_message({"content": blocks})


class TokenMeter:
    """Measures sessions (one fold per session object, kept while the session lives).

    ``measure(session)`` catches the fold up to the log's tail and returns a frozen
    :class:`TokenMeasurement`; ``estimate_message(message)`` prices one message alone.
    """

    def __init__(self) -> None:
        self._states: weakref.WeakKeyDictionary[Session, _State] = weakref.WeakKeyDictionary()

    @staticmethod
    def estimate_message(message: Message) -> int:
        """The heuristic price of ``message`` (see :func:`dsh_compaction.estimate_message`)."""
        return estimate_message(message)

    def measure(self, session: Session, header: EpochHeader | None = None) -> TokenMeasurement:
        """The size of ``session``'s next request. ``header`` measures it as if sent with that
        header instead of the log's latest one (the surface is not touched). Raises
        :class:`MeterError` when an event cannot be folded."""
        state = self._catch_up(session)
        surface = state.surface_tokens
        anchor = state.anchor
        if header is None:
            current, version, envelope = state.header, state.header_version, state.envelope
            # the version is a fast path; a header that changed and changed back holds again
            holds = anchor is not None and (
                anchor.header_version == version or anchor.header == current
            )
        else:
            current, envelope = header.canonical(), estimate_envelope(header.canonical())
            holds = anchor is not None and (
                anchor.header == current
                if anchor.header is not None and current is not None
                else anchor.header is None and current is None
            )
        if anchor is not None and holds:
            baseline, delta = anchor.baseline, surface - anchor.surface_tokens
        elif current is None and not state.nodes:
            baseline, delta = Baseline("none", 0), 0
        else:
            baseline, delta = Baseline("estimated", envelope + surface), 0
        return TokenMeasurement(
            log_revision=state.consumed,
            baseline=baseline,
            surface_delta_tokens=delta,
            total_tokens=max(0, baseline.tokens + delta),
            surface_tokens=surface,
            nodes=PricedNodes(state.nodes, len(state.nodes)),
        )

    # -- the fold ---------------------------------------------------------------------------

    def _catch_up(self, session: Session) -> _State:
        state = self._states.get(session)
        if state is None:
            state = self._states[session] = _State()
        events = session.events
        while state.consumed < len(events):
            event = events[state.consumed]
            if event.type != "assistant/chunk":  # a chunk is read through its message
                self._fold(session, state, event)
            state.consumed += 1
        return state

    def _fold(self, session: Session, state: _State, event: SessionEvent) -> None:
        kind = event.type
        data: Any = event.data
        if kind == "request/header":
            try:
                header = EpochHeader.from_wire(data["header"]).canonical()
            except (ValidationError, KeyError, TypeError) as error:
                raise MeterError(
                    session.id, event.seq, f"unreadable request/header: {error}"
                ) from None
            if state.header is None or header != state.header:
                state.header_version += 1
                state.envelope = estimate_envelope(header)
            state.header = header
            return
        if kind == "step/start":
            if state.step_start is not None:
                raise MeterError(session.id, event.seq, "a step opens while another is open")
            state.step_start = _StepStart(data.get("turn"), data.get("step"), state.surface_tokens)
            return
        if kind == "step/end":
            opened = state.step_start
            if opened is None or (opened.turn, opened.step) != (data.get("turn"), data.get("step")):
                raise MeterError(session.id, event.seq, "step/end does not close the open step")
            state.step_start = None
            return
        op = event.surface_op
        if op is None:
            return
        content = _node_content(session, event)
        tokens = 0 if content is None else estimate_content(content) + ROLE_OVERHEAD
        node = PricedNode(event.seq, tokens, _tool_balance(event, content))
        anchor = (
            self._anchor(session, state, event, tokens) if kind == "assistant/message" else None
        )
        if isinstance(op, SurfaceReplace):
            start, end = state.positions.get(op.start), state.positions.get(op.end)
            if start is None or end is None or start > end:
                raise MeterError(
                    session.id, event.seq, f"replace {op.start}..{op.end} names no priced range"
                )
            removed = sum(item.tokens for item in state.nodes[start : end + 1])
            nodes = [*state.nodes[:start], node, *state.nodes[end + 1 :]]  # a copy: detached
            state.nodes = nodes
            state.positions = {item.seq: index for index, item in enumerate(nodes)}
            state.surface_tokens += tokens - removed
        else:
            state.positions[event.seq] = len(state.nodes)
            state.nodes.append(node)
            state.surface_tokens += tokens
        if anchor is not None:
            state.anchor = anchor

    def _anchor(
        self, session: Session, state: _State, event: SessionEvent, durable: int
    ) -> _Anchor:
        data: Any = event.data
        opened = state.step_start
        if opened is None or (opened.turn, opened.step) != (data.get("turn"), data.get("step")):
            raise MeterError(session.id, event.seq, "assistant/message outside its open step")
        usage = data.get("usage")
        if isinstance(usage, dict) and state.header is not None:
            cited = event.source_event_seqs
            if cited is None:
                output = durable
            else:
                output = _assembled_output_price(
                    session, event, data.get("turn"), data.get("step"), cited
                )
            provider = _usage_tokens(usage)
            if provider is None:
                raise MeterError(session.id, event.seq, "usage holds a count that is not a count")
            surface = opened.surface_tokens + output
            estimated = state.envelope + surface
            if provider >= estimated:
                baseline = Baseline("usage", provider, dict(usage))
            else:
                baseline = Baseline("estimated", estimated)
            return _Anchor(state.header_version, state.header, surface, baseline)
        surface = opened.surface_tokens + durable
        return _Anchor(
            state.header_version,
            state.header,
            surface,
            Baseline("estimated", state.envelope + surface),
        )
