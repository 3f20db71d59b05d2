"""Routes (``provider:model``, or a provider alone): whether a route can be called as
configured, which model a provider-only route means, and the agent options of a route."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from dsh_agent import AgentOptions
from dsh_agent_core._config import Config
from dsh_agent_core._errors import DshError
from dsh_agent_core._models import ProviderModel, ProviderQueryError
from dsh_agent_core._provider_config import parse_route, split_route
from dsh_llm import Model

__all__ = ["Routes"]


class Routes:
    """The routes of one harness. ``models``: every model by provider name;
    ``provider_models``: the configured providers' own models; ``overridden``: the providers
    whose model an application replaced (asked nothing, needing no key); ``env``: where API
    key variables are looked up."""

    def __init__(
        self,
        config: Config,
        models: Mapping[str, Model],
        provider_models: Mapping[str, ProviderModel],
        overridden: Collection[str],
        env: Mapping[str, str],
    ) -> None:
        self._config = config
        self._models = models
        self._provider_models = provider_models
        self._overridden = overridden
        self._env = env

    def options(self, route: str | None, *, reasoning_effort: str | None = None) -> AgentOptions:
        """Agent options for ``route`` (``provider:model``; default: the config's ``model``)."""
        provider, model = parse_route(route or self._config.model)
        if provider not in self._models:
            raise DshError(
                f"model {provider}:{model}: no provider {provider!r} is configured (known: "
                f"{', '.join(sorted(self._models))})"
            )
        return AgentOptions(
            provider=provider,
            model=model,
            max_tokens=self._config.max_tokens,
            reasoning_effort=reasoning_effort,
        )

    def check(self, route: str | None) -> None:
        """Raise :class:`DshError` when ``route``'s provider cannot be called as configured (an
        API key variable that is not set). ``route`` may leave out its model."""
        route = route or self._config.model
        provider, _ = split_route(route)
        self._known_provider(provider, route)
        model = self._provider_models.get(provider)
        if model is None or provider in self._overridden:
            return
        variable = model.config.api_key_env
        if model.config.kind == "openai-compatible" and variable and not self._env.get(variable):
            raise DshError(
                f"model {route}: the environment variable {variable} "
                "is not set (it holds the provider's API key)"
            )

    def _known_provider(self, provider: str, route: str) -> None:
        if provider not in self._models:
            raise DshError(
                f"model {route}: no provider {provider!r} is configured (known: "
                f"{', '.join(sorted(self._models))})"
            )

    async def resolve(self, route: str | None) -> str:
        """``route`` (default: the config's ``model``) as ``provider:model``: a route that
        names only its provider asks the provider's server once which models it serves; the
        one it serves is the model, anything else raises :class:`DshError` saying how to name
        one."""
        route = route or self._config.model
        provider, model = split_route(route)
        if model is not None:
            return route
        self._known_provider(provider, route)
        source = self._provider_models.get(provider)
        how = f"name one as {provider}:MODEL (dsh run --model {provider}:MODEL)"
        if source is None or provider in self._overridden:
            raise DshError(f"model {route}: no model named; {how}")
        try:
            served = await source.served_models()
        except ProviderQueryError as error:
            raise DshError(
                f"model {route}: no model named, and the provider could not be asked which "
                f"it serves ({error.reason}); {how}"
            ) from None
        where = source.config.base_url or provider
        if not served:
            raise DshError(f"model {route}: {where} serves no model; {how}")
        if len(served) > 1:
            listed = ", ".join(served)
            raise DshError(
                f"model {route}: {where} serves {len(served)} models ({listed}); name one, "
                f"as in dsh run --model {provider}:{served[0]}"
            )
        return f"{provider}:{served[0]}"
