"""The error vocabulary of the shell seam: one base class, subclasses carrying the facts."""

from __future__ import annotations

from pathlib import Path


class ShellError(Exception):
    """Base class of every error raised by the shell seam and by executors implementing it."""


class ShellValueError(ShellError, ValueError):
    """A request, spec or configuration value is invalid; ``name`` says which field."""

    def __init__(self, name: str, value: object, reason: str) -> None:
        self.name = name
        self.value = value
        self.reason = reason
        super().__init__(f"{name}={value!r} is invalid: {reason}")


class ReservedEnvKeyError(ShellValueError):
    """An ordinary ``env`` key lies in the managed ``DSH_*`` namespace (case-insensitive).

    Managed facts reach a command only through ``dsh_env``; ``key`` is the offending name.
    """

    def __init__(self, key: str) -> None:
        self.key = key
        ShellValueError.__init__(
            self,
            f"env[{key!r}]",
            key,
            "keys in the DSH_* namespace (any case) are managed; pass them through dsh_env",
        )


class DshEnvironmentError(ShellValueError):
    """A managed environment entry is malformed (key outside ``DSH_*`` or a non-string value)."""

    def __init__(self, key: object, reason: str) -> None:
        self.key = key
        ShellValueError.__init__(self, f"dsh_env[{key!r}]", key, reason)


class ShellWorkdirError(ShellError):
    """The working directory of a command does not exist or is not a usable directory."""

    def __init__(self, workdir: Path, reason: str) -> None:
        self.workdir = workdir
        self.reason = reason
        super().__init__(f"workdir {str(workdir)!r} is unusable: {reason}")


class ShellNotFoundError(ShellError):
    """The shell program an executor runs commands with cannot be found or executed."""

    def __init__(self, shell: str, reason: str) -> None:
        self.shell = shell
        self.reason = reason
        super().__init__(f"shell {shell!r} cannot be started: {reason}")


class ShellSpawnError(ShellError):
    """Starting the command failed for another infrastructure reason (``reason`` says which)."""

    def __init__(self, command: str, reason: str) -> None:
        self.command = command
        self.reason = reason
        super().__init__(f"could not start {command!r}: {reason}")


class ShellCancelledError(ShellError):
    """``run`` was called from a task that was already cancelled; nothing was started."""

    def __init__(self, command: str) -> None:
        self.command = command
        super().__init__(f"aborted before spawn: the calling task was cancelled ({command!r})")


class SandboxUnavailableError(ShellError):
    """A command must be confined by a `SandboxPolicy` and this executor cannot confine it.

    ``cause`` says why (the local executor does not confine, ``bwrap`` is missing or cannot
    create namespaces) and ``fix`` what to do; the command was not run, confined or otherwise.
    """

    def __init__(self, cause: str, fix: str) -> None:
        self.cause = cause
        self.fix = fix
        super().__init__(f"sandbox unavailable: {cause}; fix: {fix}")
