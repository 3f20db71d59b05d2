"""`load_config`: the configuration file, its profile, the environment's overrides and the
caller's, read into one validated `Config`."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import (
    ValidationError,
)

from dsh_agent_core._config import CONFIG_FILE_NAME, Config, beside_the_file
from dsh_agent_core._errors import ConfigError
from dsh_agent_core._files import MAX_CONFIG_BYTES, UnreadableFileError, read_regular_file
from dsh_agent_core._provider_config import split_route
from dsh_paths import DshHomeError, resolve_dsh_home
from dsh_shell import SANDBOX_MODES

__all__ = ["load_config"]


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _read_toml(path: Path) -> dict[str, Any]:
    """The TOML table of the config file at ``path`` (``{}`` when there is none): a regular
    file of at most `MAX_CONFIG_BYTES`, never a FIFO or a device (see ``_files``)."""
    try:
        data = read_regular_file(path, MAX_CONFIG_BYTES)
    except FileNotFoundError:
        if os.path.lexists(path):  # a link to nothing is a mistake, not "no config"
            raise UnreadableFileError(path, "is a symbolic link to a missing file") from None
        return {}
    try:
        return tomllib.loads(data.decode("utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(str(path), f"is not valid TOML ({error})") from None
    except UnicodeDecodeError as error:
        raise ConfigError(
            str(path), f"is not UTF-8 ({error.reason} at byte {error.start})"
        ) from None


def _validation_error(source: str, error: ValidationError) -> ConfigError:
    first = error.errors(include_url=False, include_input=False)[0]
    key = ".".join(str(part) for part in first["loc"]) or "(top level)"
    message = first["msg"].removeprefix("Value error, ")  # a validator's own sentence
    return ConfigError(f"{source}: {key}", message)


def load_config(
    profile: str | None = None,
    *,
    dsh_home: str | os.PathLike[str] | None = None,
    path: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Config:
    """Read the configuration.

    The file is ``path``, else ``$DSH_CONFIG``, else ``<home>/config.toml`` (home: ``dsh_home``,
    else ``$DSH_HOME``, else ``~/.dsh``); a missing file means the defaults. ``profile`` (else
    ``$DSH_PROFILE``) merges ``[profiles.NAME]`` over the top level; ``$DSH_MODEL`` then
    overrides ``model`` and ``$DSH_PERMISSION_MODE`` ``sandbox.mode``; ``overrides`` (for
    example from command-line options) come last.
    Raises :class:`ConfigError` naming the file and key for anything invalid, and for a profile
    the file does not define.
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    home = resolve_dsh_home(dsh_home, env)
    chosen = path if path is not None else environ.get("DSH_CONFIG") or None
    file = Path(chosen) if chosen is not None else home / CONFIG_FILE_NAME
    raw = _read_toml(file)
    source = str(file) if raw or file.exists() else "defaults"
    profiles = raw.pop("profiles", {})
    if not isinstance(profiles, dict):
        raise ConfigError(f"{source}: profiles", "must be a table of [profiles.NAME] tables")
    profile = profile if profile is not None else (environ.get("DSH_PROFILE") or None)
    data = raw
    if profile is not None:
        chosen_profile = profiles.get(profile)
        if not isinstance(chosen_profile, dict):
            known = ", ".join(sorted(profiles)) or "none"
            raise ConfigError(
                f"{source}: profiles.{profile}", f"no such profile (defined: {known})"
            )
        data = _merge(data, chosen_profile)
    if environ.get("DSH_MODEL"):
        split_route(environ["DSH_MODEL"], where="$DSH_MODEL")  # name the variable, not the file
        data["model"] = environ["DSH_MODEL"]
    mode = environ.get("DSH_PERMISSION_MODE")
    if mode:
        if mode not in SANDBOX_MODES:
            raise ConfigError(
                "$DSH_PERMISSION_MODE", f"{mode!r} is not one of {', '.join(SANDBOX_MODES)}"
            )
        sandbox = data.get("sandbox")
        data["sandbox"] = {**(sandbox if isinstance(sandbox, dict) else {}), "mode": mode}
    if overrides:
        data = _merge(data, overrides)
    # the home is resolved once, here: a home the file names wins over the one that found it
    named = data.get("dsh_home")
    if isinstance(named, str) and named:
        try:
            data["dsh_home"] = str(resolve_dsh_home(named, env))
        except DshHomeError as error:
            raise ConfigError(f"{source}: dsh_home", str(error)) from None
    elif named is None:
        data["dsh_home"] = str(home)
    data["profile"] = profile
    data["source"] = None if source == "defaults" else source
    # and system_file, against the file's folder: a dump of this config names the same file
    system_file = data.get("system_file")
    if isinstance(system_file, str) and system_file:
        data["system_file"] = str(beside_the_file(system_file, data["source"]))
    try:
        config = Config.model_validate(data)
        config._env = environ  # the dump says whether keys are set in this environment
    except ValidationError as error:
        raise _validation_error(source, error) from None
    except ConfigError as error:
        if error.key == "model" and data.get("model") == environ.get("DSH_MODEL"):
            raise ConfigError("$DSH_MODEL", error.reason) from None  # the variable said it
        raise ConfigError(f"{source}: {error.key}", error.reason) from None
    config._read_system_file()  # a bad system_file is refused now, naming the file and key
    return config
