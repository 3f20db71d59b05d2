"""What a caller asks for (`ShellExecRequest`) and what an executor runs (`ShellExecSpec`)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from dsh_shell._errors import ShellValueError
from dsh_shell._namespace import DshEnvironment, validate_dsh_environment, validate_ordinary_env
from dsh_shell._sandbox import SandboxPolicy

OutputStream = Literal["stdout", "stderr"]
"""Which stream a piece of live output came from."""

OutputListener = Callable[[OutputStream, str], None]
"""``(stream, text)``: output of a running command as it arrives (see `ShellExecSpec`)."""


@dataclass(frozen=True, slots=True)
class ShellExecRequest:
    """A command as a caller asks for it; `ShellExecutor.resolve` turns it into a spec.

    ``timeout`` is in seconds and ``stdout_max_bytes`` is the in-memory stdout budget (trusted
    callers only); both default to the executor's configuration. ``stdin`` is written once and
    closed (absent: ``/dev/null``). ``env`` is an ordinary overlay for trusted in-process
    plugins; ``dsh_env`` is the trusted managed ``DSH_*`` overlay, applied last.
    ``sandbox`` is the `SandboxPolicy` the command must be confined by (see `ShellExecSpec`).
    ``on_output`` is told the output while the command runs (see `ShellExecSpec`).
    """

    command: str
    workdir: str | os.PathLike[str] | None = None
    timeout: float | None = None
    stdout_max_bytes: int | None = None
    stdin: str | bytes | None = None
    env: Mapping[str, str] | None = None
    dsh_env: DshEnvironment | None = None
    sandbox: SandboxPolicy | None = None
    on_output: OutputListener | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class ShellExecSpec:
    """A resolved command: every limit filled in and every overlay checked.

    Construction validates: ``workdir`` absolute, ``timeout`` and ``stdout_max_bytes``
    positive and finite, ``env`` free of ``DSH_*`` names (any case), ``dsh_env`` only
    well-formed ``DSH_*`` keys, ``sandbox`` a `SandboxPolicy`. ``stdin``, ``env``, ``dsh_env``
    and ``sandbox`` stay ``None`` when absent.

    ``sandbox``: a spec whose policy mode is not ``danger-full-access`` must be confined by
    that policy. An executor that cannot confine it raises `SandboxUnavailableError` from
    ``run`` and ``start``; it never runs the command unconfined. ``None`` (or
    ``danger-full-access``) asks for no confinement.

    ``on_output``: a foreground ``run`` calls it with each piece of output as it arrives, in
    order per stream, decoded as UTF-8 (a character split between reads is held back until it
    is whole; invalid bytes become U+FFFD). It is for showing progress: the result is still
    the record, and the pieces of a stream joined equal its text whenever it was not
    truncated. It is called on the executor's event loop and must return quickly; an exception
    it raises is swallowed (the command goes on). ``start`` ignores it (read a background
    process with ``read_output``). An executor that cannot stream may ignore it (the contract
    suite's ``live_output`` capability).
    """

    command: str
    workdir: Path
    timeout: float
    stdout_max_bytes: int
    stdin: str | bytes | None = None
    env: Mapping[str, str] | None = None
    dsh_env: DshEnvironment | None = None
    sandbox: SandboxPolicy | None = None
    on_output: OutputListener | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.command, str) or "\0" in self.command:
            raise ShellValueError("command", self.command, "a string without NUL bytes")
        workdir = Path(self.workdir)
        if not workdir.is_absolute():
            raise ShellValueError("workdir", self.workdir, "a resolved workdir is absolute")
        object.__setattr__(self, "workdir", workdir)
        check_timeout("timeout", self.timeout)
        check_byte_count("stdout_max_bytes", self.stdout_max_bytes)
        if self.stdin is not None and not isinstance(self.stdin, str | bytes):
            raise ShellValueError("stdin", self.stdin, "stdin is str or bytes")
        if self.env is not None:
            object.__setattr__(self, "env", validate_ordinary_env(self.env))
        if self.dsh_env is not None:
            object.__setattr__(self, "dsh_env", validate_dsh_environment(self.dsh_env))
        if self.sandbox is not None and not isinstance(self.sandbox, SandboxPolicy):
            raise ShellValueError("sandbox", self.sandbox, "a SandboxPolicy or None")
        if self.on_output is not None and not callable(self.on_output):
            raise ShellValueError("on_output", self.on_output, "a callable or None")


def check_timeout(name: str, value: object) -> float:
    """Return ``value`` as seconds if it is a positive finite number, else raise naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ShellValueError(name, value, "a number of seconds")
    if not math.isfinite(value) or value <= 0:
        raise ShellValueError(name, value, "a positive, finite number of seconds")
    return float(value)


def check_byte_count(name: str, value: object) -> int:
    """Return ``value`` if it is a positive ``int`` byte count, else raise naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ShellValueError(name, value, "a positive whole number of bytes")
    return value


def resolve_request(
    request: ShellExecRequest,
    *,
    default_workdir: str | os.PathLike[str] | None,
    default_timeout: float,
    max_timeout: float,
    default_stdout_max_bytes: int,
) -> ShellExecSpec:
    """The shared ``resolve`` of executors: fill defaults, clamp the timeout, check overlays.

    The workdir defaults to ``default_workdir``, else the process's current directory, and a
    relative one is made absolute against it. A timeout above ``max_timeout`` is clamped;
    a non-positive or non-finite one raises `ShellValueError` naming ``request.timeout``.
    An ``env`` key in the ``DSH_*`` namespace raises `ReservedEnvKeyError`. The request's
    ``sandbox`` policy and ``on_output`` are carried over unchanged.
    """
    base = Path(default_workdir) if default_workdir is not None else Path.cwd()
    workdir = base if request.workdir is None else base / Path(request.workdir)
    timeout = default_timeout
    if request.timeout is not None:
        timeout = min(check_timeout("request.timeout", request.timeout), max_timeout)
    stdout_max_bytes = default_stdout_max_bytes
    if request.stdout_max_bytes is not None:
        stdout_max_bytes = check_byte_count("request.stdout_max_bytes", request.stdout_max_bytes)
    return ShellExecSpec(
        command=request.command,
        workdir=workdir.absolute(),
        timeout=timeout,
        stdout_max_bytes=stdout_max_bytes,
        stdin=request.stdin,
        env=request.env,
        dsh_env=request.dsh_env,
        sandbox=request.sandbox,
        on_output=request.on_output,
    )
