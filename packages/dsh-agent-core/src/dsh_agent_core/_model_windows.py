"""Knowing the window of every routed model before compaction needs it: a ``pre_step`` listener
that asks a model's server once (when neither the configuration nor the catalog says it), and
the sentence the one notice per session names the config key with when nothing says it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping

from dsh_agent import PreStepDecision, StepContext
from dsh_agent_core._config import CONFIG_FILE_NAME, Config
from dsh_llm import Model, context_window_of

__all__ = ["DISCOVERY_TIMEOUT", "WindowDiscovery", "missing_window_hint"]

_log = logging.getLogger("dsh_agent_core")

DISCOVERY_TIMEOUT = 15.0
"""The longest a step waits, once per model, for its server to say its window (seconds)."""


class WindowDiscovery:
    """A ``pre_step`` listener, mounted before compaction's: before the first step routed to a
    model whose window neither the configuration nor the catalog gives, the model is asked to
    discover it (``discover_context_window(model)``, as `ProviderModel` and
    `dsh_model_openai.OpenAICompatibleModel` do), once per model for the harness's life and
    within :data:`DISCOVERY_TIMEOUT`. It never rejects a step and never raises: a server that
    says nothing leaves the window unknown."""

    def __init__(self, models: Mapping[str, Model], *, timeout: float = DISCOVERY_TIMEOUT) -> None:
        self._models = models
        self._timeout = timeout
        self._asked: set[tuple[str, str]] = set()
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}

    async def __call__(self, step: StepContext, decision: PreStepDecision) -> None:
        agent = step.agent
        routes = [(agent.options.provider, agent.options.model)]
        header = agent.session.request_header
        if header is not None:  # the route compaction reads: the latest logged one
            routes.append((str(header.config["provider"]), str(header.config["model"])))
        for route in dict.fromkeys(routes):
            await self._discover(*route)

    async def _discover(self, provider: str, model: str) -> None:
        key = (provider, model)
        if key in self._asked:
            return
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            if key in self._asked:
                return
            serving = self._models.get(provider)
            ask = getattr(serving, "discover_context_window", None)
            try:
                if callable(ask) and context_window_of(serving, model) is None:
                    async with asyncio.timeout(self._timeout):
                        await ask(model)
            except TimeoutError:
                _log.info("model %s:%s: its server did not say its window in time", *key)
            except Exception as error:  # a model's own bug never stops a step
                _log.warning("model %s:%s: asking for its window failed: %s", *key, error)
            self._asked.add(key)


def missing_window_hint(config: Config) -> Callable[[str, str], str | None]:
    """How to give ``provider:model`` a window, named by its config key (``None`` for a
    scripted provider: its sessions are compacted by hand only, and nothing is said)."""
    where = config.source or str(config.home() / CONFIG_FILE_NAME)

    def hint(provider: str, model: str) -> str | None:
        settings = config.provider(provider)
        if settings is None:
            return "give it a model that reports context_window (dsh_llm.ModelInfo)"
        if settings.kind == "scripted":
            return None
        return (
            f'set [providers.{provider}] context_windows = {{ "{model}" = TOKENS }} '
            f"(or context_window = TOKENS for all its models) in {where}"
        )

    return hint
