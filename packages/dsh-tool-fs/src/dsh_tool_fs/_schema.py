"""The parameters' JSON Schema as the model sees it: names, types, bounds and descriptions only."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict

__all__ = ["args_config"]


def _model_facing(schema: dict[str, Any]) -> None:
    """Drop what only costs the model tokens: the class docstring, the per-property titles, and
    ``"default": null`` on a field the model may simply omit."""
    schema.pop("description", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
            if "default" in prop and prop["default"] is None:
                del prop["default"]


def args_config(title: str) -> ConfigDict:
    """A file tool's parameter model config: schema titled ``title``, unknown keys refused."""
    return ConfigDict(title=title, extra="forbid", json_schema_extra=_model_facing)
