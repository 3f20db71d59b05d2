"""The sandboxed executor of DSH: each command of an inner executor confined by bubblewrap.

`SandboxExecutor` wraps any `dsh_shell.ShellExecutor` and runs its commands under ``bwrap``
by the spec's `dsh_shell.SandboxPolicy`; `probe_sandbox` says whether this host can (a canary
must prove the confinement; it fails closed with `dsh_shell.SandboxUnavailableError` when it
cannot), `find_bwrap` where ``bwrap`` is (found once per process). `bwrap_argv` builds the
command line (every mount source at or below a writable root from a descriptor that
`MountSources` opened without following symlinks), `looks_sandbox_denied` tells a refused
command's result.
"""

from dsh_bash_sandbox._argv import (
    NESTED_BUDGET,
    NESTED_DEPTH,
    SECCOMP_FD,
    MountSource,
    PathKind,
    bwrap_argv,
    find_nested_protected,
    host_kind,
    host_realpath,
    shell_line,
    signal_from_status,
)
from dsh_bash_sandbox._executor import (
    FILE_DENIAL_SIGNATURES,
    NETWORK_DENIAL_SIGNATURES,
    ConfinedProcess,
    SandboxExecutor,
    looks_sandbox_denied,
)
from dsh_bash_sandbox._placeholders import PlaceholderRegistry, default_registry_dir
from dsh_bash_sandbox._probe import (
    FIX_CONFINE,
    FIX_INSTALL,
    FIX_NAMESPACES,
    FIX_OUTSIDE,
    ISOLATION_FLAGS,
    SandboxProbe,
    clear_probe_cache,
    find_bwrap,
    probe_sandbox,
)
from dsh_bash_sandbox._seccomp import seccomp_filter
from dsh_bash_sandbox._sources import FIRST_SOURCE_FD, MAX_SOURCE_FDS, MountSources

__all__ = [
    "FILE_DENIAL_SIGNATURES",
    "FIRST_SOURCE_FD",
    "FIX_CONFINE",
    "FIX_INSTALL",
    "FIX_NAMESPACES",
    "FIX_OUTSIDE",
    "ISOLATION_FLAGS",
    "MAX_SOURCE_FDS",
    "NESTED_BUDGET",
    "NESTED_DEPTH",
    "NETWORK_DENIAL_SIGNATURES",
    "SECCOMP_FD",
    "ConfinedProcess",
    "MountSource",
    "MountSources",
    "PathKind",
    "PlaceholderRegistry",
    "SandboxExecutor",
    "SandboxProbe",
    "bwrap_argv",
    "clear_probe_cache",
    "default_registry_dir",
    "find_bwrap",
    "find_nested_protected",
    "host_kind",
    "host_realpath",
    "looks_sandbox_denied",
    "probe_sandbox",
    "seccomp_filter",
    "shell_line",
    "signal_from_status",
]
