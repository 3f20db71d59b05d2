"""ToolRegistry registration: disposers, duplicates, definition checks, schemas, lookups."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, Field

from dsh_llm import ToolSchema
from dsh_tools import (
    Disposer,
    DuplicateToolError,
    InvalidToolDefinitionError,
    ToolContent,
    ToolDefinition,
    ToolError,
    ToolExecution,
    ToolRegistry,
)


class PathArgs(BaseModel):
    path: str = Field(description="A file path.")
    max_lines: int | None = Field(default=None, alias="maxLines")


class Named(ToolDefinition[PathArgs]):
    description = "Read a file."
    parameters = PathArgs

    def __init__(self, name: str) -> None:
        self.name = name

    async def execute(self, args: PathArgs, execution: ToolExecution) -> ToolContent:
        return self.name


def test_register_returns_a_disposer_that_withdraws_the_tool() -> None:
    tools = ToolRegistry()
    disposer = tools.register(Named("read"))
    assert isinstance(disposer, Disposer)
    assert "read" in tools
    disposer()
    assert "read" not in tools
    assert disposer.disposed


def test_the_disposer_is_a_context_manager() -> None:
    tools = ToolRegistry()
    with tools.register(Named("read")):
        assert tools.names() == ["read"]
    assert tools.names() == []


def test_disposing_twice_is_harmless() -> None:
    tools = ToolRegistry()
    disposer = tools.register(Named("read"))
    disposer.dispose()
    disposer.dispose()
    assert len(tools) == 0


def test_a_stale_disposer_does_not_withdraw_a_later_registration() -> None:
    tools = ToolRegistry()
    first = tools.register(Named("read"))
    first()
    replacement = Named("read")
    tools.register(replacement)
    first()
    assert tools.get("read") is replacement


def test_a_duplicate_name_raises_naming_the_tool() -> None:
    tools = ToolRegistry()
    tools.register(Named("read"))
    with pytest.raises(DuplicateToolError, match="'read' is already registered") as caught:
        tools.register(Named("read"))
    assert caught.value.tool_name == "read"
    assert caught.value.code == "DUPLICATE_TOOL"


def test_tool_errors_share_one_base() -> None:
    assert issubclass(DuplicateToolError, ToolError)
    assert issubclass(InvalidToolDefinitionError, ToolError)


@pytest.mark.parametrize("name", ["", "has space", "x" * 65, "dots.not.allowed"])
def test_a_name_the_providers_refuse_is_refused(name: str) -> None:
    with pytest.raises(InvalidToolDefinitionError, match="1-64 letters"):
        ToolRegistry().register(Named(name))


def test_parameters_that_are_not_a_pydantic_model_are_refused() -> None:
    class NotAModel(Named):
        parameters = dict  # type: ignore[assignment]

    with pytest.raises(InvalidToolDefinitionError, match="parameters must be a pydantic model"):
        ToolRegistry().register(NotAModel("bad"))


def test_a_failing_schema_is_refused_at_registration() -> None:
    class Broken(Named):
        def schema(self) -> ToolSchema:
            raise RuntimeError("no schema today")

    with pytest.raises(InvalidToolDefinitionError, match="no schema today"):
        ToolRegistry().register(Broken("broken"))


def test_schemas_are_in_registration_order() -> None:
    tools = ToolRegistry()
    for name in ["b", "a", "c"]:
        tools.register(Named(name))
    assert [schema.name for schema in tools.schemas()] == ["b", "a", "c"]


def test_schema_is_the_parameters_json_schema_with_wire_aliases() -> None:
    schema = Named("read").schema()
    assert schema.name == "read"
    assert schema.description == "Read a file."
    assert schema.parameters["type"] == "object"
    properties: Any = schema.parameters["properties"]
    assert set(properties) == {"path", "maxLines"}
    assert properties["path"]["description"] == "A file path."
    assert schema.parameters["required"] == ["path"]


def test_schemas_are_json_for_the_model() -> None:
    tools = ToolRegistry()
    tools.register(Named("read"))
    wire = tools.schemas()[0].to_wire()
    assert list(wire) == ["name", "description", "parameters"]


def test_get_returns_the_registered_definition_or_none() -> None:
    tools = ToolRegistry()
    tool = Named("read")
    tools.register(tool)
    assert tools.get("read") is tool
    assert tools.get("write") is None
