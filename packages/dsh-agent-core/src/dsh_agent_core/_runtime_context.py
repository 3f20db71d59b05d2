"""The runtime-context snapshot: what the model is told of its session's current file policy
and approval policy, as a ``user/message`` the log keeps (the harness's ``snapshot`` form).

Before each step, when the session's knobs describe something other than the last snapshot it
logged, one new snapshot enters with the step (``Enter``), ahead of the step's own messages (the
prompt comes last, where the model answers it), so the model reads the policy of
*this* session — a resumed session's own, a child's ``never`` — and the request still rebuilds
from the log alone. Unchanged knobs add nothing.
"""

from __future__ import annotations

from typing import Any, Final
from weakref import WeakKeyDictionary

from dsh_agent import Enter, PreStepDecision, StepContext
from dsh_agent_core._permissions import logged_approval_policy, logged_sandbox_mode
from dsh_llm import PluginSource, TextBlock, UserMessage
from dsh_session import Session

__all__ = ["RUNTIME_CONTEXT_PLUGIN", "RuntimeContext", "runtime_context_sections"]

RUNTIME_CONTEXT_PLUGIN: Final = "dsh-runtime-context"
"""The plugin name on a snapshot's source (form ``snapshot``)."""

_HEADING = "The session's runtime context now (this replaces any earlier runtime context):"


def runtime_context_sections(
    mode: str | None, approval: str | None, workspace: str | None
) -> list[dict[str, str]]:
    """The ``sections`` of a snapshot: ``sandbox:policy`` and ``approval:policy`` sentences
    (a knob the session never set is left out)."""
    sections: list[dict[str, str]] = []
    if mode == "danger-full-access":
        text = "File policy: danger-full-access. Commands run without a sandbox."
    elif mode == "read-only":
        text = (
            "File policy: read-only. Commands may not change files (only $TMPDIR); if a needed "
            "change is refused, follow the refusal's escalation guidance."
        )
    elif mode == "workspace-write":
        where = f' "{workspace}"' if workspace else ""
        text = (
            f"File policy: workspace-write. Commands may change files only inside the session "
            f"workspace{where} and $TMPDIR; .git and .dsh stay read-only."
        )
    else:
        text = ""
    if text:
        sections.append({"name": "sandbox:policy", "text": text})
    if approval == "never":
        sections.append(
            {
                "name": "approval:policy",
                "text": "Approval policy: never. Anything that needs approval is refused: do "
                "not set `sandbox_permissions`.",
            }
        )
    elif approval == "ask":
        sections.append(
            {
                "name": "approval:policy",
                "text": "Approval policy: ask. An escalated command asks the user first; "
                "without anyone to ask it is refused.",
            }
        )
    return sections


def _snapshot_sections(data: Any) -> list[Any] | None:
    """The sections of ``data`` when it is one of our snapshots, else ``None``."""
    source = data.get("source") if isinstance(data, dict) else None
    if not (
        isinstance(source, dict)
        and source.get("plugin") == RUNTIME_CONTEXT_PLUGIN
        and source.get("form") == "snapshot"
    ):
        return None
    sections = source.get("sections")
    return sections if isinstance(sections, list) else []


class RuntimeContext:
    """The ``pre_step`` listener that keeps the snapshot current (never rejects a step).

    Each session's last snapshot is folded from the events appended since the previous step
    (the log is append-only), so a step never rereads the whole log.
    """

    def __init__(self) -> None:
        self._last: WeakKeyDictionary[Session, tuple[int, list[Any] | None, int | None, int]] = (
            WeakKeyDictionary()
        )

    def _last_snapshot(self, session: Session) -> list[Any] | None:
        seen, last, last_seq, generation = self._last.get(session, (0, None, None, 0))
        events = session.events
        for index in range(seen, len(events)):
            if events[index].type == "user/message":
                sections = _snapshot_sections(events[index].data)
                if sections is not None:
                    last, last_seq = sections, events[index].seq
        if generation != session.replace_generation:
            # a compaction replaced part of the surface: a snapshot it shadowed is gone
            generation = session.replace_generation
            if last_seq is not None and last_seq not in set(session.surface):
                last, last_seq = None, None
        self._last[session] = (len(events), last, last_seq, generation)
        return last

    def __call__(self, step: StepContext, decision: PreStepDecision) -> PreStepDecision | None:
        if not isinstance(decision, Enter):
            return None
        session = step.agent.session
        sections = runtime_context_sections(
            logged_sandbox_mode(session), logged_approval_policy(session), step.agent.cwd
        )
        if not sections or self._last_snapshot(session) == sections:
            return None
        text = "\n\n".join([_HEADING, *(section["text"] for section in sections)])
        source = PluginSource(plugin=RUNTIME_CONTEXT_PLUGIN, form="snapshot", sections=sections)
        snapshot = UserMessage(content=[TextBlock(text=text)], source=source)
        # Before the step's own messages: the model reads the context, then the prompt it
        # answers (after the prompt, a small model answered the context instead).
        return Enter((snapshot, *decision.messages))
