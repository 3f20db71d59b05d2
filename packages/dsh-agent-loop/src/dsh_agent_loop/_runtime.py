"""``Runtime``: what every agent of one loop shares."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from dsh_agent import ApprovalPolicy, CheckpointPolicy, Extensions, RequestErrorListener
from dsh_agent_loop._errors import AgentLoopError
from dsh_llm import Model
from dsh_tools import ToolRegistry

__all__ = ["Runtime"]


@dataclass(slots=True)
class Runtime:
    """What every agent of one loop shares: models, tools, extensions and settings."""

    models: Mapping[str, Model]
    default_model: Model | None
    tools: ToolRegistry
    extensions: Extensions
    checkpoints: CheckpointPolicy
    retry: RequestErrorListener | None
    max_parallel_tools: int
    max_steps_per_turn: int | None
    check_requests: bool
    approval_policy: ApprovalPolicy = "ask"
    invariant_failures: list[AgentLoopError] = field(default_factory=list)
