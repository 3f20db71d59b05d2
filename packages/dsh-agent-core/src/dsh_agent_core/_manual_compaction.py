"""Compacting an idle session by hand (``dsh sessions compact``, ``/compact``): the agent held
idle meanwhile, and a failure as the one sentence a shell user reads, by its code."""

from __future__ import annotations

from dsh_agent_core._errors import DshError
from dsh_agent_loop import AgentBusyError, LoopAgent
from dsh_compaction import CompactionError, CompactionResult, Compactor

__all__ = ["compact_held", "compaction_failure"]

_COMPACTION_FAILURES: dict[str, str] = {
    "busy": "another compaction or a turn of it is in progress; try again once it is idle",
    "summary": "the model's summary failed ({detail}); the conversation is unchanged and the "
    "attempt is logged",
    "changed": "the conversation changed while the summary was written; it is unchanged and "
    "the attempt is logged",
    "commit": "the checkpoint could not be logged whole and may be partly logged ({detail}); "
    "inspect the session with dsh sessions show",
    "persistence": "it was compacted but not saved: the log could not be made durable ({detail})",
    "config": "compaction is not configured for its model ({detail})",
}


def compaction_failure(error: CompactionError) -> str:
    """The one sentence a shell user reads for a failed compaction, by its code."""
    template = _COMPACTION_FAILURES.get(error.code, "the compaction failed ({detail})")
    detail = error.message
    if error.code == "summary" and error.failure_code is not None:
        detail = f"{error.failure_code}: {detail}"
    return f"session {error.session_id!r} was not compacted: " + template.format(detail=detail)


async def compact_held(compactor: Compactor, agent: LoopAgent) -> CompactionResult | None:
    """Compact ``agent`` now, held idle meanwhile (``None``: nothing to compact yet). Raises
    :class:`DshError` with one sentence when it is busy or the compaction failed."""
    try:
        async with agent.maintenance():
            return await compactor.compact_now(agent, flush=agent.flush)
    except AgentBusyError as error:
        raise DshError(
            f"session {agent.id!r} cannot be compacted now: {error.why}; try again once it is idle"
        ) from None
    except CompactionError as error:
        raise DshError(compaction_failure(error)) from error
