"""The in-memory session log: append-only, validated before commit, observed after commit."""

from __future__ import annotations

import logging
import time as _time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, overload

from dsh_llm import Message
from dsh_session._codec import make_event
from dsh_session._derive import project_message
from dsh_session._errors import EventDecodeError, LosslessJsonError, SessionValidationError
from dsh_session._events import (
    OpaqueEvent,
    SessionEvent,
    SurfaceReplace,
    TurnEndEvent,
    TurnStartEvent,
    _Event,
)
from dsh_session._fork import fork_seed
from dsh_session._generation_derive import header_of_generation_event
from dsh_session._generations import (
    check_generation_event,
    generation_cut,
    generation_surface_types,
)
from dsh_session._header import SessionHeader, _check_cut
from dsh_session._json import (
    JsonObject,
    JsonValue,
    _check,
)
from dsh_session._legacy import (
    legacy_append_refusal,
    may_need_projection,
    project_stored_event,
)
from dsh_session._request_header import EpochHeader, header_of_event
from dsh_session._surface import SurfacePlan, SurfaceState, plan_surface
from dsh_session._vocabulary import (
    LEGACY_EVENT_TYPES,
    SURFACE_EVENT_TYPES,
)

_log = logging.getLogger("dsh_session")

RETIRED_EVENT_TYPES = frozenset({"request/header-delta"})
"""Types a v0 log may not hold (refused on restore and on append)."""


def now_ms() -> int:
    """Wall-clock epoch milliseconds (the default ``time`` of an appended event)."""
    return _time.time_ns() // 1_000_000


class EventsView(Sequence[SessionEvent]):
    """A read-only, live view of a session's events (index ``i`` is the event with seq ``i``)."""

    __slots__ = ("_events",)

    def __init__(self, events: list[SessionEvent]) -> None:
        self._events = events

    @overload
    def __getitem__(self, index: int) -> SessionEvent: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[SessionEvent]: ...
    def __getitem__(self, index: int | slice) -> SessionEvent | Sequence[SessionEvent]:
        return self._events[index]

    def __len__(self) -> int:
        return len(self._events)

    def __iter__(self) -> Iterator[SessionEvent]:
        return iter(self._events)

    def __repr__(self) -> str:
        return f"EventsView({len(self._events)} events)"


