"""The DSH agent loop: turns and steps of model calls and tool calls over a durable session log.

- ``AgentLoop(model, tools, *, persistence=None, extensions=None, checkpoints=None, ...)``:
  ``create``, ``resume`` and ``fork`` agents; ``aclose`` closes them all.
- ``LoopAgent``: the live agent (``dsh_agent.Agent``): ``followup``/``steer``/``inject``,
  ``cancel``, ``wait_idle``, ``maintenance`` (hold it idle between turns), ``aclose``.
- ``FlushPolicy`` (the default checkpoints) and ``RetryPolicy`` (the default retries).
- ``request_from_log`` and ``check_request``: every request rebuilt from the log alone.
- Approvals: a call that needs one (a hook's ``Ask``, a tool's ``approval_reason``) is asked
  through ``LoopAgent.request_approval``, audited as ``approval/asked`` → ``approval/decided``
  inside the turn; ``effective_approval_policy`` reads a session's policy.
"""

from dsh_agent_loop._agent import LoopAgent
from dsh_agent_loop._approval import effective_approval_policy
from dsh_agent_loop._checkpoints import ALL_CHECKPOINTS, FlushPolicy
from dsh_agent_loop._errors import (
    AgentBusyError,
    AgentLoopError,
    AgentNotFoundError,
    ApprovalOutsideTurnError,
    CheckpointError,
    DuplicateAgentError,
    LoggedConfigError,
    LoopClosedError,
    ModelFailedError,
    NoModelError,
    PersistenceNotConfiguredError,
    RequestInvariantError,
    ResumeOptionsError,
)
from dsh_agent_loop._loop import AgentLoop
from dsh_agent_loop._reconstruct import check_request, request_from_log
from dsh_agent_loop._retry import DEFAULT_RETRY_CODES, RetryPolicy

__all__ = [
    "ALL_CHECKPOINTS",
    "DEFAULT_RETRY_CODES",
    "AgentBusyError",
    "AgentLoop",
    "AgentLoopError",
    "AgentNotFoundError",
    "ApprovalOutsideTurnError",
    "CheckpointError",
    "DuplicateAgentError",
    "FlushPolicy",
    "LoggedConfigError",
    "LoopAgent",
    "LoopClosedError",
    "ModelFailedError",
    "NoModelError",
    "PersistenceNotConfiguredError",
    "RequestInvariantError",
    "ResumeOptionsError",
    "RetryPolicy",
    "check_request",
    "effective_approval_policy",
    "request_from_log",
]
