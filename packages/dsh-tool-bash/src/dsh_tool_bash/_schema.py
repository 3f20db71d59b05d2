"""Shape the parameters' JSON Schema for the model: field descriptions, nothing Python-only."""

from __future__ import annotations

from typing import Any

__all__ = ["model_facing_schema", "without_default"]


def model_facing_schema(schema: dict[str, Any]) -> None:
    """Drop the model class docstring and the generated per-property titles from a schema."""
    schema.pop("description", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)


def without_default(schema: dict[str, Any]) -> None:
    """Drop ``"default": null`` from an optional field the model may simply omit."""
    schema.pop("default", None)
