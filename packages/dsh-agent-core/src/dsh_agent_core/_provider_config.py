"""What the configuration says of providers and models: routes (``provider:model``), a
provider's table (``[providers.NAME]``, with its headers and extra request fields checked), the
built-in providers, and one model's table and resolved facts."""

from __future__ import annotations

import math
import re
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
)

from dsh_agent_core._catalog import ModelPrices
from dsh_agent_core._errors import ConfigError

__all__ = [
    "BUILTIN_PROVIDERS",
    "LLAMA_CPP_URL",
    "STRICT",
    "EnvRef",
    "ModelConfig",
    "ModelFacts",
    "ProviderConfig",
    "header_value_ok",
    "parse_route",
    "split_route",
]

STRICT = ConfigDict(extra="forbid", frozen=True)
"""The rule of every configuration table: no unknown key, nothing changed after loading."""


def parse_route(route: str, *, where: str = "model") -> tuple[str, str]:
    """``"provider:model"`` as ``(provider, model)``; raises :class:`ConfigError` naming
    ``where`` when it is not of that form."""
    provider, sep, model = route.partition(":")
    if not sep or not provider.strip() or not model.strip():
        raise ConfigError(where, f"{route!r} is not of the form provider:model")
    return provider.strip(), model.strip()


def split_route(route: str, *, where: str = "model") -> tuple[str, str | None]:
    """A route that may leave out its model: ``"provider:model"`` as ``(provider, model)``
    (split at the first colon, so ``"ollama:qwen2.5-coder:7b"`` names the model
    ``qwen2.5-coder:7b``), a bare ``"provider"`` as ``(provider, None)``: the model is then the
    one the provider's server serves. Raises :class:`ConfigError` naming ``where`` for an empty
    provider or an empty model after the colon."""
    if ":" in route:
        return parse_route(route, where=where)
    if not route.strip():
        raise ConfigError(where, f"{route!r} is not of the form provider:model (or provider)")
    return route.strip(), None


class EnvRef(BaseModel):
    """A value read from the environment variable ``env`` when it is used, never written in
    the configuration: ``Authorization = { env = "LLM_AUTH" }`` in a provider's ``headers``.
    The variable's value is used verbatim (put the whole ``Bearer …`` in it)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    env: str = Field(min_length=1, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """The environment variable's name."""


_REQUEST_FIELDS = frozenset({"model", "messages", "tools", "stream", "stream_options"})
"""The body fields every request sets itself (``extra_body`` may not)."""

_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


def header_value_ok(value: str) -> bool:
    """Whether ``value`` can be sent as an HTTP header value: printable ASCII and tabs."""
    return all(char == "\t" or " " <= char <= "~" for char in value)


def _json_only(value: Any, where: str) -> None:
    """Refuse a TOML value that has no JSON form (a date or time), naming where it is."""
    if isinstance(value, dict):
        for key, item in value.items():
            _json_only(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _json_only(item, f"{where}[{index}]")
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where}: {value!r} has no JSON form")
    elif not (value is None or isinstance(value, str | int | float | bool)):
        raise ValueError(f"{where}: a {type(value).__name__} has no JSON form")


