"""`SandboxExecutor`: any `ShellExecutor`, with each command re-targeted to run under bwrap."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import os
import shutil
import tempfile
import weakref
from pathlib import Path
from types import TracebackType
from typing import Final

from dsh_bash_sandbox._argv import SECCOMP_FD, bwrap_argv, shell_line, signal_from_status
from dsh_bash_sandbox._probe import SandboxProbe, probe_sandbox
from dsh_bash_sandbox._seccomp import seccomp_filter
from dsh_shell import (
    ProcessRead,
    ProcessStatus,
    SandboxPolicy,
    ShellExecRequest,
    ShellExecSpec,
    ShellExecutor,
    ShellProcess,
    ShellRunResult,
    ShellValueError,
)

FILE_DENIAL_SIGNATURES: Final[tuple[str, ...]] = (
    "Read-only file system",
    "Permission denied",
    "Operation not permitted",
)
"""Output that, with a nonzero exit, looks like the sandbox refused a file effect."""

NETWORK_DENIAL_SIGNATURES: Final[tuple[str, ...]] = (
    "Network is unreachable",
    "Could not resolve host",
    "Connection refused",
    "Temporary failure in name resolution",
    "Name or service not known",
)
"""Output that, with a nonzero exit and the network off, looks like the sandbox refused it."""


def _remove_all(paths: set[Path]) -> None:
    for path in list(paths):
        shutil.rmtree(path, ignore_errors=True)
    paths.clear()


def looks_sandbox_denied(result: ShellRunResult, policy: SandboxPolicy) -> bool:
    """Whether a confined command's result looks refused by the sandbox (a hint, not proof).

    A nonzero exit (not a signal, not a timeout) and a file-denial signature in either stream,
    or a network-denial signature while ``policy.network`` is off.
    """
    if result.exit_code in (None, 0) or result.timed_out or result.aborted:
        return False
    text = f"{result.stdout.text}\n{result.stderr.text}"
    signatures = FILE_DENIAL_SIGNATURES
    if not policy.network:
        signatures += NETWORK_DENIAL_SIGNATURES
    return any(signature in text for signature in signatures)


class ConfinedProcess:
    """A background process of the inner executor, with ``bwrap``'s signal status read back.

    A confined command killed by signal N makes ``bwrap`` exit 128 + N; this view reports it
    as the inner executor reports an unconfined one: ``killed``, no exit code, the signal.
    """

    def __init__(self, inner: ShellProcess) -> None:
        self.inner = inner

    @property
    def status(self) -> ProcessStatus:
        """``running``, then ``completed`` or ``killed`` (also when it died of a signal)."""
        status = self.inner.status
        if status == "completed" and signal_from_status(self.inner.exit_code) is not None:
            return "killed"
        return status

    @property
    def exit_code(self) -> int | None:
        """The exit code once settled; ``None`` while running or when killed by a signal."""
        code = self.inner.exit_code
        return None if signal_from_status(code) is not None else code

    @property
    def signal(self) -> str | None:
        """The name of the signal that ended the command, if one did."""
        return signal_from_status(self.inner.exit_code) or self.inner.signal

    async def wait(self) -> ProcessStatus:
        """Wait until the process has settled."""
        await self.inner.wait()
        return self.status

    def read_output(self) -> ProcessRead:
        """The output since the previous read (consuming, incremental)."""
        return self.inner.read_output()

    def kill(self) -> bool:
        """Terminate the command (and with it the sandbox); True the first time while running."""
        return self.inner.kill()


class SandboxExecutor:
    """A `ShellExecutor` that confines each command of an inner executor with bubblewrap.

    ``resolve`` delegates to ``inner`` and attaches the policy: the request's own
    ``sandbox``, else ``policy``, else ``SandboxPolicy()`` (``workspace-write``, network off);
    a policy without ``workspace`` gets the spec's workdir (symlinks resolved). ``run`` and
    ``start`` apply the same choice to a spec built elsewhere. Under ``danger-full-access``
    the spec goes to ``inner`` unchanged (without its policy). Otherwise the command is
    re-targeted as ``bwrap <mounts and namespaces> -- <shell> -c <command>`` (see
    `bwrap_argv`), so ``inner`` still builds the child environment (scrub, terminal defaults,
    ``env``, ``dsh_env``) and owns timeouts, output bounds, spill files and the kill; the PID
    namespace makes that kill airtight (nothing of the command outlives its sandbox).

    Fails closed: before the first confined command `probe_sandbox` runs once per ``bwrap``;
    when it fails, ``run`` and ``start`` raise `SandboxUnavailableError` naming the cause and
    the fix, and nothing runs. Each session (``DSH_SESSION_ID`` in ``dsh_env``, else the
    workspace) gets a private 0700 ``$TMPDIR`` under ``temp_root`` (default: the system temp
    directory), writable in both confined modes and removed by `aclose` (which also closes
    ``inner``: the sandbox owns it), else when the executor is collected or the interpreter
    exits. A foreground result whose failure looks like a refusal
    carries ``sandbox_denied`` (`looks_sandbox_denied`).
    """

    def __init__(
        self,
        inner: ShellExecutor,
        *,
        policy: SandboxPolicy | None = None,
        bwrap: str = "bwrap",
        shell: str = "/bin/bash",
        temp_root: Path | None = None,
    ) -> None:
        if policy is not None and not isinstance(policy, SandboxPolicy):
            raise ShellValueError("policy", policy, "a SandboxPolicy or None")
        if not isinstance(bwrap, str) or not bwrap or "\0" in bwrap:
            raise ShellValueError("bwrap", bwrap, "a program name or path")
        if not isinstance(shell, str) or not os.path.isabs(shell) or "\0" in shell:
            raise ShellValueError("shell", shell, "an absolute path to a shell")
        self.inner = inner
        self.policy = policy
        self.bwrap = bwrap
        self.shell = shell
        self.temp_root = Path(temp_root).absolute() if temp_root is not None else None
        self._temp_dirs: dict[str, Path] = {}
        # Directories this executor created (temp dirs, the seccomp file's); removed by
        # aclose(), else when the executor is collected or the interpreter exits.
        self._owned: set[Path] = set()
        self._finalizer = weakref.finalize(self, _remove_all, self._owned)
        self._probe: SandboxProbe | None = None
        self._seccomp: Path | None = None

    def probe(self) -> SandboxProbe:
        """`probe_sandbox` of this executor's ``bwrap`` (cached after the first call)."""
        if self._probe is None:
            self._probe = probe_sandbox(self.bwrap)
        return self._probe

    def resolve(self, request: ShellExecRequest) -> ShellExecSpec:
        """The inner executor's spec, carrying the policy this command will be confined by."""
        spec = self.inner.resolve(request)
        return dataclasses.replace(spec, sandbox=self._policy_for(spec))

    async def run(self, spec: ShellExecSpec) -> ShellRunResult:
        """Run confined in the foreground; `SandboxUnavailableError` when it cannot be."""
        policy = self._policy_for(spec)
        if policy.mode == "danger-full-access":
            return await self.inner.run(dataclasses.replace(spec, sandbox=None))
        probe = self._probe if self._probe is not None else await asyncio.to_thread(self.probe)
        probe.raise_unless_available()
        policy = self._with_temp_dir(spec, policy)
        result = await self.inner.run(self._confined(spec, policy))
        died_of = signal_from_status(result.exit_code)
        if died_of is not None:
            result = dataclasses.replace(result, exit_code=None, signal=died_of)
        if looks_sandbox_denied(result, policy):
            result = dataclasses.replace(result, sandbox_denied=policy.mode)
        return result

    def start(self, spec: ShellExecSpec) -> ShellProcess:
        """Start confined in the background; `SandboxUnavailableError` when it cannot be."""
        policy = self._policy_for(spec)
        if policy.mode == "danger-full-access":
            return self.inner.start(dataclasses.replace(spec, sandbox=None))
        self.probe().raise_unless_available()
        policy = self._with_temp_dir(spec, policy)
        return ConfinedProcess(self.inner.start(self._confined(spec, policy)))

    def temp_dir_for(self, spec: ShellExecSpec) -> Path:
        """The private ``$TMPDIR`` of ``spec``'s session (created, 0700, on first use)."""
        return self._temp_dir(self._session_key(spec, self._policy_for(spec)))

    async def aclose(self) -> None:
        """Close the inner executor (if it has ``aclose``), then remove the temp directories."""
        close = getattr(self.inner, "aclose", None)
        try:
            if close is not None:
                await close()
        finally:
            self._temp_dirs.clear()
            self._seccomp = None
            owned = list(self._owned)
            self._owned.clear()
            await asyncio.to_thread(_remove_all, set(owned))

    async def __aenter__(self) -> SandboxExecutor:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    def _policy_for(self, spec: ShellExecSpec) -> SandboxPolicy:
        policy = spec.sandbox if spec.sandbox is not None else self.policy
        if policy is None:
            policy = SandboxPolicy()
        if policy.workspace is None and policy.mode != "danger-full-access":
            workspace = Path(os.path.realpath(spec.workdir))
            policy = dataclasses.replace(policy, workspace=workspace)
        return policy

    def _session_key(self, spec: ShellExecSpec, policy: SandboxPolicy) -> str:
        session = (spec.dsh_env or {}).get("DSH_SESSION_ID")
        if session:
            return f"session:{session}"
        return f"workspace:{policy.workspace}"

    def _with_temp_dir(self, spec: ShellExecSpec, policy: SandboxPolicy) -> SandboxPolicy:
        if policy.temp_dir is not None:
            return policy
        temp_dir = self._temp_dir(self._session_key(spec, policy))
        return dataclasses.replace(policy, temp_dir=temp_dir)

    def _temp_dir(self, key: str) -> Path:
        path = self._temp_dirs.get(key)
        if path is None or not path.is_dir():
            digest = hashlib.sha256(key.encode()).hexdigest()[:12]
            root = str(self.temp_root) if self.temp_root is not None else None
            path = Path(tempfile.mkdtemp(prefix=f"dsh-sandbox-{digest}-", dir=root))
            self._temp_dirs[key] = path
            self._owned.add(path)
        return path

    def _confined(self, spec: ShellExecSpec, policy: SandboxPolicy) -> ShellExecSpec:
        rules = self._seccomp_file()
        argv = bwrap_argv(
            policy,
            workdir=spec.workdir,
            command=spec.command,
            bwrap=self.probe().path or self.bwrap,
            shell=self.shell,
            seccomp_fd=SECCOMP_FD if rules is not None else None,
        )
        return dataclasses.replace(spec, command=shell_line(argv, rules), sandbox=None)

    def _seccomp_file(self) -> Path | None:
        """The filter file (written once, 0600 in a private 0700 directory), if any."""
        if self._seccomp is None or not self._seccomp.is_file():
            rules = seccomp_filter()
            if rules is None:
                return None
            root = str(self.temp_root) if self.temp_root is not None else None
            directory = Path(tempfile.mkdtemp(prefix="dsh-sandbox-seccomp-", dir=root))
            self._owned.add(directory)
            path = directory / "filter.bpf"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(rules)
            self._seccomp = path
        return self._seccomp
