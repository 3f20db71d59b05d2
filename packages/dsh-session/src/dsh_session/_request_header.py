"""Request headers: the logged non-history half of a model request.

An :class:`EpochHeader` is what a ``request/header`` event carries: the call ``config``
(provider, model, ...), ``adapterDefaults`` flags, the ``system`` prompt, the ``tools`` and the
``messagePrefix`` (the session prefix: request-only messages sent before the whole derived
history, logged only here).
Its canonical form drops what is empty; equality compares canonical forms. The fold of a log is
the canonical form of its last ``request/header``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from dsh_session._errors import SessionValidationError, describe_validation_error
from dsh_session._events import (
    SessionEvent,
)
from dsh_session._json import (
    JsonObject,
    dumps_canonical,
)

HEADER_REASONS = frozenset({"initial", "resume", "change"})
"""Why a header was logged: the log's first, a new loop instance's first, or a changed one."""


class AdapterDefaults(BaseModel):
    """Which config values the adapter chose by default (``true`` flags only matter)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, populate_by_name=True)

    reasoning_effort: bool | None = Field(None, alias="reasoningEffort")
    max_tokens: bool | None = Field(None, alias="maxTokens")


class EpochHeader(BaseModel):
    """``{config, adapterDefaults?, system?, tools?, messagePrefix?}`` of a ``request/header``.

    ``config`` must name ``provider`` and ``model`` (strings); ``reasoningEffort``, when present,
    is a string. ``tools`` and ``message_prefix`` are kept as their JSON objects.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, populate_by_name=True)

    config: dict[str, Any]
    adapter_defaults: AdapterDefaults | None = Field(None, alias="adapterDefaults")
    system: str | None = None
    tools: list[dict[str, Any]] | None = None
    message_prefix: list[dict[str, Any]] | None = Field(None, alias="messagePrefix")

    @field_validator("config")
    @classmethod
    def _config_names_a_route(cls, config: dict[str, Any]) -> dict[str, Any]:
        for key in ("provider", "model"):
            if type(config.get(key)) is not str or not config[key]:
                raise ValueError(f"config.{key} must be a non-empty string")
        if "reasoningEffort" in config and type(config["reasoningEffort"]) is not str:
            raise ValueError("config.reasoningEffort must be a string")
        return config

    @classmethod
    def from_wire(cls, header: object) -> EpochHeader:
        """Validate a header JSON object (raises ``pydantic.ValidationError``)."""
        return cls.model_validate(header)

    def to_wire(self) -> JsonObject:
        """The JSON object, keys in wire order, absent fields omitted."""
        wire: JsonObject = {"config": self.config}
        if self.adapter_defaults is not None:
            wire["adapterDefaults"] = self.adapter_defaults.model_dump(
                by_alias=True, exclude_none=True
            )
        if self.system is not None:
            wire["system"] = self.system
        if self.tools is not None:
            wire["tools"] = self.tools
        if self.message_prefix is not None:
            wire["messagePrefix"] = self.message_prefix
        return wire

    def canonical(self) -> EpochHeader:
        """Empty ``system``, ``tools`` and ``messagePrefix`` dropped; ``adapterDefaults`` kept
        only with a ``true`` flag (and only its ``true`` flags)."""
        defaults = self.adapter_defaults
        if defaults is not None:
            defaults = AdapterDefaults(
                reasoning_effort=True if defaults.reasoning_effort else None,
                max_tokens=True if defaults.max_tokens else None,
            )
            if defaults.reasoning_effort is None and defaults.max_tokens is None:
                defaults = None
        return EpochHeader(
            config=self.config,
            adapter_defaults=defaults,
            system=self.system or None,
            tools=self.tools or None,
            message_prefix=self.message_prefix or None,
        )

    def _key(self) -> tuple[Any, ...]:
        c = self.canonical()
        flags = c.adapter_defaults or AdapterDefaults()
        return (
            c.config,
            bool(flags.reasoning_effort),
            bool(flags.max_tokens),
            c.system,
            [dumps_canonical(tool) for tool in c.tools or ()],
            [dumps_canonical(message) for message in c.message_prefix or ()],
        )

    def __eq__(self, other: object) -> bool:
        """Canonical equality: config, both flags, system, tools and prefix (each in order)."""
        if not isinstance(other, EpochHeader):
            return NotImplemented
        return self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]


def header_of_event(event: SessionEvent) -> EpochHeader:
    """The canonical header a ``request/header`` event carries (raises on a refused one).

    Refused: the retired reason ``fallback`` and a header without provider/model.
    """
    data = event.to_wire()["data"]
    reason = data.get("reason")
    if reason == "fallback":
        raise SessionValidationError(
            "request/header reason 'fallback' is retired", code="DATA", seq=event.seq
        )
    try:
        return EpochHeader.from_wire(data.get("header")).canonical()
    except ValidationError as exc:
        raise SessionValidationError(
            f"request/header: {describe_validation_error(exc)}", code="DATA", seq=event.seq
        ) from exc


def fold_request_header(events: Iterable[SessionEvent]) -> EpochHeader | None:
    """The canonical form of the last ``request/header`` in ``events`` (``None``: there is none)."""
    last: SessionEvent | None = None
    for event in events:
        if event.type == "request/header":
            last = event
    return None if last is None else header_of_event(last)
