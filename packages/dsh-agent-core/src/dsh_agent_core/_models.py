"""Models from the configuration: one ``dsh_llm.Model`` per provider, built on first use, that
knows each model's context window (the configuration, the catalog, else its server's answer)."""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from dsh_agent_core._catalog import catalog_model
from dsh_agent_core._config import Config
from dsh_agent_core._errors import DshError
from dsh_agent_core._provider_config import EnvRef, ProviderConfig, header_value_ok
from dsh_agent_core._served import SERVED_MODELS_TIMEOUT
from dsh_llm import FailureCode, FinishChunk, FinishReason, LlmFailure, ModelRequest, StreamChunk
from dsh_llm.testing import text_response

if TYPE_CHECKING:
    from dsh_model_openai import OpenAICompatibleModel

__all__ = [
    "SCRIPTED_MODEL",
    "SERVED_MODELS_TIMEOUT",
    "ProviderModel",
    "ProviderQueryError",
    "ScriptedReplies",
    "provider_models",
]

SCRIPTED_MODEL = "scripted"
"""The model a scripted provider lists (it answers any model name)."""


class ProviderQueryError(DshError):
    """A provider could not say what it serves: ``provider`` names it, ``reason`` says why in a
    few words (``key not set (DEEPSEEK_API_KEY)``, the unreachable URL and the error, no
    answer in time), without the key; ``key_missing`` is true when no request was made for want
    of a key."""

    def __init__(self, provider: str, reason: str, *, key_missing: bool = False) -> None:
        super().__init__(f"provider {provider!r}: {reason}")
        self.provider = provider
        self.reason = reason
        self.key_missing = key_missing


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
        self._with_tools: OpenAICompatibleModel | None = None  # sends tool_choice
        if config.kind == "scripted":
            self._model = ScriptedReplies(config.replies)

    def context_window(self, model: str) -> int | None:
        """The window of ``model`` in tokens (`dsh_llm.ModelInfo`): the configuration's
        (``context_windows``, else ``context_window``), else the catalog's for a provider
        served at a built-in base URL, else what its server said when
        :meth:`discover_context_window` asked; ``None`` when nothing says it. A smaller window
        that the server stated when it refused a request for its size wins over all of these
        (a configured window that is too large would otherwise overflow every turn, and the
        summary request that should recover it)."""
        window = self.config.window_of(model)
        if window is None:
            listed = catalog_model(self.config.base_url, model)
            window = listed.context_window if listed is not None else None
        # an adapter that is neither None nor scripted is an OpenAICompatibleModel: its module
        # (and httpx) is imported when the first one is built, not before
        if window is None and not isinstance(self._model, ScriptedReplies | None):
            window = self._model.context_window(model)
        for adapter in (self._model, self._with_tools):
            stated = (
                adapter.overflow_window(model)
                if not isinstance(adapter, ScriptedReplies | None)
                else None
            )
            if stated is not None and (window is None or stated < window):
                window = stated  # the server just enforced it: it wins over a larger claim
        return window

    def max_output(self, model: str) -> int | None:
        """The most tokens ``model`` answers with, from the catalog (``None``: unknown)."""
        listed = catalog_model(self.config.base_url, model)
        return listed.max_output if listed is not None else None

    async def discover_context_window(self, model: str) -> int | None:
        """The window of ``model``, asking its server once when neither the configuration nor
        the catalog says it (``GET /v1/models``, llama.cpp's ``/props``, Ollama's
        ``/api/show``; see `dsh_model_openai.OpenAICompatibleModel`). Never raises: a scripted
        provider, a missing key or a server that says nothing gives ``None``."""
        known = self.context_window(model)
        if known is not None or self.config.kind == "scripted":
            return known
        adapter = self._adapter(model)
        if isinstance(adapter, ScriptedReplies | FinishChunk):
            return None
        return await adapter.discover_context_window(model)

    async def served_models(self, within: float = SERVED_MODELS_TIMEOUT) -> list[str]:
        """The model ids the provider's server lists (``GET <base_url>/models``), asked within
        ``within`` seconds; a scripted provider lists `SCRIPTED_MODEL` without a request.
        Raises :class:`ProviderQueryError` saying why when it cannot be asked: a key variable
        that is not set (no request is made), no ``base_url``, an unreachable server, a refusal
        or an answer that is not a model list, or no answer in time."""
        if self.config.kind == "scripted":
            return [SCRIPTED_MODEL]
        variable = self.config.api_key_env
        if variable is not None and not self._env.get(variable):
            raise ProviderQueryError(self.name, f"key not set ({variable})", key_missing=True)
        adapter = self._adapter("served-models")  # only the adapter's default model name
        if isinstance(adapter, FinishChunk):
            failure = adapter.reason.error
            raise ProviderQueryError(self.name, failure.message if failure else "unusable")
        assert not isinstance(adapter, ScriptedReplies)
        from dsh_model_openai import ServerQueryError  # imported by _adapter already

        try:
            async with asyncio.timeout(within):
                return await adapter.served_models()
        except ServerQueryError as error:
            refused = error.status in (401, 403)
            why = f"{error} ({self._key_source()})" if refused else str(error)
            raise ProviderQueryError(self.name, why) from None
        except TimeoutError:
            raise ProviderQueryError(
                self.name, f"{self.config.base_url} did not answer within {within:g}s"
            ) from None

    def _failure(self, message: str, code: FailureCode) -> FinishChunk:
        return FinishChunk(
            reason=FinishReason(kind="error", error=LlmFailure(message=message, code=code))
        )

    def _adapter(self, model: str) -> OpenAICompatibleModel | ScriptedReplies | FinishChunk:
        """The provider's client, built on first use (a failure when it cannot be)."""
        if self._model is not None:
            return self._model
        config = self.config
        variable = config.api_key_env
        key = self._env.get(variable) if variable is not None else None
        if variable is not None and not key:
            return self._failure(
                f"provider {self.name!r}: the environment variable {variable} is not set "
                "(it holds the API key)",
                FailureCode.AUTH,
            )
        if not config.base_url:
            return self._failure(f"provider {self.name!r} has no base_url", FailureCode.BAD_REQUEST)
        headers: dict[str, str] = {}
        for header, value in config.headers.items():
            if isinstance(value, EnvRef):
                found = self._env.get(value.env)
                if not found:
                    return self._failure(
                        f"provider {self.name!r}: the environment variable {value.env} is not "
                        f"set (it holds the {header} header, providers.{self.name}.headers)",
                        FailureCode.AUTH,
                    )
                if not header_value_ok(found):
                    return self._failure(
                        f"provider {self.name!r}: the environment variable {value.env} (the "
                        f"{header} header) is not printable ASCII on one line",
                        FailureCode.BAD_REQUEST,
                    )
                headers[header] = found
            else:
                headers[header] = value
        options: dict[str, Any] = {
            "reasoning_replay": config.reasoning_replay,
            "headers": headers,
            "extra_body": config.extra_body,
        }
        if config.timeout is not None:
            options["read_timeout"] = config.timeout
        from dsh_model_openai import OpenAICompatibleModel  # httpx: with the first client only

        # no window here: this object says each model's own (the configuration's, the
        # catalog's), and the adapter only what the server answers
        self._model = OpenAICompatibleModel(config.base_url, key, model, **options)
        if config.tool_choice is not None:
            # tool_choice goes only with a request that offers tools (a server refuses it
            # without them: a compaction summary offers none)
            body = {**config.extra_body, "tool_choice": config.tool_choice}
            options["extra_body"] = body
            self._with_tools = OpenAICompatibleModel(config.base_url, key, model, **options)
        return self._model

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        """Stream ``request`` from this provider."""
        adapter = self._adapter(request.model)
        if isinstance(adapter, FinishChunk):
            yield adapter
            return
        if request.tools and self._with_tools is not None:
            adapter = self._with_tools
        async for chunk in adapter.stream(request):
            yield self._named_key(chunk)

    def _key_source(self) -> str:
        """Where this provider's key comes from, for a refusal of it."""
        variable = self.config.api_key_env
        if variable is not None:
            return f"provider {self.name!r} sends the key in ${variable}"
        for header, value in self.config.headers.items():
            if header.lower() in ("authorization", "api-key", "x-api-key"):
                source = f"${value.env}" if isinstance(value, EnvRef) else "the config"
                return f"provider {self.name!r} sends the {header} header from {source}"
        return f"provider {self.name!r} sends no key (set providers.{self.name}.api_key_env)"

    def _named_key(self, chunk: StreamChunk) -> StreamChunk:
        """An ``AUTH`` refusal from the server, told where this provider's key came from (the
        server cannot know: the variable, or that the provider sends none)."""
        if not isinstance(chunk, FinishChunk) or chunk.reason.error is None:
            return chunk
        failure = chunk.reason.error
        if failure.code != FailureCode.AUTH:
            return chunk
        named = failure.model_copy(update={"message": f"{failure.message} ({self._key_source()})"})
        return chunk.model_copy(update={"reason": chunk.reason.model_copy(update={"error": named})})

    async def aclose(self) -> None:
        """Release the provider's connections."""
        if self._model is not None:
            await self._model.aclose()
        if self._with_tools is not None:
            await self._with_tools.aclose()

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