class Subscription:
    """A subscriber registration: ``close()`` (or leaving a ``with`` block) removes it."""

    __slots__ = ("_callback", "_subscribers")

    def __init__(
        self,
        subscribers: list[Callable[[SessionEvent], None]],
        callback: Callable[[SessionEvent], None],
    ) -> None:
        self._subscribers: list[Callable[[SessionEvent], None]] | None = subscribers
        self._callback = callback

    def close(self) -> None:
        """Stop notifying this callback (idempotent)."""
        if self._subscribers is not None:
            self._subscribers.remove(self._callback)
            self._subscribers = None

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class Session:
    """An append-only session log with its surface, derived messages and folded header.

    ``Session(header, events)`` restores a log: every event is validated (seq equals index,
    envelope, lossless JSON, surface transition) exactly like an append, after the records of a
    pre-react-loop log are projected to their current form (``steering/message``, ``turn/start``
    ``trigger``, old ``turn/end`` reasons) and the ``compact/*`` records of a log from before the
    compaction rename to ``compaction/*`` (see :func:`~dsh_session.project_stored_event`); so
    :attr:`events` can differ from the stored events, which stay as they were. ``append`` and
    ``append_event`` validate before they commit (a refused event changes nothing), then notify
    subscribers in order; a subscriber's exception is logged, never raised to the appender, and
    a subscriber that appends is refused (``REENTRANT``).

    A header of a later generation (``version`` 2-4, written by the TypeScript harness since
    2026-09-04) restores that generation's log as stored, under its own rules
    (:mod:`dsh_session._generations`): its surface types (``system/message``,
    ``developer/message``), its replacement spelling, its unknown-type rule, and the inherited
    cut taken from the body's ``session/end-seed {inherited: true}`` marker (pass
    ``inherited_event_count=0`` to have it found; a non-zero count must agree). Such a session
    is read-only: ``append`` and ``fork`` raise (code ``GENERATION``), since this library writes
    format v0 only.
    """

    def __init__(
        self,
        header: SessionHeader,
        events: Iterable[SessionEvent] = (),
        *,
        inherited_event_count: int = 0,
    ) -> None:
        if not isinstance(header, SessionHeader):
            raise TypeError(f"header must be a SessionHeader, not {type(header).__name__}")
        self._generation = header.version
        self._surface_types = generation_surface_types(header.version)
        find_cut = header.version >= 2 and header.is_seeded and inherited_event_count == 0
        try:
            if not find_cut:
                _check_cut(header, inherited_event_count)
        except ValueError as exc:
            raise SessionValidationError(str(exc), code="HEADER") from None
        self._header = header
        self._inherited = inherited_event_count
        self._events: list[SessionEvent] = []
        self._view = EventsView(self._events)
        self._surface = SurfaceState()
        self._subscribers: list[Callable[[SessionEvent], None]] = []
        self._notifying = False
        self._request_header: EpochHeader | None = None
        self._request_context: JsonObject | None = None
        self._title: str | None = None
        self._projected: dict[int, Message | None] = {}
        self._derived: list[Message] = []
        self._derived_nodes = 0
        self._derived_generation = 0
        legacy = header.version < 2  # the pre-react-loop and compact/* records are v0's
        for event in events:
            kind = type(event)
            if (
                legacy
                and (kind is TurnStartEvent or kind is TurnEndEvent or kind is OpaqueEvent)
                and may_need_projection(event)
            ):
                event = project_stored_event(event, header.id)
            self._commit(event, self._plan(event, checked=False))
        if header.version >= 2:
            try:
                cut = generation_cut(self._events, seeded=header.is_seeded)
            except EventDecodeError as exc:
                raise SessionValidationError(exc.reason, code="HEADER") from None
            if not find_cut and cut != inherited_event_count:
                raise SessionValidationError(
                    f"inherited_event_count {inherited_event_count} disagrees with the log's "
                    f"inherited-cut marker at seq {cut}",
                    code="HEADER",
                )
            self._inherited = inherited_event_count = cut
        if inherited_event_count > len(self._events):
            raise SessionValidationError(
                f"inherited_event_count {inherited_event_count} exceeds the {len(self._events)} "
                "restored events",
                code="HEADER",
            )

    # -- reading ---------------------------------------------------------------------------

    @property
    def header(self) -> SessionHeader:
        """The session's header."""
        return self._header

    @property
    def id(self) -> str:
        """The session id (``header.id``)."""
        return self._header.id

    @property
    def events(self) -> EventsView:
        """Every event, in seq order (a live read-only view)."""
        return self._view

    @property
    def next_seq(self) -> int:
        """The seq the next appended event gets (the log's length)."""
        return len(self._events)

    @property
    def inherited_event_count(self) -> int:
        """How many leading events came from a fork parent (0 unless the header is seeded)."""
        return self._inherited

    @property
    def surface(self) -> tuple[int, ...]:
        """The surface node seqs, in order."""
        return tuple(self._surface.nodes)

    @property
    def replace_generation(self) -> int:
        """How many surface replaces have happened."""
        return self._surface.replace_generation

    @property
    def request_header(self) -> EpochHeader | None:
        """The canonical form of the last ``request/header`` (``None``: none logged)."""
        return self._request_header

    @property
    def request_context(self) -> JsonObject | None:
        """The data of the last ``request/context`` (``None``: none logged; read-only)."""
        return self._request_context

    @property
    def title(self) -> str | None:
        """The title of the last ``session/title`` event (``None``: no title yet)."""
        return self._title

    def derive_messages(self) -> list[Message]:
        """The model's view of the log: each surface node's message, in surface order.

        Incremental: a node is projected once and cached; an append projects only the new
        nodes, and a replace rebuilds the list from the cache. Returns a fresh list of shared,
        immutable messages. Raises :class:`SessionValidationError` (code ``DERIVE``) when a node's
        data is not a valid message.
        """
        if self._derived_generation != self._surface.replace_generation:
            self._derived = []
            self._derived_nodes = 0
            self._derived_generation = self._surface.replace_generation
        nodes = self._surface.nodes
        while self._derived_nodes < len(nodes):
            seq = nodes[self._derived_nodes]
            if seq in self._projected:
                message = self._projected[seq]
            else:
                message = project_message(self._events[seq])  # may raise: nothing counted yet
                self._projected[seq] = message
            if message is not None:
                self._derived.append(message)
            self._derived_nodes += 1
        return list(self._derived)

    # -- writing ---------------------------------------------------------------------------

    def subscribe(self, callback: Callable[[SessionEvent], None]) -> Subscription:
        """Call ``callback(event)`` after each committed append; returns the disposer."""
        self._subscribers.append(callback)
        return Subscription(self._subscribers, callback)

    def append(
        self,
        type: str,
        data: JsonValue,
        *,
        ignorable: bool | None = None,
        surface_op: str | SurfaceReplace | JsonObject | None = None,
        source_event_seqs: Sequence[int] | None = None,
        time: int | None = None,
    ) -> SessionEvent:
        """Append a new event at :attr:`next_seq` and return it.

        ``time`` defaults to the wall clock (epoch ms); a surface type's ``surface_op`` defaults
        to ``"append"``. ``data`` is snapshotted. Raises :class:`SessionValidationError` for a
        refused event and :class:`~dsh_session.LosslessJsonError` for data JSON cannot carry.
        """
        self._refuse_reentrant()
        if surface_op is None and type in SURFACE_EVENT_TYPES:
            surface_op = "append"
        seq = len(self._events)
        try:
            event = make_event(
                type,
                seq,
                now_ms() if time is None else time,
                data,
                ignorable=ignorable,
                source_event_seqs=None if source_event_seqs is None else list(source_event_seqs),
                surface_op=surface_op,
            )
        except EventDecodeError as exc:
            raise SessionValidationError(exc.reason, code="ENVELOPE", seq=seq) from None
        return self._append(event, checked=True)

    def append_event(self, event: SessionEvent) -> SessionEvent:
        """Append an already-built event; its seq must equal :attr:`next_seq`."""
        self._refuse_reentrant()
        return self._append(event, checked=False)

    def fork(
        self, child_id: str, *, boundary: int | None = None, created_at: int | None = None
    ) -> Session:
        """A new session seeded with this log's events ``0..boundary`` (default: all).

        The child copies ``cwd``, names this session as ``parent_session`` and is seeded (its
        ``inherited_event_count`` is ``boundary + 1``); forking an empty session gives an empty,
        unseeded child. Raises :class:`~dsh_session.SessionForkError` (``INVALID_BOUNDARY``,
        ``OPEN_TURN``).
        """
        self._refuse_generation("fork")
        seed, inherited = fork_seed(self._events, boundary)
        header = SessionHeader(
            id=child_id,
            created_at=now_ms() if created_at is None else created_at,
            cwd=self._header.cwd,
            parent_session=self._header.id,
            is_seeded=inherited > 0,
        )
        return Session(header, seed, inherited_event_count=inherited)

    # -- internals -------------------------------------------------------------------------

    @property
    def generation(self) -> int:
        """The log's generation (``header.version``): 0 for format v0, 2-4 for a log the
        TypeScript harness wrote in a later generation (read-only here)."""
        return self._generation

    @property
    def system_prompt(self) -> str | None:
        """The system prompt the model saw last: the text of the latest ``system/message``
        surface node in a v3 or v4 log, the folded request header's ``system`` before v3
        (``None``: none recorded)."""
        if self._generation < 3:
            header = self._request_header
            return None if header is None else header.system
        for seq in reversed(self._surface.nodes):
            event = self._events[seq]
            if event.type == "system/message":
                message = event.to_wire()["data"].get("message", {})
                texts = [
                    block.get("text", "")
                    for block in message.get("content", [])
                    if isinstance(block, dict) and block.get("type") == "text"
                ]
                return "".join(texts)
        return None

    def _refuse_generation(self, operation: str) -> None:
        if self._generation != 0:
            raise SessionValidationError(
                f"cannot {operation} session {self.id!r}: its log is generation "
                f"{self._generation} (written by the TypeScript harness), which this library "
                "reads but does not write (it writes format v0)",
                code="GENERATION",
            )

    def _refuse_reentrant(self) -> None:
        if self._notifying:
            raise SessionValidationError(
                "cannot append while subscribers are being notified of an append",
                code="REENTRANT",
            )

    def _append(self, event: SessionEvent, *, checked: bool) -> SessionEvent:
        self._refuse_generation("append to")
        if isinstance(event, _Event) and event.type in LEGACY_EVENT_TYPES:
            raise SessionValidationError(
                legacy_append_refusal(event.type),
                code="LEGACY",
                seq=event.seq,
            )
        self._commit(event, self._plan(event, checked=checked))
        self._notifying = True
        try:
            for callback in tuple(self._subscribers):
                try:
                    callback(event)
                except Exception:
                    _log.exception("session %s: a subscriber failed on seq %d", self.id, event.seq)
        finally:
            self._notifying = False
        return event

    def _plan(self, event: SessionEvent, *, checked: bool) -> tuple[SurfacePlan | None, Any]:
        """Validate ``event`` against the log as it is; returns what committing it changes."""
        if not isinstance(event, _Event):
            raise SessionValidationError(
                f"not a session event: {type(event).__name__}", code="ENVELOPE"
            )
        seq = len(self._events)
        if event.seq != seq:
            raise SessionValidationError(
                f"seq must equal the log length {seq}", code="SEQ", seq=event.seq
            )
        if event.type in RETIRED_EVENT_TYPES:
            raise SessionValidationError(
                f"event type {event.type!r} is retired", code="DATA", seq=seq
            )
        if not checked:
            try:
                _check(event.to_wire()["data"], "data", set())
            except LosslessJsonError as exc:
                raise SessionValidationError(str(exc), code="DATA", seq=seq) from None
        if self._generation >= 2:
            try:
                check_generation_event(self._generation, event, self._events)
            except EventDecodeError as exc:
                raise SessionValidationError(exc.reason, code="GENERATION", seq=seq) from None
        else:
            op = event.to_wire().get("surfaceOp")
            if type(op) is dict and "startSeq" in op:
                raise SessionValidationError(
                    "format v0 spells a replacement {op:'replace', start, end} (startSeq and "
                    "endSeq are the spelling of generations v3 and v4)",
                    code="SURFACE",
                    seq=seq,
                )
        fold: Any = None
        if event.type == "request/header":
            fold = (
                header_of_event(event)
                if self._generation < 2
                else header_of_generation_event(event)
            )
        return plan_surface(self._surface, event, self._events, self._surface_types), fold

    def _commit(self, event: SessionEvent, planned: tuple[SurfacePlan | None, Any]) -> None:
        plan, fold = planned
        self._events.append(event)
        if plan is not None:
            self._surface.commit(plan)
        kind = event.type
        if kind == "request/header":
            self._request_header = fold
        elif kind == "request/context":
            self._request_context = event.to_wire()["data"]
        elif kind == "session/title":
            self._title = event.to_wire()["data"]["title"]
