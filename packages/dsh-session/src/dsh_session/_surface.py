"""The surface: the ordered event seqs the model sees, with append and replace.

Validation is plan-then-commit: :func:`plan_surface` checks an event against the current state and
returns a plan, or raises; :meth:`SurfaceState.commit` applies a plan. A refused event leaves the
state untouched. :func:`fold_surface` runs the same fold over a whole log.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dsh_session._errors import SessionValidationError
from dsh_session._events import (
    SessionEvent,
    SurfaceReplace,
)
from dsh_session._json import (
    MAX_SAFE_INTEGER,
    JsonObject,
)
from dsh_session._vocabulary import (
    SURFACE_EVENT_TYPES,
)


@dataclass(frozen=True, slots=True)
class SurfacePlan:
    """What committing one surface event does: append ``seq``, or replace ``start..end``."""

    seq: int
    start: int | None = None  # position of the first shadowed node (None: append)
    end: int | None = None  # position of the last shadowed node


@dataclass(frozen=True, slots=True)
class Replacement:
    """One replace in a folded log: event ``seq`` shadowed nodes ``start..end`` (seqs)."""

    seq: int
    start: int
    end: int
    shadowed_seqs: tuple[int, ...]


@dataclass(slots=True)
class SurfaceState:
    """The surface of a log so far: node seqs in order, and how many replaces happened."""

    nodes: list[int] = field(default_factory=list)
    replace_generation: int = 0
    _position: dict[int, int] = field(default_factory=dict)

    def position(self, seq: int) -> int | None:
        """Where node ``seq`` is on the surface (``None``: not a node)."""
        return self._position.get(seq)

    def commit(self, plan: SurfacePlan) -> tuple[int, ...]:
        """Apply a plan; returns the shadowed node seqs (empty for an append)."""
        if plan.start is None or plan.end is None:
            self._position[plan.seq] = len(self.nodes)
            self.nodes.append(plan.seq)
            return ()
        shadowed = tuple(self.nodes[plan.start : plan.end + 1])
        self.nodes[plan.start : plan.end + 1] = [plan.seq]
        for seq in shadowed:
            del self._position[seq]
        for index in range(plan.start, len(self.nodes)):
            self._position[self.nodes[index]] = index
        self.replace_generation += 1
        return shadowed


def is_surface_event(event: SessionEvent) -> bool:
    """Whether ``event`` is of a surface type (``user/message``, ``assistant/message``,
    ``tool/result``)."""
    return event.type in SURFACE_EVENT_TYPES


def is_append_surface_event(event: SessionEvent) -> bool:
    """A surface event that appended a node (what a human transcript shows: a replacement would
    hide text the user already saw)."""
    return event.type in SURFACE_EVENT_TYPES and event.to_wire().get("surfaceOp") == "append"


def is_replacement_surface_event(event: SessionEvent) -> bool:
    """A surface event that replaced a range of nodes (``{op:'replace', start, end}``)."""
    return event.type in SURFACE_EVENT_TYPES and isinstance(event.surface_op, SurfaceReplace)


def _refuse(event: SessionEvent, message: str) -> SessionValidationError:
    return SessionValidationError(message, code="SURFACE", seq=event.seq)


def check_source_seqs(event: SessionEvent) -> list[int] | None:
    """Validate ``sourceEventSeqs`` of a surface event: safe, unique, below its own seq."""
    seqs = event.to_wire().get("sourceEventSeqs")
    if seqs is None:
        return None
    for item in seqs:
        if type(item) is not int or not 0 <= item <= MAX_SAFE_INTEGER:
            raise _refuse(event, f"sourceEventSeqs holds {item!r:.40}, not a seq")
        if item >= event.seq:
            raise _refuse(event, f"sourceEventSeqs cites seq {item}, not before this event")
    if len(set(seqs)) != len(seqs):
        raise _refuse(event, "sourceEventSeqs holds duplicates")
    if not seqs and event.type != "assistant/message":
        raise _refuse(event, "only assistant/message may carry an empty sourceEventSeqs")
    return list(seqs)


def _without_result_content(data: JsonObject) -> Any:
    """A tool/result's data with the result content removed (what a replace must keep)."""
    if "message" in data:
        message = data["message"]
        if isinstance(message, dict) and message.get("role") == "tool":  # v4: no wrapper block
            rest = {k: v for k, v in message.items() if k != "content"}
            return ({k: v for k, v in data.items() if k != "message"}, rest)
        content = message.get("content") if isinstance(message, dict) else None
        if not (isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict)):
            return None
        block = {k: v for k, v in content[0].items() if k != "content"}
        rest = {k: v for k, v in message.items() if k != "content"}
        return ({k: v for k, v in data.items() if k != "message"}, rest, block)
    return {k: v for k, v in data.items() if k != "content"}