class ProviderConfig(BaseModel):
    """A model provider. ``openai-compatible`` speaks Chat Completions at ``base_url`` with the
    key read from the environment variable ``api_key_env`` (the key itself is never in the
    config); ``scripted`` is the keyless model of ``dsh demo`` and tests, answering each request
    with the next of ``replies`` (cycling). ``extra_body``, ``headers``, ``timeout`` and
    ``tool_choice`` shape every request an ``openai-compatible`` provider sends."""

    model_config = STRICT

    kind: Literal["openai-compatible", "scripted"] = "openai-compatible"
    base_url: str | None = None
    api_key_env: str | None = None
    reasoning_replay: Literal["current-turn", "never", "always"] = "current-turn"
    replies: tuple[str, ...] = ("Hello from the scripted model.",)
    context_window: int | None = Field(default=None, gt=0)
    """The window in tokens of this provider's models (``None``: unknown)."""
    context_windows: dict[str, int] = Field(default_factory=dict)
    """Per model name, overriding ``context_window`` (``{"deepseek-v4-flash" = 65536}``)."""

    @field_validator("context_windows")
    @classmethod
    def _positive_windows(cls, windows: dict[str, int]) -> dict[str, int]:
        for name, window in windows.items():
            if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
                raise ValueError(f"{name}: {window!r} is not a positive number of tokens")
        return windows

    def window_of(self, model: str) -> int | None:
        """The context window of ``model``: its own entry, else the provider's."""
        return self.context_windows.get(model, self.context_window)

    extra_body: dict[str, Any] = Field(default_factory=dict)
    """Fields added to every request body (``{ top_k = 20 }``, ``{ chat_template_kwargs = {…} }``);
    the fields dsh sets itself are refused."""
    headers: dict[str, str | EnvRef] = Field(default_factory=dict)
    """HTTP headers sent with every request: a literal string, or ``{ env = "VAR" }`` for a
    secret read from the environment when the provider is first used (never shown)."""
    timeout: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """The read timeout in seconds: the longest silence allowed while waiting for the answer's
    next bytes, the first included (default: 300)."""
    tool_choice: Literal["auto", "none", "required"] | dict[str, Any] | None = None
    """Sent as ``tool_choice`` with every request that offers tools: ``"auto"``, ``"none"``,
    ``"required"``, or a table (``{ type = "function", function = { name = "bash" } }``)."""

    @field_validator("extra_body")
    @classmethod
    def _extra_fields(cls, body: dict[str, Any]) -> dict[str, Any]:
        for key, value in body.items():
            if key in _REQUEST_FIELDS:
                raise ValueError(f"{key}: dsh sets this field of every request itself")
            if key == "tool_choice":
                raise ValueError("tool_choice: set it with the provider's tool_choice key")
            _json_only(value, key)
        return body

    @field_validator("headers")
    @classmethod
    def _header_names(cls, headers: dict[str, str | EnvRef]) -> dict[str, str | EnvRef]:
        for name, value in headers.items():
            if not _HEADER_NAME.fullmatch(name):
                raise ValueError(f"{name!r} is not an HTTP header name")
            if isinstance(value, str) and not header_value_ok(value):
                raise ValueError(f"{name}: a header value is printable ASCII on one line")
        return headers

    @field_validator("tool_choice")
    @classmethod
    def _choice_table(cls, choice: Any) -> Any:
        if isinstance(choice, dict):
            if not isinstance(choice.get("type"), str):
                raise ValueError(
                    'a tool_choice table needs a type, as in { type = "function", '
                    'function = { name = "bash" } }'
                )
            _json_only(choice, "tool_choice")
        return choice

    @field_validator("api_key_env")
    @classmethod
    def _names_a_variable(cls, name: str | None) -> str | None:
        if name is not None and (not name or not name.replace("_", "").isalnum()):
            raise ValueError(f"{name!r} is not an environment variable name")
        return name


LLAMA_CPP_URL = "http://127.0.0.1:8080/v1"
"""llama.cpp's ``llama-server`` on its default port."""

BUILTIN_PROVIDERS: dict[str, ProviderConfig] = {
    "deepseek": ProviderConfig(base_url="https://api.deepseek.com", api_key_env="DEEPSEEK_API_KEY"),
    "openai": ProviderConfig(base_url="https://api.openai.com/v1", api_key_env="OPENAI_API_KEY"),
    "scripted": ProviderConfig(kind="scripted"),
    # local servers on their default ports; no key is sent
    "llamacpp": ProviderConfig(base_url=LLAMA_CPP_URL),
    "ollama": ProviderConfig(base_url="http://127.0.0.1:11434/v1"),
    "vllm": ProviderConfig(base_url="http://127.0.0.1:8000/v1"),
    "local": ProviderConfig(base_url=LLAMA_CPP_URL),
}
"""Providers every config has unless it redefines them (a ``[providers.NAME]`` table of the
same name is laid over the built-in one): ``deepseek`` and ``openai`` (keys from
``DEEPSEEK_API_KEY`` and ``OPENAI_API_KEY``), ``scripted``, and the keyless local servers
``llamacpp`` (``llama-server``, port 8080), ``ollama`` (11434) and ``vllm`` (8000), and
``local``: llama.cpp's address until ``[providers.local] base_url`` points it elsewhere."""


class ModelConfig(BaseModel):
    """``[models."provider:model"]``: what the configuration says of one routed model.
    ``prices`` (USD per million tokens: ``input``, ``cached_input``, ``output``) replace the
    catalog's list prices of a built-in provider's model, or give a model its prices.
    ``images = true`` says the model takes images in the user's messages (nothing tells dsh
    otherwise, so a model is taken to read text only unless this says so)."""

    model_config = STRICT

    prices: ModelPrices | None = None
    images: bool = False


class ModelFacts(BaseModel):
    """One model's resolved facts: its context window and output limit in tokens and its
    prices (``None``: unknown), and where each came from (``context_window_from`` names the
    config key, or ``catalog``; ``prices_from`` likewise; ``checked`` is the date the catalog
    entry was checked; ``note`` says when a model is an alias or retired)."""

    model_config = ConfigDict(frozen=True)

    context_window: int | None = None
    context_window_from: str | None = None
    max_output: int | None = None
    prices: ModelPrices | None = None
    prices_from: str | None = None
    checked: str | None = None
    note: str | None = None
