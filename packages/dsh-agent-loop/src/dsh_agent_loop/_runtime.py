"""``Runtime``: what every agent of one loop shares."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from dsh_agent import (
    ApprovalPolicy,
    CheckpointPolicy,
    Extensions,
    RequestConfig,
    RequestErrorListener,
)
from dsh_agent_loop._errors import AgentLoopError
from dsh_llm import Model, context_window_of
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

    def model_for(self, provider: str) -> Model | None:
        """The model serving ``provider`` (the default model when none is named for it)."""
        return self.models.get(provider, self.default_model)

    def window_of(self, config: RequestConfig) -> int | None:
        """The context window the routed model reports for ``config`` (``None``: unknown, or a
        model that reports nonsense, which is logged and treated as unknown)."""
        model = self.model_for(config.provider)
        if model is None:
            return None
        try:
            return context_window_of(model, config.model)
        except ValueError as error:
            logging.getLogger("dsh_agent_loop").warning("%s", error)
            return None
