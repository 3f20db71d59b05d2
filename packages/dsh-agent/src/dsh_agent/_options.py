"""What an agent runs with (``AgentOptions``) and what one request is configured with
(``RequestConfig``, the ``config`` of a logged ``request/header``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AgentOptions", "RequestConfig"]

_FROZEN = ConfigDict(frozen=True, extra="forbid", strict=True, populate_by_name=True)


class AgentOptions(BaseModel):
    """The route and limits an agent asks for: ``provider`` and ``model`` name the model;
    ``max_tokens`` caps each answer (a positive integer, ``None``: the provider's default);
    ``reasoning_effort`` is passed through to providers that take one."""

    model_config = _FROZEN

    provider: str = Field(min_length=1)
    model: str = Field(min_length=1)
    max_tokens: int | None = Field(default=None, gt=0, le=2**53 - 1)
    reasoning_effort: str | None = None

    def request_config(self) -> RequestConfig:
        """The request config these options seed every request with."""
        return RequestConfig(
            provider=self.provider,
            model=self.model,
            max_tokens=self.max_tokens,
            reasoning_effort=self.reasoning_effort,
        )


class RequestConfig(BaseModel):
    """The non-message settings of one model request, as logged in ``request/header.config``.

    On the wire (``to_wire``) keys are camelCase and ``None`` fields are absent:
    ``{"provider", "model", "maxTokens"?, "reasoningEffort"?, "temperature"?, "topP"?,
    "stop"?}``. A ``request`` listener may return a replacement (for example another model);
    it can never touch the messages.
    """

    model_config = _FROZEN

    provider: str = Field(min_length=1)
    model: str = Field(min_length=1)
    max_tokens: int | None = Field(default=None, gt=0, le=2**53 - 1)
    reasoning_effort: str | None = None
    temperature: float | None = Field(default=None, ge=0)
    top_p: float | None = Field(default=None, ge=0, le=1)
    stop: tuple[str, ...] | None = None

    def to_wire(self) -> dict[str, Any]:
        """The logged ``config`` object (camelCase keys, absent when ``None``)."""
        wire: dict[str, Any] = {"provider": self.provider, "model": self.model}
        if self.max_tokens is not None:
            wire["maxTokens"] = self.max_tokens
        if self.reasoning_effort is not None:
            wire["reasoningEffort"] = self.reasoning_effort
        if self.temperature is not None:
            wire["temperature"] = self.temperature
        if self.top_p is not None:
            wire["topP"] = self.top_p
        if self.stop is not None:
            wire["stop"] = list(self.stop)
        return wire

    @classmethod
    def from_wire(cls, config: Mapping[str, Any]) -> RequestConfig:
        """The config a logged ``request/header`` carries (keys this model does not know, which
        other writers may log, are ignored). Raises ``pydantic.ValidationError``."""
        fields: dict[str, Any] = {"provider": config.get("provider"), "model": config.get("model")}
        for wire_key, field in (
            ("maxTokens", "max_tokens"),
            ("reasoningEffort", "reasoning_effort"),
            ("temperature", "temperature"),
            ("topP", "top_p"),
        ):
            if config.get(wire_key) is not None:
                fields[field] = config[wire_key]
        stop = config.get("stop")
        if stop is not None:
            fields["stop"] = tuple(stop) if isinstance(stop, list) else stop
        if isinstance(fields.get("temperature"), int) and not isinstance(
            fields["temperature"], bool
        ):
            fields["temperature"] = float(fields["temperature"])
        if isinstance(fields.get("top_p"), int) and not isinstance(fields["top_p"], bool):
            fields["top_p"] = float(fields["top_p"])
        return cls.model_validate(fields)
