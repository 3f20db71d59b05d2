"""The bracket invariants of a compacted log (``compaction/start`` … ``compaction/end``),
checked over a whole log.

A log this package writes always satisfies them; :func:`check_compaction_log` is the companion
that proves it (tests run it on every log they make) and tells a reader where a log from elsewhere
breaks them. The rules: ids are non-empty strings; no bracket opens inside another; a numbered
owner is the open turn and a ``null`` owner needs no open turn; no turn starts or ends inside a
bracket (but the interrupted closers a resume writes after a crash, which make the bracket stale);
a summary belongs to the open bracket, once; its shadowed seqs are non-empty and match its range;
an end matches its start and, without ``error``, follows a summary; a checkpoint message names the
open bracket. A ``session/end-seed`` clears an open bracket (the seed's crash remnant).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dsh_session import MAX_SAFE_INTEGER, SessionEvent, SurfaceReplace

__all__ = ["CompactionInvariantError", "check_compaction_log"]


class CompactionInvariantError(Exception):
    """A log breaks a bracket invariant at event ``seq`` (``rule`` says which)."""

    def __init__(self, seq: int, rule: str) -> None:
        super().__init__(f"compaction invariant broken at seq {seq}: {rule}")
        self.seq = seq
        self.rule = rule


def _id(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def check_compaction_log(events: Iterable[SessionEvent]) -> None:
    """Raise :class:`CompactionInvariantError` at the first event that breaks a rule."""
    open_turn: int | None = None
    bracket: dict[str, Any] | None = None  # the open start's data, plus "summarized"
    for event in events:
        kind, seq = event.type, event.seq
        data: Any = event.data

        def broken(rule: str, seq: int = seq) -> CompactionInvariantError:
            return CompactionInvariantError(seq, rule)

        if kind == "session/end-seed":
            bracket = None
        elif kind == "turn/start":
            if bracket is not None:
                raise broken("a turn starts inside a compaction bracket")
            open_turn = data.get("turn")
        elif kind == "turn/end":
            if bracket is not None:
                reason = data.get("reason")
                if not (isinstance(reason, dict) and reason.get("kind") == "interrupted"):
                    raise broken("a turn ends inside a compaction bracket")
                bracket = None  # a resume's closer: the bracket was a crash remnant
            open_turn = None
        elif kind == "compaction/start":
            if bracket is not None:
                raise broken(f"a compaction starts while {bracket['compactionId']} is open")
            if not _id(data.get("compactionId")):
                raise broken("compactionId must be a non-empty string")
            if "sourceCommandId" in data and not _id(data["sourceCommandId"]):
                raise broken("sourceCommandId must be a non-empty string")
            owner = data.get("turn")
            if owner is None and open_turn is not None:
                raise broken(f"a compaction without an owner starts inside turn {open_turn}")
            if owner is not None and owner != open_turn:
                raise broken(f"owner turn {owner} is not the open turn {open_turn}")
            bracket = {**data, "summarized": False}
        elif kind == "compaction/summary":
            if bracket is None or data.get("compactionId") != bracket["compactionId"]:
                raise broken("a summary outside its compaction bracket")
            if data.get("sourceCommandId") != bracket.get("sourceCommandId"):
                raise broken("the summary's sourceCommandId differs from its start's")
            if bracket["summarized"]:
                raise broken("a second summary in one bracket")
            shadowed = data.get("shadowedSeqs")
            covered = data.get("shadowedRange")
            if not isinstance(shadowed, list) or not shadowed:
                raise broken("shadowedSeqs must be a non-empty list")
            if not isinstance(covered, dict) or (covered.get("start"), covered.get("end")) != (
                shadowed[0],
                shadowed[-1],
            ):
                raise broken("shadowedRange must span the first and last shadowedSeqs")
            count = data.get("shadowedTokenCount")
            if type(count) is not int or not 0 <= count <= MAX_SAFE_INTEGER:
                raise broken("shadowedTokenCount must be a non-negative safe integer")
            bracket["summarized"] = True
        elif kind == "compaction/end":
            if bracket is None or data.get("compactionId") != bracket["compactionId"]:
                raise broken("an end without its compaction/start")
            if data.get("turn") != bracket.get("turn"):
                raise broken("the end's owner differs from its start's")
            if data.get("sourceCommandId") != bracket.get("sourceCommandId"):
                raise broken("the end's sourceCommandId differs from its start's")
            if "error" not in data and not bracket["summarized"]:
                raise broken("an end without error needs a summary")
            bracket = None
        elif kind == "user/message" and isinstance(event.surface_op, SurfaceReplace):
            source = data.get("source") if isinstance(data, dict) else None
            if (
                isinstance(source, dict)
                and source.get("plugin") == "compact"
                and (bracket is None or source.get("compactionId") != bracket["compactionId"])
            ):
                raise broken("a checkpoint outside its compaction bracket")
