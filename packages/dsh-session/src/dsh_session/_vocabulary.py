"""The event type vocabulary of format v0: core, plugin, surface."""

from __future__ import annotations

CORE_EVENT_TYPES: frozenset[str] = frozenset(
    {
        "turn/start",
        "turn/end",
        "step/start",
        "step/end",
        "user/message",
        "assistant/chunk",
        "assistant/message",
        "tool/call",
        "tool/result",
        "request/header",
        "request/context",
        "session/end-seed",
        "session/title",
        "hook/invoked",
        "hook/result",
    }
)
"""The core event types of format v0: each has a typed event class."""

PLUGIN_EVENT_TYPES: frozenset[str] = frozenset(
    {
        "agent/inbox/spliced",
        "agent-preset/selected",
        "approval/asked",
        "approval/decided",
        "approval/policy",
        "command/run",
        "command/done",
        "compaction/start",
        "compaction/end",
        "compaction/summary",
        "compaction/prune",
        "feedback/record",
        "goal/change",
        "llm/retry",
        "llm/retry-started",
        "permission/preset",
        "plan/mode",
        "sandbox/mode",
        "schedule/change",
        "session/title-llm-request",
        "subagent/descriptor",
        "team/member",
        "team/task",
        "team/message/queued",
        "team/message/delivered",
        "todo/write",
        "tool/code-dispatch-start",
        "tool/code-dispatch",
        "tool-workflow/run-start",
        "tool-workflow/run-end",
        "tool-workflow/agent-start",
        "tool-workflow/agent-end",
        "web/deepseek-search-llm-request",
    }
)
"""The plugin event types the TypeScript harness writes: known, kept as opaque data."""

SURFACE_EVENT_TYPES: frozenset[str] = frozenset(
    {"user/message", "assistant/message", "tool/result"}
)
"""The surface-eligible types of format v0: they carry ``surfaceOp``."""


LEGACY_EVENT_TYPES: frozenset[str] = frozenset(
    {"steering/message", "compact/start", "compact/summary", "compact/end", "compact/prune"}
)
"""Types only old logs hold: ``steering/message`` (before the harness's react-loop change, its
bug-fix note of 2026-08-04) and ``compact/*`` (before its rename to ``compaction/*`` of
2026-08-13): known, read through a projection (:func:`~dsh_session.project_stored_event`), never
appended."""


def is_known_event_type(type: str) -> bool:
    """Whether ``type`` is a core, plugin or legacy event type of format v0 (anything else is
    unknown). A write open refuses a log holding an unknown type not marked ``ignorable``."""
    return type in CORE_EVENT_TYPES or type in PLUGIN_EVENT_TYPES or type in LEGACY_EVENT_TYPES
