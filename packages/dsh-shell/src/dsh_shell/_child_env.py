"""The child environment of a local command, built in one fixed order: the parent's environment
without inherited ``DSH_*`` keys and credential-shaped names, then the terminal defaults, then the
explicit ``env``, then the managed ``dsh_env`` last, so a managed value is never displaced."""

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

SCRUBBED_STARTUP_NAMES: Final = frozenset({"BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS"})
"""Names that make a non-interactive bash source a file or change its options; never inherited."""

_EXPORTED_FUNCTION_PREFIX: Final = "BASH_FUNC_"
"""Prefix of bash's exported functions (``BASH_FUNC_echo%%``): they could redefine any command."""

_PROXY_NAMES: Final = frozenset({"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "FTP_PROXY", "NO_PROXY"})
"""Proxy variables (any case): inherited, unless their value carries credentials."""

_CREDENTIAL = re.compile(
    r"KEY|PASSWORD|PASSWD|SECRET|TOKEN|CREDENTIAL|COOKIE|^PGPASS|_PAT$|_AUTH$"
    r"|^MYSQL_PWD$|^DATABASE_URL$",
    re.IGNORECASE,
)
# ``scheme://user[:password]@host`` or ``user[:password]@host``: an ``@`` before the host part.
_USERINFO = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*://)?[^/?#]*@")


def is_credential_name(name: str) -> bool:
    """Whether ``name`` looks like it holds a credential.

    Any case: containing ``KEY``, ``PASSWORD``, ``PASSWD``, ``SECRET``, ``TOKEN``,
    ``CREDENTIAL`` or ``COOKIE``; starting with ``PGPASS``; ending in ``_PAT`` or ``_AUTH``;
    or exactly ``MYSQL_PWD`` or ``DATABASE_URL``.
    """
    return _CREDENTIAL.search(name) is not None


def _proxy_with_credentials(name: str, value: str) -> bool:
    """Whether ``name`` is a proxy variable (any case) whose URL carries ``user[:password]@``."""
    return name.upper() in _PROXY_NAMES and _USERINFO.match(value) is not None


@functools.lru_cache(maxsize=4096)
def _inheritable_name(name: str) -> bool:
    upper = name.upper()
    return not (
        is_dsh_key(name)
        or upper in SCRUBBED_STARTUP_NAMES
        or upper.startswith(_EXPORTED_FUNCTION_PREFIX)
        or is_credential_name(name)
    )


def scrub_parent_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The inheritable part of a parent environment.

    Drops every ``DSH_*`` name (case-insensitive: a stale managed value never leaks from an
    outer or previous harness), ``BASH_ENV``/``ENV``/``SHELLOPTS``/``BASHOPTS``, exported bash
    functions (``BASH_FUNC_*``), credential-shaped names (`is_credential_name`), and proxy
    variables whose value holds credentials (``user[:password]@`` in the URL); all any case.
    ``PATH``, ``HOME``, locale and credential-free proxy variables survive.
    """
    return {
        name: value
        for name, value in environ.items()
        if _inheritable_name(name) and not _proxy_with_credentials(name, value)
    }


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
