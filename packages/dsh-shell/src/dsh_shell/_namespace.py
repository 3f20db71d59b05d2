"""The managed ``DSH_*`` namespace: its single prefix, the overlay type, and contributors."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Mapping
from types import MappingProxyType
from typing import Any, Final, Protocol, TypeAlias, runtime_checkable

from dsh_shell._errors import DshEnvironmentError, ReservedEnvKeyError

DSH_ENV_PREFIX: Final = "DSH_"
"""The single source of the managed environment namespace."""

DshEnvironment: TypeAlias = Mapping[str, str]
"""A trusted managed overlay: ``DSH_*`` keys to string values (see `validate_dsh_environment`)."""

_DSH_KEY = re.compile(rf"^{DSH_ENV_PREFIX}[A-Z0-9_]+$")


def is_dsh_key(name: str) -> bool:
    """Whether ``name`` lies in the managed namespace, compared case-insensitively."""
    return name.upper().startswith(DSH_ENV_PREFIX)


def validate_dsh_key(key: object) -> str:
    """Return ``key`` if it is a well-formed managed key (``DSH_`` + ``[A-Z0-9_]+``), else raise."""
    if not isinstance(key, str):
        raise DshEnvironmentError(key, "managed keys are strings")
    if not _DSH_KEY.match(key):
        raise DshEnvironmentError(
            key, f"managed keys are {DSH_ENV_PREFIX!r} followed by upper-case letters, digits, _"
        )
    return key


def validate_dsh_environment(values: Mapping[str, str]) -> DshEnvironment:
    """Check a managed overlay and return an immutable copy of it.

    Every key must be a well-formed ``DSH_*`` key and every value a string without NUL bytes;
    the first offending entry raises `DshEnvironmentError` naming its key.
    """
    checked: dict[str, str] = {}
    for key, value in values.items():
        validate_dsh_key(key)
        if not isinstance(value, str):
            raise DshEnvironmentError(key, f"values are strings, not {type(value).__name__}")
        if "\0" in value:
            raise DshEnvironmentError(key, "values cannot contain NUL bytes")
        checked[key] = value
    return MappingProxyType(checked)


def validate_ordinary_env(values: Mapping[str, str]) -> Mapping[str, str]:
    """Check an ordinary ``env`` overlay and return an immutable copy of it.

    A key in the ``DSH_*`` namespace (any case) raises `ReservedEnvKeyError` naming it: an
    ordinary entry must never be able to displace a managed value.
    """
    checked: dict[str, str] = {}
    for key, value in values.items():
        if not isinstance(key, str) or not key or "=" in key or "\0" in key:
            raise DshEnvironmentError(key, "environment names are non-empty strings without =")
        if is_dsh_key(key):
            raise ReservedEnvKeyError(key)
        if not isinstance(value, str) or "\0" in value:
            raise DshEnvironmentError(key, "environment values are strings without NUL bytes")
        checked[key] = value
    return MappingProxyType(checked)


@runtime_checkable
class ShellEnvContributor(Protocol):
    """What a plugin implements to contribute managed ``DSH_*`` facts to every shell execution.

    ``name`` is stable and unique among contributors; ``keys`` declares every key the
    contributor may return, each with a one-line description (enumerable without running
    anything); ``resolve(execution)`` returns the current values for one execution (a subset of
    the declared keys, string values), synchronously or as an awaitable. ``execution`` is the
    tool execution the command belongs to (a ``dsh_tools.ToolExecution`` in the bash tool).
    """

    @property
    def name(self) -> str:
        """The contributor's stable, unique name."""
        ...

    @property
    def keys(self) -> Mapping[str, str]:
        """Every ``DSH_*`` key this contributor may return, mapped to its description."""
        ...

    def resolve(self, execution: Any) -> Mapping[str, str] | Awaitable[Mapping[str, str]]:
        """The managed values for one execution (declared keys only, string values)."""
        ...
