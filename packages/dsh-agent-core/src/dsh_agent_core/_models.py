"""Models from the configuration: one ``dsh_llm.Model`` per provider, built on first use."""

from __future__ import annotations

import itertools
import os
from collections.abc import AsyncIterator, Iterator, Mapping

from dsh_agent_core._config import Config, ProviderConfig
from dsh_llm import FinishChunk, FinishReason, LlmFailure, ModelRequest, StreamChunk
from dsh_llm.testing import text_response
from dsh_model_openai import OpenAICompatibleModel

__all__ = ["ProviderModel", "ScriptedReplies", "provider_models"]


class ScriptedReplies:
    """A keyless model that answers each request with the next of ``replies`` (cycling)."""

    def __init__(self, replies: tuple[str, ...]) -> None:
        self._replies: Iterator[str] = itertools.cycle(replies or ("",))

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        """Stream the next reply."""
        for chunk in text_response(next(self._replies)):
            yield chunk

    async def aclose(self) -> None:
        """Nothing to release."""


class ProviderModel:
    """The model of one configured provider. An ``openai-compatible`` provider reads its key
    from the environment when first asked and builds its client then; a missing key is an
    ``AUTH`` failure naming the variable, not an exception."""

    def __init__(
        self, name: str, config: ProviderConfig, env: Mapping[str, str] | None = None
    ) -> None:
        self.name = name
        self.config = config
        self._env: Mapping[str, str] = os.environ if env is None else env
        self._model: OpenAICompatibleModel | ScriptedReplies | None = None
        if config.kind == "scripted":
            self._model = ScriptedReplies(config.replies)

    def context_window(self, model: str) -> int | None:
        """What the configuration says of ``model``'s window (`dsh_llm.ModelInfo`)."""
        return self.config.window_of(model)

    def _failure(self, message: str, code: str) -> FinishChunk:
        return FinishChunk(
            reason=FinishReason(kind="error", error=LlmFailure(message=message, code=code))
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        """Stream ``request`` from this provider."""
        if self._model is None:
            config = self.config
            variable = config.api_key_env
            key = self._env.get(variable) if variable is not None else None
            if variable is not None and not key:
                yield self._failure(
                    f"provider {self.name!r}: the environment variable {variable} is not set "
                    "(it holds the API key)",
                    "AUTH",
                )
                return
            if not config.base_url:
                yield self._failure(f"provider {self.name!r} has no base_url", "BAD_REQUEST")
                return
            self._model = OpenAICompatibleModel(
                config.base_url,
                key,
                request.model,
                reasoning_replay=config.reasoning_replay,
                context_window=config.window_of(request.model),
            )
        async for chunk in self._model.stream(request):
            yield chunk

    async def aclose(self) -> None:
        """Release the provider's connections."""
        if self._model is not None:
            await self._model.aclose()

    def __repr__(self) -> str:
        return f"<ProviderModel {self.name!r} {self.config.kind}>"


def provider_models(
    config: Config, env: Mapping[str, str] | None = None
) -> dict[str, ProviderModel]:
    """A model for every provider the configuration can route to."""
    models: dict[str, ProviderModel] = {}
    for name in config.provider_names():
        provider = config.provider(name)
        assert provider is not None
        models[name] = ProviderModel(name, provider, env)
    return models
