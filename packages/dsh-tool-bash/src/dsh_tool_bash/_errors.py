"""The errors of dsh-tool-bash: shell_env declarations and resolutions, and background jobs."""

from __future__ import annotations

from dsh_tools import ToolError

__all__ = [
    "BackgroundDisabledError",
    "DuplicateContributorError",
    "ForeignJobError",
    "InvalidContributorError",
    "InvalidEnvKeyError",
    "JobError",
    "KeyOwnershipError",
    "MissingKeyDescriptionError",
    "NonStringEnvValueError",
    "ReservedShellEnvKeyError",
    "ShellEnvDeclarationError",
    "ShellEnvError",
    "ShellEnvResolveError",
    "UndeclaredEnvKeyError",
    "UnknownJobError",
]


class ShellEnvError(Exception):
    """Base of every ``shell_env`` registry error; ``contributor`` names the contributor."""

    def __init__(self, contributor: str, message: str) -> None:
        self.contributor = contributor
        super().__init__(message)


class ShellEnvDeclarationError(ShellEnvError, ValueError):
    """``register`` refused a contributor; nothing was registered.

    ``key`` is the offending declared key when the problem is about one key, else ``None``.
    """

    def __init__(self, contributor: str, message: str, *, key: str | None = None) -> None:
        self.key = key
        super().__init__(contributor, message)


class InvalidContributorError(ShellEnvDeclarationError):
    """The contributor itself is malformed: blank name, ``keys`` not a mapping, no ``resolve``."""


class DuplicateContributorError(ShellEnvDeclarationError):
    """A contributor with this name is already registered (or the name is the built-ins')."""

    def __init__(self, contributor: str) -> None:
        super().__init__(
            contributor,
            f"shell_env contributor {contributor!r} is already registered; dispose of it first",
        )


class InvalidEnvKeyError(ShellEnvDeclarationError):
    """A declared key is not ``DSH_`` followed by an upper-case letter and ``[A-Z0-9_]*``."""

    def __init__(self, contributor: str, key: object) -> None:
        super().__init__(
            contributor,
            f"shell_env contributor {contributor!r} declared invalid key {key!r}: keys are "
            "'DSH_' followed by an upper-case letter, then upper-case letters, digits or '_'",
            key=key if isinstance(key, str) else repr(key),
        )


class ReservedShellEnvKeyError(ShellEnvDeclarationError):
    """A declared key is reserved: ``DSH_HOME``, ``DSH_SHELL`` or ``DSH_SESSION_ID``."""

    def __init__(self, contributor: str, key: str) -> None:
        super().__init__(
            contributor,
            f"shell_env contributor {contributor!r} cannot own reserved key {key}: the registry "
            "provides it itself",
            key=key,
        )


class MissingKeyDescriptionError(ShellEnvDeclarationError):
    """A declared key has no description (not a string, or blank)."""

    def __init__(self, contributor: str, key: str) -> None:
        super().__init__(
            contributor,
            f"shell_env contributor {contributor!r} must describe {key} with a non-blank string",
            key=key,
        )


class KeyOwnershipError(ShellEnvDeclarationError):
    """A declared key is already owned by another registered contributor (``owner``)."""

    def __init__(self, contributor: str, key: str, owner: str) -> None:
        self.owner = owner
        super().__init__(
            contributor,
            f"shell_env key {key} is already owned by contributor {owner!r}; contributor "
            f"{contributor!r} cannot also own it",
            key=key,
        )


class ShellEnvResolveError(ShellEnvError):
    """A contributor's ``resolve`` returned something the registry refuses; ``key`` says where."""

    def __init__(self, contributor: str, message: str, *, key: str | None = None) -> None:
        self.key = key
        super().__init__(contributor, message)


class UndeclaredEnvKeyError(ShellEnvResolveError):
    """A resolver returned a key its contributor did not declare."""

    def __init__(self, contributor: str, key: object) -> None:
        super().__init__(
            contributor,
            f"shell_env contributor {contributor!r} returned undeclared key {key!r}",
            key=key if isinstance(key, str) else repr(key),
        )


class NonStringEnvValueError(ShellEnvResolveError):
    """A resolver returned a value that is not a string (or a string holding a NUL byte)."""

    def __init__(self, contributor: str, key: str, value: object) -> None:
        self.value = value
        what = "a string holding a NUL byte" if isinstance(value, str) else type(value).__name__
        super().__init__(
            contributor,
            f"shell_env contributor {contributor!r} returned a non-string value for {key} ({what})",
            key=key,
        )


class JobError(ToolError):
    """Base of the background-job errors; ``job_id`` names the job."""

    def __init__(self, job_id: str, message: str, *, code: str | None = None) -> None:
        self.job_id = job_id
        super().__init__(message, code=code)


class UnknownJobError(JobError):
    """No job has this id (or its owner was disposed and the job forgotten)."""

    default_code = "UNKNOWN_JOB"

    def __init__(self, job_id: str) -> None:
        super().__init__(job_id, f"unknown background job {job_id!r}; job_list shows yours")


class ForeignJobError(JobError):
    """The job exists but belongs to another session; ``owner`` is not revealed in the message."""

    default_code = "FOREIGN_JOB"

    def __init__(self, job_id: str) -> None:
        super().__init__(job_id, f"background job {job_id} belongs to another session")


class BackgroundDisabledError(ToolError):
    """``run_in_background`` was requested from a bash tool built with background disabled."""

    default_code = "BACKGROUND_DISABLED"

    def __init__(self) -> None:
        super().__init__(
            "run_in_background is disabled for this deployment (enable_background=False); "
            "run the command in the foreground within the timeout"
        )
