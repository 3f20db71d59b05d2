"""The loop's errors: one base, ``AgentLoopError``, each naming the session it is about."""

from __future__ import annotations

from dsh_agent import AgentClosedError
from dsh_llm import LlmFailure

__all__ = [
    "AgentBusyError",
    "AgentLoopError",
    "AgentNotFoundError",
    "ApprovalOutsideTurnError",
    "CheckpointError",
    "DuplicateAgentError",
    "LoggedConfigError",
    "LoopClosedError",
    "ModelFailedError",
    "NoModelError",
    "PersistenceNotConfiguredError",
    "RequestInvariantError",
    "ResumeOptionsError",
]


class AgentLoopError(Exception):
    """Base of every agent-loop error; ``session_id`` names the session concerned."""

    code = "AGENT_LOOP"

    def __init__(self, session_id: str, message: str) -> None:
        super().__init__(f"session {session_id!r}: {message}")
        self.session_id = session_id
        self.message = message


class ApprovalOutsideTurnError(AgentLoopError):
    """An approval was asked while no turn is open: the audit pair must sit inside a turn."""

    code = "APPROVAL_OUTSIDE_TURN"

    def __init__(self, session_id: str, tool_name: str) -> None:
        super().__init__(
            session_id,
            f"approval for tool {tool_name!r} asked outside a turn; approvals are asked only "
            "while a turn is open (nothing was logged)",
        )
        self.tool_name = tool_name


class PersistenceNotConfiguredError(AgentLoopError):
    """Resume (or a fork of a stored session) needs persistence, and the loop has none."""

    code = "NO_PERSISTENCE"

    def __init__(self, session_id: str, operation: str) -> None:
        super().__init__(
            session_id,
            f"cannot {operation}: session persistence is not configured for this loop "
            "(pass persistence= to AgentLoop)",
        )


class DuplicateAgentError(AgentLoopError):
    """An agent with this id is already live in this loop."""

    code = "DUPLICATE_AGENT"

    def __init__(self, session_id: str) -> None:
        super().__init__(
            session_id, "an agent with this id is already live in this loop; dispose of it first"
        )


class AgentBusyError(AgentLoopError):
    """Maintenance (a manual compaction) needs the agent idle, and it is running a turn, has
    work queued to wake it, or is already held by other maintenance."""

    code = "AGENT_BUSY"

    def __init__(self, session_id: str, why: str) -> None:
        super().__init__(session_id, f"the agent is busy: {why}")
        self.why = why


class AgentNotFoundError(AgentLoopError):
    """No live agent and no stored session has this id."""

    code = "AGENT_NOT_FOUND"

    def __init__(self, session_id: str) -> None:
        super().__init__(session_id, "no live agent and no stored session has this id")


class LoggedConfigError(AgentLoopError):
    """The log's last ``request/header`` holds a config this loop cannot continue from."""

    code = "LOGGED_CONFIG"

    def __init__(self, session_id: str, seq: int | None, problem: str) -> None:
        where = "its last request/header" if seq is None else f"request/header seq {seq}"
        super().__init__(session_id, f"{where} has a config that cannot be used: {problem}")


class ResumeOptionsError(AgentLoopError):
    """A resumed session's log names no model to continue with, and none was given."""

    code = "RESUME_OPTIONS"

    def __init__(self, session_id: str) -> None:
        super().__init__(
            session_id,
            "cannot resume: the log has no request/header to take provider and model from; "
            "pass options=AgentOptions(provider=..., model=...)",
        )


class LoopClosedError(AgentLoopError, AgentClosedError):
    """The loop (or the agent) was closed; nothing new can start (the agent seam's
    ``AgentClosedError``)."""

    code = "LOOP_CLOSED"


class ModelFailedError(AgentLoopError):
    """A model call failed and no ``request_error`` listener retried it; ``failure`` is what
    the model reported."""

    code = "MODEL_FAILED"

    def __init__(self, session_id: str, failure: LlmFailure) -> None:
        super().__init__(session_id, f"{failure.code}: {failure.message}")
        self.failure = failure


class NoModelError(AgentLoopError):
    """No model serves the provider a request is routed to."""

    code = "NO_MODEL"

    def __init__(self, session_id: str, provider: str, known: list[str]) -> None:
        super().__init__(
            session_id,
            f"no model serves provider {provider!r} (this loop serves: "
            f"{', '.join(repr(name) for name in known) or 'none'})",
        )
        self.provider = provider


class CheckpointError(AgentLoopError):
    """The session log could not be made durable at a checkpoint; the loop failed closed."""

    code = "CHECKPOINT_FAILED"

    def __init__(self, session_id: str, cause: BaseException) -> None:
        super().__init__(
            session_id,
            f"the session log could not be made durable ({type(cause).__name__}: {cause})",
        )
        self.cause = cause


class RequestInvariantError(AgentLoopError):
    """A loop-built request differs from what the session log alone rebuilds."""

    code = "REQUEST_INVARIANT"

    def __init__(self, session_id: str, seq: int, difference: str) -> None:
        super().__init__(
            session_id,
            f"the request built after seq {seq} is not what the log rebuilds: {difference}",
        )
        self.seq = seq
        self.difference = difference
