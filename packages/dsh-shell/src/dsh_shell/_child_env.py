"""The child environment of a local command, built in the one order DESIGN §6 fixes."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from dsh_shell._namespace import is_dsh_key

TERMINAL_DEFAULTS: Final[Mapping[str, str]] = MappingProxyType(
    {"TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat", "NO_COLOR": "1"}
)
"""Defaults that keep tools from paging, colouring or assuming an interactive terminal."""

SCRUBBED_STARTUP_NAMES: Final = frozenset({"BASH_ENV", "ENV"})
"""Names a non-interactive shell would source a file from; never inherited."""

_CREDENTIAL = re.compile(r"KEY|PASSWORD|SECRET|TOKEN", re.IGNORECASE)


def is_credential_name(name: str) -> bool:
    """Whether ``name`` looks like it holds a credential (KEY, PASSWORD, SECRET, TOKEN)."""
    return _CREDENTIAL.search(name) is not None


@functools.lru_cache(maxsize=4096)
def _inheritable(name: str) -> bool:
    return not (
        is_dsh_key(name) or name.upper() in SCRUBBED_STARTUP_NAMES or is_credential_name(name)
    )


def scrub_parent_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The inheritable part of a parent environment.

    Drops every ``DSH_*`` name (case-insensitive: a stale managed value never leaks from an
    outer or previous harness), credential-shaped names, and ``BASH_ENV``/``ENV``. ``PATH``,
    ``HOME``, locale and proxy variables survive.
    """
    return {name: value for name, value in environ.items() if _inheritable(name)}


def compose_child_environment(
    parent: Mapping[str, str],
    *,
    env: Mapping[str, str] | None = None,
    dsh_env: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Build a child environment: scrubbed parent → terminal defaults → ``env`` → ``dsh_env``.

    ``dsh_env`` goes last, so a managed value can never be displaced; an explicit ``env``
    entry wins over the defaults and over the credential scrub. ``parent`` is not modified.
    """
    child = scrub_parent_environment(parent)
    child.update(TERMINAL_DEFAULTS)
    if env:
        child.update((name, value) for name, value in env.items() if not is_dsh_key(name))
    if dsh_env:
        child.update(dsh_env)
    return child
