"""Shape the parameters' JSON Schema for the model: field descriptions, nothing Python-only."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import WithJsonSchema

__all__ = ["OptionalNumber", "OptionalString", "model_facing_schema", "without_default"]

OptionalNumber = Annotated[float | None, WithJsonSchema({"type": "number"})]
"""A number the model may omit: the schema says ``number`` only (``null`` is not offered), and a
wrong type is reported once (``input should be a valid number``), not per union member."""

OptionalString = Annotated[str | None, WithJsonSchema({"type": "string"})]
"""A string the model may omit, shown to the model as ``string`` only."""


def model_facing_schema(schema: dict[str, Any]) -> None:
    """Drop the model class docstring and the generated per-property titles from a schema."""
    schema.pop("description", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)


def without_default(schema: dict[str, Any]) -> None:
    """Drop ``"default": null`` from an optional field the model may simply omit."""
    schema.pop("default", None)
