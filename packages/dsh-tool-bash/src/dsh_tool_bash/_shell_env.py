"""ShellEnvRegistry: who owns which managed ``DSH_*`` key, and the per-execution snapshot."""

from __future__ import annotations

import builtins
import inspect
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Final

from dsh_paths import resolve_dsh_home
from dsh_shell import DSH_ENV_PREFIX, ShellEnvContributor
from dsh_tool_bash._errors import (
    DuplicateContributorError,
    InvalidContributorError,
    InvalidEnvKeyError,
    KeyOwnershipError,
    MissingKeyDescriptionError,
    NonStringEnvValueError,
    ReservedShellEnvKeyError,
    ShellEnvResolveError,
    UndeclaredEnvKeyError,
)
from dsh_tools import Disposer, ToolExecution

__all__ = [
    "BUILTIN_CONTRIBUTOR",
    "DSH_HOME_KEY",
    "DSH_SESSION_ID_KEY",
    "DSH_SHELL_KEY",
    "RESERVED_KEYS",
    "ShellEnvDeclaration",
    "ShellEnvRegistry",
]

DSH_HOME_KEY: Final = f"{DSH_ENV_PREFIX}HOME"
"""``DSH_HOME``: the absolute configured harness home."""
DSH_SHELL_KEY: Final = f"{DSH_ENV_PREFIX}SHELL"
"""``DSH_SHELL``: always ``"1"`` in a model bash child managed by the harness."""
DSH_SESSION_ID_KEY: Final = f"{DSH_ENV_PREFIX}SESSION_ID"
"""``DSH_SESSION_ID``: the calling agent's session id, absent without an agent."""

RESERVED_KEYS: Final = frozenset({DSH_HOME_KEY, DSH_SHELL_KEY, DSH_SESSION_ID_KEY})
"""The keys the registry provides itself; no contributor may declare them."""

BUILTIN_CONTRIBUTOR: Final = "builtin"
"""The contributor name `ShellEnvRegistry.list` gives the built-in keys (not registrable)."""

_BUILTIN_DESCRIPTIONS: Final = {
    DSH_HOME_KEY: "Absolute path of the configured DSH home directory.",
    DSH_SHELL_KEY: "Always 1: this shell is a model bash child managed by DeepSeek Harness.",
    DSH_SESSION_ID_KEY: "Id of the agent session that ran this command; absent without an agent.",
}

_KEY = re.compile(rf"{DSH_ENV_PREFIX}[A-Z][A-Z0-9_]*")


@dataclass(frozen=True, slots=True)
class ShellEnvDeclaration:
    """One declared managed key: who owns it, the key, and what it means."""

    contributor: str
    key: str
    description: str


@dataclass(frozen=True, slots=True)
class _Registration:
    name: str
    keys: Mapping[str, str]
    contributor: ShellEnvContributor


