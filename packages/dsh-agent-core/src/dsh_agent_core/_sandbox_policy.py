"""The default sandbox policy of a configuration: where confined commands may write, and what
they may read but never write (the harness's own files) or not read at all."""

from __future__ import annotations

import os
from pathlib import Path

from dsh_agent_core._config import Config
from dsh_agent_core._hook_files import hook_files
from dsh_shell import SandboxPolicy, default_denied_paths

__all__ = ["harness_files", "sandbox_policy"]


def harness_files(config: Config) -> tuple[Path, ...]:
    """What a confined command may read but never write: the DSH home, the session logs
    wherever the config puts them (a SQLite database with its journal files), the config file."""
    paths = [config.home()]
    location = config.persistence_location()
    if location.backend == "sqlite":
        paths += location.files()
    elif location.backend == "jsonl":
        paths.append(location.root)
    if config.source is not None:
        paths.append(Path(config.source).absolute())
    return tuple(dict.fromkeys(paths))


def sandbox_policy(config: Config) -> SandboxPolicy:
    """The default sandbox policy of ``config``: its mode, the DSH home, the session logs and
    the config file readable and never writable, the configured writable roots and network,
    the deny-read list (default: the usual credential folders). Each call's workspace is the
    calling session's cwd."""
    settings = config.sandbox
    denied = (
        default_denied_paths()
        if settings.deny_read is None
        else tuple(Path(os.path.expanduser(entry)).absolute() for entry in settings.deny_read)
    )
    hook_env = dict(config.hooks.env) if config.hooks is not None else {}
    return SandboxPolicy(
        mode=settings.mode,
        writable_roots=tuple(
            Path(os.path.expanduser(r)).absolute() for r in settings.writable_roots
        ),
        read_only_paths=harness_files(config),
        denied_paths=denied,
        network=settings.network,
        # hooks run unconfined: what they run stays read-only for confined commands
        protected_paths=hook_files(config.hooks, {**os.environ, **hook_env}),
    )
