"""Where a message came from: the user, a plugin, a model, or a tool."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import ConfigDict, Field, JsonValue

from dsh_llm._wire import WireModel

__all__ = ["MessageSource", "ModelSource", "PluginSource", "ToolSource", "UserSource"]


class _Source(WireModel):
    _always_written: ClassVar[tuple[str, ...]] = ("kind",)


class UserSource(_Source):
    """A message the user typed: ``{"kind": "user"}``.

    Extra keys a front end attaches (for example ``rpcId``) are kept and written back; read them
    with ``model_extra``.
    """

    model_config = ConfigDict(extra="allow")

    kind: Literal["user"] = "user"


class PluginSource(_Source):
    """Context a plugin injected: ``{"kind": "plugin", "plugin", "form"?}``; extra keys are kept."""

    model_config = ConfigDict(extra="allow")

    kind: Literal["plugin"] = "plugin"
    plugin: str
    form: str | None = None


class ModelSource(_Source):
    """The model that wrote an assistant message: ``{"kind": "model", "provider", "model"}``.

    ``replay_state`` is opaque provider state some adapters need to continue a conversation.
    """

    kind: Literal["model"] = "model"
    provider: str
    model: str
    replay_state: JsonValue = None


class ToolSource(_Source):
    """The tool call a tool-result message answers: ``{"kind": "tool", "callId"}``."""

    kind: Literal["tool"] = "tool"
    call_id: str


MessageSource = Annotated[
    UserSource | PluginSource | ModelSource | ToolSource, Field(discriminator="kind")
]
"""Any message source, discriminated on ``kind``."""