class ShellEnvRegistry:
    """The ``shell_env`` registry: the trusted ``DSH_*`` overlay of every bash execution.

    ``dsh_home`` is resolved once, here, through `dsh_paths.resolve_dsh_home` (explicit value,
    else a non-blank ``$DSH_HOME``, else ``~/.dsh``; absolute). Every snapshot holds the
    built-ins ``DSH_HOME``, ``DSH_SHELL="1"`` and, when the execution has an agent,
    ``DSH_SESSION_ID``; registered contributors add their declared keys. ``os.environ`` is
    never read after construction nor ever written.
    """

    def __init__(self, dsh_home: str | os.PathLike[str] | None = None) -> None:
        self._home = resolve_dsh_home(dsh_home)
        self._contributors: dict[str, _Registration] = {}
        self._owners: dict[str, str] = {}

    @property
    def dsh_home(self) -> Path:
        """The absolute DSH home every snapshot carries as ``DSH_HOME``."""
        return self._home

    def register(self, contributor: ShellEnvContributor) -> Disposer:
        """Add ``contributor``; the returned disposer (also a context manager) removes it.

        Checks, in order, before anything changes (each raises a `ShellEnvDeclarationError`
        subclass naming the contributor and, where it applies, the key): a non-blank ``name``
        (`InvalidContributorError`); a name not already registered
        (`DuplicateContributorError`); ``keys`` a mapping and ``resolve`` callable
        (`InvalidContributorError`); then per key: ``DSH_`` + ``[A-Z][A-Z0-9_]*``
        (`InvalidEnvKeyError`), not reserved (`ReservedShellEnvKeyError`), a non-blank
        description (`MissingKeyDescriptionError`), not owned by another contributor
        (`KeyOwnershipError`). The declarations are copied: later changes to the contributor's
        ``keys`` do not change what it owns.
        """
        registration = self._checked(contributor)
        self._contributors[registration.name] = registration
        for key in registration.keys:
            self._owners[key] = registration.name

        def unregister() -> None:
            if self._contributors.get(registration.name) is not registration:
                return
            del self._contributors[registration.name]
            for key in registration.keys:
                if self._owners.get(key) == registration.name:
                    del self._owners[key]

        return Disposer(unregister)

    def _checked(self, contributor: ShellEnvContributor) -> _Registration:
        name = getattr(contributor, "name", None)
        if not isinstance(name, str) or not name.strip():
            label = name if isinstance(name, str) else repr(contributor)
            raise InvalidContributorError(
                label, f"shell_env contributor name must be non-empty, got {name!r}"
            )
        if name in self._contributors or name == BUILTIN_CONTRIBUTOR:
            raise DuplicateContributorError(name)
        keys = getattr(contributor, "keys", None)
        if not isinstance(keys, Mapping):
            raise InvalidContributorError(
                name, f"shell_env contributor {name!r} must declare its keys as a mapping"
            )
        if not callable(getattr(contributor, "resolve", None)):
            raise InvalidContributorError(
                name, f"shell_env contributor {name!r} has no callable resolve(execution)"
            )
        declared: dict[str, str] = {}
        for key, description in keys.items():
            if not isinstance(key, str) or not _KEY.fullmatch(key):
                raise InvalidEnvKeyError(name, key)
            if key in RESERVED_KEYS:
                raise ReservedShellEnvKeyError(name, key)
            if not isinstance(description, str) or not description.strip():
                raise MissingKeyDescriptionError(name, key)
            owner = self._owners.get(key)
            if owner is not None:
                raise KeyOwnershipError(name, key, owner)
            declared[key] = description
        return _Registration(name, MappingProxyType(declared), contributor)

    def contributors(self) -> list[str]:
        """Registered contributor names, sorted (the order `collect` runs them in)."""
        return sorted(self._contributors)

    def list(self) -> builtins.list[ShellEnvDeclaration]:
        """Every managed key with its owner and description; no resolver runs.

        The built-ins come first (``DSH_HOME``, ``DSH_SHELL``, ``DSH_SESSION_ID``, owned by
        ``"builtin"``), then the contributors' keys sorted by key.
        """
        rows = [
            ShellEnvDeclaration(BUILTIN_CONTRIBUTOR, key, description)
            for key, description in _BUILTIN_DESCRIPTIONS.items()
        ]
        declared = [
            ShellEnvDeclaration(registration.name, key, description)
            for registration in self._contributors.values()
            for key, description in registration.keys.items()
        ]
        return rows + sorted(declared, key=lambda row: row.key)

    async def collect(self, execution: ToolExecution) -> Mapping[str, str]:
        """A fresh, read-only snapshot of the managed overlay for one execution.

        Built-ins first, then each contributor's values in contributor-name order (each
        contributor's keys sorted). A resolver may be sync or async; a key it omits is absent.
        A resolver returning a non-mapping (`ShellEnvResolveError`), an undeclared key
        (`UndeclaredEnvKeyError`) or a non-string value (`NonStringEnvValueError`) raises; so
        does anything a resolver raises itself. The contributors are those registered when
        ``collect`` starts.
        """
        snapshot: dict[str, str] = {DSH_HOME_KEY: str(self._home), DSH_SHELL_KEY: "1"}
        session_id = execution.session_id
        if session_id is not None:
            snapshot[DSH_SESSION_ID_KEY] = session_id
        for name in sorted(self._contributors):
            registration = self._contributors[name]
            values = registration.contributor.resolve(execution)
            if inspect.isawaitable(values):
                values = await values
            snapshot.update(_checked_values(registration, values))
        return MappingProxyType(snapshot)


def _checked_values(registration: _Registration, values: object) -> dict[str, str]:
    name = registration.name
    if not isinstance(values, Mapping):
        raise ShellEnvResolveError(
            name,
            f"shell_env contributor {name!r} returned {type(values).__name__} from resolve, "
            "not a mapping of its declared keys to strings",
        )
    checked: dict[str, str] = {}
    for key in sorted(values, key=str):
        if not isinstance(key, str) or key not in registration.keys:
            raise UndeclaredEnvKeyError(name, key)
        value = values[key]
        if not isinstance(value, str) or "\0" in value:
            raise NonStringEnvValueError(name, key, value)
        checked[key] = value
    return checked
