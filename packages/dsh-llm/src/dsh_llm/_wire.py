"""The base every wire model shares: camelCase aliases, strict types, exact-key round trips."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

__all__ = ["WireModel"]


class WireModel(BaseModel):
    """A pydantic model in the v0 wire vocabulary.

    Python attributes are snake_case and the wire keys camelCase (either spelling is accepted on
    input; output uses the wire spelling). Types are strict (``"3"`` is not an int, ``1`` is not
    a bool) and unknown keys are refused unless a subclass says otherwise. Instances are frozen.

    ``to_wire()`` gives the JSON object with exactly the keys that were given, in declaration
    order, so a wire object validates and serializes back to the same keys. Tag fields (``type``,
    ``kind``) are always written, even when they were filled in by default.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        serialize_by_alias=True,
        strict=True,
        extra="forbid",
        frozen=True,
    )

    _always_written: ClassVar[tuple[str, ...]] = ()

    def model_post_init(self, context: Any, /) -> None:
        """Mark the tag fields as set, so ``exclude_unset`` dumps always carry them."""
        self.__pydantic_fields_set__.update(self._always_written)

    def to_wire(self) -> dict[str, Any]:
        """The JSON-compatible wire object: camelCase keys, only the fields that were given."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    def to_wire_json(self) -> str:
        """``to_wire()`` as compact JSON text (non-ASCII kept as is)."""
        return self.model_dump_json(by_alias=True, exclude_unset=True)
