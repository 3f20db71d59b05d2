"""The DSH agent seam: what an agent is, and where a loop lets plugins in.

- ``Agent``: one session driven by a model in turns; ``send`` (``followup``/``steer``/
  ``inject``), ``cancel``, ``wait_idle``; ``calling_agent`` finds the agent behind a tool call.
- ``AgentOptions`` (the route and limits an agent asks for) and ``RequestConfig`` (one
  request's logged ``config``).
- ``Extensions``: the loop's ordered, disposable extension points (``session_start``,
  ``session_prefix``, ``pre_step``, ``turn_stopping``, ``request``, ``request_error``) with their
  contexts and decisions.
- ``CheckpointPolicy``: when the log must be durable.
- The approval seam: ``ApprovalRequest``, ``ApprovalOutcome`` (``allowed-once | rejected |
  cancelled | unavailable``), ``ApprovalPolicy`` (``ask | never``) and ``ApprovalAnswerer``
  (registered on ``Extensions.approval``).

- ``AgentClosedError``: what anything closed raises when asked to start more.

Contracts only: the loop itself is ``dsh-agent-loop``.
"""

from dsh_agent._agent import (
    Agent,
    AgentStatus,
    CancelCause,
    CancelKind,
    Incoming,
    SendTarget,
    calling_agent,
)
from dsh_agent._approval import (
    APPROVAL_OUTCOMES,
    APPROVAL_POLICIES,
    ApprovalAnswerer,
    ApprovalOutcome,
    ApprovalPolicy,
    ApprovalRequest,
)
from dsh_agent._approval_policy import logged_approval_policy
from dsh_agent._checkpoint import CheckpointPoint, CheckpointPolicy, Flush
from dsh_agent._errors import AgentClosedError
from dsh_agent._extensions import (
    Enter,
    Extensions,
    Fail,
    Listeners,
    PrefixNext,
    PreStepDecision,
    PreStepListener,
    Reject,
    RequestError,
    RequestErrorDecision,
    RequestErrorListener,
    RequestListener,
    Retry,
    SessionPrefixListener,
    SessionStartListener,
    SessionStartSource,
    StepContext,
    TurnStopping,
    TurnStoppingListener,
)
from dsh_agent._options import AgentOptions, RequestConfig

__all__ = [
    "APPROVAL_OUTCOMES",
    "APPROVAL_POLICIES",
    "Agent",
    "AgentClosedError",
    "AgentOptions",
    "AgentStatus",
    "ApprovalAnswerer",
    "ApprovalOutcome",
    "ApprovalPolicy",
    "ApprovalRequest",
    "CancelCause",
    "CancelKind",
    "CheckpointPoint",
    "CheckpointPolicy",
    "Enter",
    "Extensions",
    "Fail",
    "Flush",
    "Incoming",
    "Listeners",
    "PreStepDecision",
    "PreStepListener",
    "PrefixNext",
    "Reject",
    "RequestConfig",
    "RequestError",
    "RequestErrorDecision",
    "RequestErrorListener",
    "RequestListener",
    "Retry",
    "SendTarget",
    "SessionPrefixListener",
    "SessionStartListener",
    "SessionStartSource",
    "StepContext",
    "TurnStopping",
    "TurnStoppingListener",
    "calling_agent",
    "logged_approval_policy",
]
