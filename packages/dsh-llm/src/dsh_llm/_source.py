"""Where a message came from: the user, a plugin, another named origin, a model, or a tool."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import ConfigDict, Discriminator, Field, JsonValue, Tag, field_validator

from dsh_llm._wire import WireModel

__all__ = [
    "RESERVED_SOURCE_KINDS",
    "MessageSource",
    "ModelSource",
    "OtherSource",
    "PluginSource",
    "ToolSource",
    "UserMessageSource",
    "UserSource",
]

RESERVED_SOURCE_KINDS: frozenset[str] = frozenset({"user", "plugin", "model", "tool"})
"""The source kinds this library models with their own class; :class:`OtherSource` refuses them."""


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


class OtherSource(_Source):
    """A user-role message from an origin this library has no class for, named by ``kind``.

    The TypeScript harness's plugins name their own origins: ``goal`` (with ``goalId``,
    ``revision``, ``round``), ``agent-instructions``, ``workspace-instructions``,
    ``skill-catalog``, ``coordinator``, ``subagent-report``, ``subagent-settled`` and more. Such
    a source is kept whole: ``kind`` is its kind, :attr:`fields` every other key in wire order,
    and ``to_wire()`` writes both back. ``kind`` must be a non-empty string other than the
    reserved kinds (``user``, ``plugin``, ``model``, ``tool``), which have their own classes and
    rules, so a malformed known source is refused rather than read as an unknown one.
    """

    model_config = ConfigDict(extra="allow")

    kind: str = Field(min_length=1)

    @field_validator("kind")
    @classmethod
    def _not_reserved(cls, kind: str) -> str:
        if kind in RESERVED_SOURCE_KINDS:
            raise ValueError(
                f"source kind {kind!r} is reserved (it has its own source class); OtherSource "
                f"takes any kind but {sorted(RESERVED_SOURCE_KINDS)}"
            )
        return kind

    @property
    def fields(self) -> dict[str, Any]:
        """Every key of the source but ``kind``, as on the wire (a fresh dict)."""
        return dict(self.model_extra or {})


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


def _kind_of(value: Any) -> Any:
    if type(value) is dict or isinstance(value, Mapping):
        return value.get("kind")
    return getattr(value, "kind", None)


def _user_source_tag(value: Any) -> str | None:
    """``user`` and ``plugin`` are their own classes; any other string kind is an other source."""
    kind = value.get("kind") if type(value) is dict else None  # the wire case, first
    if kind == "user" or kind == "plugin":
        return kind  # type: ignore[no-any-return]
    if isinstance(value, OtherSource):
        return "other"
    if kind is None:
        kind = _kind_of(value)
        if kind == "user" or kind == "plugin":
            return kind  # type: ignore[no-any-return]
    return "other" if isinstance(kind, str) else None


def _message_source_tag(value: Any) -> str | None:
    kind = _kind_of(value)
    if isinstance(value, OtherSource) or (
        isinstance(kind, str) and kind not in RESERVED_SOURCE_KINDS
    ):
        return "other"
    return kind if isinstance(kind, str) else None


_NOT_A_SOURCE = "a message source needs a string 'kind'"

UserMessageSource = Annotated[
    Annotated[UserSource, Tag("user")]
    | Annotated[PluginSource, Tag("plugin")]
    | Annotated[OtherSource, Tag("other")],
    Discriminator(
        _user_source_tag,
        custom_error_type="invalid_source",
        custom_error_message=_NOT_A_SOURCE,
    ),
]
"""The source of a user message: the user, a plugin, or an :class:`OtherSource` (by ``kind``)."""

MessageSource = Annotated[
    Annotated[UserSource, Tag("user")]
    | Annotated[PluginSource, Tag("plugin")]
    | Annotated[ModelSource, Tag("model")]
    | Annotated[ToolSource, Tag("tool")]
    | Annotated[OtherSource, Tag("other")],
    Discriminator(
        _message_source_tag,
        custom_error_type="invalid_source",
        custom_error_message=_NOT_A_SOURCE,
    ),
]
"""Any message source, told apart by ``kind`` (an unreserved kind is an :class:`OtherSource`)."""