def plan_surface(
    state: SurfaceState,
    event: SessionEvent,
    events: Sequence[SessionEvent],
    surface_types: frozenset[str] = SURFACE_EVENT_TYPES,
) -> SurfacePlan | None:
    """Check ``event``'s surface transition against ``state``; ``None`` for a non-surface event.

    ``events`` is the log so far (to look shadowed nodes up by seq); ``surface_types`` are the
    surface types of the log's generation (v3 adds ``system/message``, v4
    ``developer/message``). Raises :class:`SessionValidationError` (code ``SURFACE``) on any
    rule of the surface.
    """
    wire = event.to_wire()
    if event.type not in surface_types:
        if "surfaceOp" in wire or "sourceEventSeqs" in wire:
            raise SessionValidationError(
                f"a {event.type} event is not a surface event and cannot carry surfaceOp or "
                "sourceEventSeqs",
                code="ENVELOPE",
                seq=event.seq,
            )
        return None
    op = wire.get("surfaceOp")
    if op is None:
        raise _refuse(event, f"a {event.type} event must carry surfaceOp")
    sources = check_source_seqs(event)
    if op == "append":
        return SurfacePlan(event.seq)
    replace = event.surface_op
    assert isinstance(replace, SurfaceReplace)
    start_seq, end_seq = replace.start, replace.end
    start, end = state.position(start_seq), state.position(end_seq)
    if start is None or end is None:
        missing = start_seq if start is None else end_seq
        raise _refuse(event, f"replace names seq {missing}, which is not a surface node")
    if start > end:
        raise _refuse(event, f"replace start {start_seq} comes after end {end_seq} on the surface")
    shadowed = state.nodes[start : end + 1]
    if sources is None or not set(shadowed) <= set(sources):
        raise _refuse(
            event, f"a replace must cite every shadowed node {shadowed} in sourceEventSeqs"
        )
    if event.type == "tool/result":
        if len(shadowed) != 1 or events[shadowed[0]].type != "tool/result":
            raise _refuse(event, "a tool/result replace must shadow exactly one tool/result")
        before = _without_result_content(events[shadowed[0]].to_wire()["data"])
        after = _without_result_content(wire["data"])
        if before is None or before != after:
            raise _refuse(event, "a tool/result replace may change only the result content")
    return SurfacePlan(event.seq, start, end)


@dataclass(frozen=True, slots=True)
class SurfaceFold:
    """A whole log's surface: the node seqs and every replace, in log order."""

    nodes: tuple[int, ...]
    replacements: tuple[Replacement, ...]


def fold_surface(
    events: Sequence[SessionEvent], surface_types: frozenset[str] = SURFACE_EVENT_TYPES
) -> SurfaceFold:
    """Fold the surface of a log (the same rules as :class:`Session`; raises on a bad event).
    ``surface_types``: those of the log's generation (default v0's)."""
    state = SurfaceState()
    replacements: list[Replacement] = []
    for index, event in enumerate(events):
        if event.seq != index:
            raise SessionValidationError(
                f"seq must equal the index {index}", code="SEQ", seq=event.seq
            )
        plan = plan_surface(state, event, events, surface_types)
        if plan is None:
            continue
        shadowed = state.commit(plan)
        if shadowed:
            op = event.surface_op
            assert isinstance(op, SurfaceReplace)
            replacements.append(Replacement(event.seq, op.start, op.end, shadowed))
    return SurfaceFold(tuple(state.nodes), tuple(replacements))
