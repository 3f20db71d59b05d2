"""The one rule for finding the DSH home directory."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import platformdirs

DSH_HOME_ENV = "DSH_HOME"
"""The environment variable that names the DSH home when no explicit value is given."""

DSH_HOME_DIR_NAME = ".dsh"
"""The default home's directory name, under the user's home directory."""


class DshHomeError(ValueError):
    """A configured DSH home that cannot be a path (for example one holding a NUL character).

    ``source`` says where the value came from: ``"explicit"`` or ``"$DSH_HOME"``.
    """

    def __init__(self, value: str, source: str, reason: str) -> None:
        self.value = value
        self.source = source
        super().__init__(f"DSH home from {source} is not usable: {reason} (value {value!r})")


def _user_home(env: Mapping[str, str] | None) -> Path:
    if env is not None and env.get("HOME"):
        return Path(env["HOME"])
    return Path.home()


def expand_home(value: str, env: Mapping[str, str] | None = None) -> str:
    """Expand exactly ``~`` and ``~/…`` (or ``~\\…``); leave ``~user``, ``$VAR`` and all else alone.

    The user's home is ``env["HOME"]`` when ``env`` is given and has it, else ``Path.home()``.
    """
    if value == "~":
        return str(_user_home(env))
    if value.startswith(("~/", "~\\")):
        return str(_user_home(env) / value[2:])
    return value


def _absolute(value: str, source: str, env: Mapping[str, str] | None) -> Path:
    if "\x00" in value:
        raise DshHomeError(value, source, "it contains a NUL character")
    # os.path.abspath normalizes ("a/../b" -> "b") without touching the filesystem, like
    # path.resolve in the TypeScript harness; Path.resolve would follow symlinks.
    return Path(os.path.abspath(expand_home(value, env)))


def resolve_dsh_home(
    explicit: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> Path:
    """Resolve the DSH home to an absolute, normalized path.

    ``explicit`` wins whenever it is not ``None`` — including ``""``, which resolves to the
    current working directory. Otherwise ``env[DSH_HOME_ENV]`` (``env`` defaults to
    ``os.environ``) is used when it is not blank; an empty or whitespace-only value counts as
    unset, and a non-blank value is used as written. Otherwise ``~/.dsh``. Relative values
    resolve against the current directory at call time: resolve once, early.
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    if explicit is not None:
        return _absolute(os.fspath(explicit), "explicit", env)
    from_env = environ.get(DSH_HOME_ENV)
    if from_env is not None and from_env.strip():
        return _absolute(from_env, f"${DSH_HOME_ENV}", env)
    return Path(os.path.abspath(_user_home(env) / DSH_HOME_DIR_NAME))


def dsh_home_path(
    *segments: str,
    explicit: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> Path:
    """The resolved DSH home joined with ``segments`` (``dsh_home_path("sessions-plain")``)."""
    return resolve_dsh_home(explicit, env).joinpath(*segments)


def dsh_home_display(home: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> str:
    """A label for ``home`` that never reveals an absolute path.

    ``"~/.dsh"`` when ``home`` is the default home, else the literal ``"$DSH_HOME"``.
    """
    default = Path(os.path.abspath(_user_home(env) / DSH_HOME_DIR_NAME))
    if Path(os.path.abspath(os.fspath(home))) == default:
        return f"~/{DSH_HOME_DIR_NAME}"
    return f"${DSH_HOME_ENV}"


def dsh_cache_dir() -> Path:
    """The platform's per-user cache directory for DSH (``~/.cache/dsh`` on Linux)."""
    return platformdirs.user_cache_path("dsh", appauthor=False)
