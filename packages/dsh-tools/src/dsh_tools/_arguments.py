"""Turn a call's raw argument text into the tool's validated parameters, with stable messages."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from dsh_tools._errors import InvalidToolArgumentsError

__all__ = ["parse_arguments", "validate_arguments"]

_ArgsT = TypeVar("_ArgsT", bound=BaseModel)


def _refuse_constant(name: str) -> Any:
    raise ValueError(name)


def parse_arguments(tool_name: str, raw: str) -> dict[str, Any]:
    """The JSON object in ``raw`` (an empty or blank string is ``{}``).

    Raises ``InvalidToolArgumentsError`` for text that is not JSON, JSON that is not an object,
    and ``NaN``/``Infinity`` (not lossless JSON).
    """
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw, parse_constant=_refuse_constant)
    except json.JSONDecodeError as error:
        where = f"line {error.lineno} column {error.colno}"
        problem = f"arguments are not valid JSON ({error.msg} at {where})"
        raise InvalidToolArgumentsError(tool_name, [problem]) from None
    except ValueError as error:
        problem = f"arguments must be losslessly JSON-serializable ({error} is not)"
        raise InvalidToolArgumentsError(tool_name, [problem]) from None
    if not isinstance(value, dict):
        kind = "an array" if isinstance(value, list) else type(value).__name__
        raise InvalidToolArgumentsError(tool_name, [f"arguments must be a JSON object, not {kind}"])
    return value


def _problem(error: Any) -> str:
    message = str(error["msg"])
    message = message[:1].lower() + message[1:]
    location = ".".join(str(part) for part in error["loc"])
    return f"{location}: {message}" if location else message


def validate_arguments(
    tool_name: str, parameters: type[_ArgsT], arguments: dict[str, Any]
) -> _ArgsT:
    """``arguments`` validated against ``parameters``.

    On failure raises ``InvalidToolArgumentsError`` whose problems read
    ``"<field path>: <what is wrong>"``, for example ``"command: field required"``; the messages
    are pydantic's, first letter lowered, without documentation links or input echoes.
    """
    try:
        return parameters.model_validate(arguments)
    except ValidationError as error:
        problems = [_problem(item) for item in error.errors(include_url=False, include_input=False)]
        raise InvalidToolArgumentsError(tool_name, problems) from None
