"""What a hook said: its exit code, stdout and stderr read by the conventions both dialects share.

- **Exit 0**: stdout that is a JSON object is the structured answer; other stdout is plain text
  (context for ``SessionStart`` and ``UserPromptSubmit``, ignored elsewhere).
- **Exit 2**: a blocking answer whose reason is stderr (``block``); stdout is ignored.
- **Any other exit, a signal, a timeout, a hook that could not start** (or an exit 0 with an
  ``error``, such as a stdout over the output cap): a non-blocking error; the turn goes on and
  the error is logged.

The structured answer's fields: ``continue: false`` (+ ``stopReason``) asks to stop the agent;
``decision: "block" | "approve"`` with ``reason`` (top level); ``hookSpecificOutput`` with
``hookEventName`` (a block naming another event is ignored), ``permissionDecision: "allow" |
"deny" | "ask"`` with ``permissionDecisionReason`` (``PreToolUse``), ``additionalContext`` and
``updatedInput`` (read, logged and not applied); ``systemMessage`` (logged).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from dsh_hooks._config import HookEventName

__all__ = [
    "HookDecision",
    "HookOutput",
    "MergedOutcome",
    "merge_outputs",
    "parse_hook_output",
]

HookDecision: TypeAlias = Literal["approve", "allow", "block", "deny", "ask"]
"""A decision as a hook spelled it (``approve``/``block`` top level, the rest as permissions)."""

_PERMISSIONS = frozenset({"allow", "deny", "ask"})
_TOP_LEVEL = frozenset({"approve", "block"})
_RANK: dict[str | None, int] = {"deny": 3, "block": 3, "ask": 2, "allow": 1, "approve": 1}


@dataclass(frozen=True, slots=True)
class HookOutput:
    """One hook's answer, decoded (see the module docs for the conventions).

    ``exit_code`` is ``None`` when the hook did not exit by itself (a signal, a timeout, or it
    never started: ``error`` says which). ``stdout``/``stderr`` are stripped. ``context`` is
    ``additionalContext`` (or the plain stdout an event takes as context).
    """

    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    error: str | None = None
    decision: HookDecision | None = None
    reason: str | None = None
    context: str | None = None
    stop: bool = False
    stop_reason: str | None = None
    system_message: str | None = None
    updated_input: dict[str, Any] | None = None

    @property
    def failed(self) -> bool:
        """Whether the hook errored (not exit 0 or 2, or an ``error`` such as an answer over
        the output cap): a non-blocking error."""
        return self.exit_code not in (0, 2) or self.error is not None

    @property
    def logged_decision(self) -> str:
        """The ``decision`` a ``hook/result`` event records: the decision, ``stop``,
        ``error`` for a failed hook, else ``pass``."""
        if self.decision is not None:
            return self.decision
        if self.stop:
            return "stop"
        return "error" if self.failed else "pass"


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _structured(stdout: str) -> dict[str, Any] | None:
    if not stdout.startswith("{"):
        return None
    try:
        parsed = json.loads(stdout)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def parse_hook_output(
    event: HookEventName,
    exit_code: int | None,
    stdout: str,
    stderr: str,
    *,
    error: str | None = None,
    plain_stdout_is_context: bool = False,
) -> HookOutput:
    """Decode one hook run of ``event`` (``error``: why it has no exit code, if it has none, or
    why an exit 0's answer is not read)."""
    stdout, stderr = stdout.strip(), stderr.strip()
    if exit_code == 2:
        return HookOutput(2, stdout, stderr, decision="block", reason=stderr or None)
    if exit_code != 0 or error is not None:
        return HookOutput(exit_code, stdout, stderr, error=error)
    answer = _structured(stdout)
    if answer is None:
        context = stdout if plain_stdout_is_context and stdout else None
        return HookOutput(0, stdout, stderr, context=context)
    decision: HookDecision | None = None
    reason = None
    top = answer.get("decision")
    if top in _TOP_LEVEL:
        decision, reason = top, _text(answer.get("reason"))
    context = None
    updated_input = None
    specific = answer.get("hookSpecificOutput")
    if isinstance(specific, dict) and specific.get("hookEventName", event) == event:
        permission = specific.get("permissionDecision")
        if event == "PreToolUse" and permission in _PERMISSIONS:
            decision = permission
            reason = _text(specific.get("permissionDecisionReason")) or reason
        context = _text(specific.get("additionalContext"))
        if isinstance(specific.get("updatedInput"), dict):
            updated_input = specific["updatedInput"]
    return HookOutput(
        0,
        stdout,
        stderr,
        decision=decision,
        reason=reason,
        context=context,
        stop=answer.get("continue") is False,
        stop_reason=_text(answer.get("stopReason")),
        system_message=_text(answer.get("systemMessage")),
        updated_input=updated_input,
    )


@dataclass(frozen=True, slots=True)
class MergedOutcome:
    """Every matched hook of one event folded: the strictest decision (``deny`` (``block``) >
    ``ask`` > ``allow`` (``approve``) > ``none``), the reasons of the hooks that decided it
    (joined by a blank line), the first ``continue: false``, every context in hook order."""

    decision: Literal["deny", "ask", "allow", "none"] = "none"
    reason: str | None = None
    stop: bool = False
    stop_reason: str | None = None
    contexts: tuple[str, ...] = field(default=())


def merge_outputs(outputs: Sequence[HookOutput]) -> MergedOutcome:
    """Fold the answers of the hooks that ran for one event (in the order they ran)."""
    strictest = 0
    reasons: dict[int, list[str]] = {}
    stop = False
    stop_reason = None
    contexts: list[str] = []
    for output in outputs:
        rank = _RANK.get(output.decision, 0)
        strictest = max(strictest, rank)
        if output.reason:
            reasons.setdefault(rank, []).append(output.reason)
        if output.stop and not stop:
            stop, stop_reason = True, output.stop_reason
        if output.context:
            contexts.append(output.context)
    decision: Literal["deny", "ask", "allow", "none"] = ("none", "allow", "ask", "deny")[strictest]
    joined = "\n\n".join(reasons.get(strictest, [])) if strictest else ""
    return MergedOutcome(decision, joined or None, stop, stop_reason, tuple(contexts))
