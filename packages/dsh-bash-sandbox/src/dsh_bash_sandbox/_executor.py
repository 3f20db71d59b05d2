"""`SandboxExecutor`: any `ShellExecutor`, with each command re-targeted to run under bwrap."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import os
import shutil
import tempfile
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Final

from dsh_bash_sandbox._argv import (
    SECCOMP_FD,
    WORKSPACE_FD,
    PathKind,
    bwrap_argv,
    find_nested_protected,
    host_kind,
    host_realpath,
    shell_line,
    signal_from_status,
)
from dsh_bash_sandbox._placeholders import (
    PlaceholderHold,
    PlaceholderRegistry,
    default_registry_dir,
    is_placeholder,
)
from dsh_bash_sandbox._probe import FIX_OUTSIDE, SandboxProbe, probe_sandbox
from dsh_bash_sandbox._seccomp import seccomp_filter
from dsh_bash_sandbox._sources import MountSources, PinnedView
from dsh_shell import (
    ProcessRead,
    ProcessStatus,
    SandboxPolicy,
    SandboxUnavailableError,
    ShellExecRequest,
    ShellExecSpec,
    ShellExecutor,
    ShellProcess,
    ShellRunResult,
    ShellValueError,
    WorkspacePin,
    WorkspacePinLookup,
    program_inside,
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


def _close_all(fds: dict[WorkspacePin, int]) -> None:
    for fd in fds.values():
        with contextlib.suppress(OSError):
            os.close(fd)
    fds.clear()


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

    def __init__(self, inner: ShellProcess, hold: PlaceholderHold | None = None) -> None:
        self.inner = inner
        self._hold = hold

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
        if self._hold is not None:  # settled: its placeholders are released (idempotent)
            self._hold.release()
        return self.status

    def read_output(self) -> ProcessRead:
        """The output since the previous read (consuming, incremental)."""
        return self.inner.read_output()

    def kill(self) -> bool:
        """Terminate the command (and with it the sandbox); True the first time while running."""
        return self.inner.kill()


def _writable_roots(policy: SandboxPolicy) -> tuple[Path, ...]:
    """The folders a command under ``policy`` may write (none under danger-full-access)."""
    if policy.mode == "danger-full-access":
        return ()
    if policy.mode == "read-only":
        return () if policy.temp_dir is None else (policy.temp_dir,)
    return policy.writable_paths


def _missing_or_placeholder(path: Path) -> bool:
    """Whether ``path`` is missing, or is a placeholder another command holds (joined, so that
    its last user cannot remove it while this command has it mounted)."""
    try:
        return is_placeholder(os.lstat(path))
    except FileNotFoundError:
        return True
    except OSError:
        return False


def _missing_protected(
    policy: SandboxPolicy, view: PinnedView | None = None
) -> Iterator[tuple[Path, Path]]:
    """Where a placeholder must hold a protected path that does not exist yet: each protected
    name directly in the workspace and the configured writable roots, and the first missing
    component of each protected path inside one of them (never in the private temp dir).
    Each as its path and the path to reach it by: below a pinned workspace (``view``),
    through the pin's descriptor, never through the workspace's name."""
    if policy.mode != "workspace-write":
        return
    realpath = view.realpath if view is not None else host_realpath
    through = view.through if view is not None else (lambda path: path)
    roots = [policy.workspace, *policy.writable_roots]
    real_roots = [realpath(r) for r in roots if r is not None]
    real_roots = [root for root in dict.fromkeys(real_roots) if os.path.isdir(through(root))]
    for root in real_roots:
        for name in policy.protected_names:
            if _missing_or_placeholder(through(root / name)):
                yield root / name, through(root / name)
    for target in policy.protected_targets:
        real = realpath(target)  # the part that exists, resolved
        inside = next((r for r in real_roots if r == real or r in real.parents), None)
        if inside is None or real == inside:
            continue
        path = inside
        for part in real.relative_to(inside).parts:
            path = path / part
            if _missing_or_placeholder(through(path)):
                yield path, through(path)
                break


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

    Fails closed: before the first confined command `probe_sandbox` finds ``bwrap`` (once per
    process, never again on ``PATH``) and proves with a canary that it confines; when it
    cannot, ``run`` and ``start`` raise `SandboxUnavailableError` naming the cause and the fix,
    and nothing runs. So they do when ``bwrap``, or the outer shell of ``inner`` (its
    ``shell_path``, when it names one: the local executor's does), lies inside a folder the
    command may write — a confined command could have replaced it. A protected path missing
    from a writable root (no ``.claude`` yet) is held by an empty read-only placeholder while
    the command runs, so it cannot be created either; the placeholder is removed afterwards.
    Each one made is recorded in ``placeholder_registry`` (default `default_registry_dir`) and
    every executor sweeps that registry when it starts: a placeholder whose holders were all
    killed (``kill -9`` of the harness) is removed then (`PlaceholderRegistry.sweep`).
    Each session (``DSH_SESSION_ID`` in ``dsh_env``, else the
    workspace) gets a private 0700 ``$TMPDIR`` under ``temp_root`` (default: the system temp
    directory), writable in both confined modes and removed by `aclose` (which also closes
    ``inner``: the sandbox owns it), else when the executor is collected or the interpreter
    exits. A foreground result whose failure looks like a refusal
    carries ``sandbox_denied`` (`looks_sandbox_denied`).

    Workspace pinning: with ``workspace_pins`` (a session id's `WorkspacePin`, looked up by
    ``DSH_SESSION_ID``), a confined command whose policy workspace is the session's pinned path
    first verifies the pin (`WorkspacePin.verify`): once the path resolves elsewhere or is
    another directory, ``run`` and ``start`` raise `WorkspaceChangedError` and nothing runs.
    The workspace is then bound from a descriptor of the pinned directory (``bwrap
    --bind-fd``, held by the executor until `aclose`), never by name, so a rename between the
    check and the spawn cannot re-point it either (bwrap then fails to mount: closed). Every
    other mount at or below a writable root comes from a descriptor too (`MountSources`), and
    below a pinned workspace the mounts are worked out through the pin's descriptor, never
    through its name.
    """

    def __init__(
        self,
        inner: ShellExecutor,
        *,
        policy: SandboxPolicy | None = None,
        bwrap: str = "bwrap",
        shell: str = "/bin/bash",
        temp_root: Path | None = None,
        workspace_pins: WorkspacePinLookup | None = None,
        placeholder_registry: Path | None = None,
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
        self._holds: set[PlaceholderHold] = set()
        self._checked: dict[tuple[Path, ...], SandboxProbe] = {}
        self._watchers: set[asyncio.Task[None]] = set()
        self.workspace_pins = workspace_pins
        self._pinned_fds: dict[WorkspacePin, int] = {}
        self._fd_finalizer = weakref.finalize(self, _close_all, self._pinned_fds)
        self.placeholders = PlaceholderRegistry(placeholder_registry or default_registry_dir())
        self.placeholders.sweep()  # placeholders left by a harness that was killed

    def probe(self, workspace: Path | None = None) -> SandboxProbe:
        """`probe_sandbox` of this executor's ``bwrap``, refused inside the writable roots of
        its policy with ``workspace`` as one of them (default: the policy's workspace, else the
        current directory, where a command without a workdir runs); also unavailable when the
        outer shell of ``inner`` lies inside one."""
        policy = self.policy if self.policy is not None else SandboxPolicy()
        if workspace is None and policy.workspace is None:
            workspace = Path.cwd()
        if workspace is not None:
            policy = dataclasses.replace(policy, workspace=Path(os.path.realpath(workspace)))
        if policy.mode != "workspace-write":
            policy = dataclasses.replace(policy, mode="workspace-write")
        roots = _writable_roots(policy)
        probe = probe_sandbox(self.bwrap, writable_roots=roots)
        self._probe = probe
        refusal = self._shell_refusal(roots)
        if probe.available and refusal is not None:
            return dataclasses.replace(probe, available=False, cause=refusal, fix=FIX_OUTSIDE)
        return probe

    def _shell_refusal(self, roots: tuple[Path, ...]) -> str | None:
        shell = getattr(self.inner, "shell_path", None)
        if not isinstance(shell, str):
            return None
        root = program_inside(shell, roots)
        if root is None:
            return None
        return (
            f"the outer shell at {shell} lies inside the writable root {root}, where a "
            "confined command could have put it or could replace it; it was not run"
        )

    def _check_programs(self, policy: SandboxPolicy) -> SandboxProbe:
        """The probe, raising `SandboxUnavailableError` unless ``bwrap`` and the outer shell
        lie outside every folder a command under ``policy`` may write."""
        roots = _writable_roots(policy)
        probe = self._checked.get(roots)
        if probe is None:
            probe = probe_sandbox(self.bwrap, writable_roots=roots)
            refusal = self._shell_refusal(roots)
            if probe.available and refusal is not None:
                probe = dataclasses.replace(probe, available=False, cause=refusal, fix=FIX_OUTSIDE)
            if len(self._checked) >= 64:  # a few workspaces per executor: keep it small
                self._checked.clear()
            self._checked[roots] = probe
        self._probe = probe
        probe.raise_unless_available()
        return probe

    def resolve(self, request: ShellExecRequest) -> ShellExecSpec:
        """The inner executor's spec, carrying the policy this command will be confined by."""
        spec = self.inner.resolve(request)
        return dataclasses.replace(spec, sandbox=self._policy_for(spec))

    async def run(self, spec: ShellExecSpec) -> ShellRunResult:
        """Run confined in the foreground; `SandboxUnavailableError` when it cannot be."""
        policy = self._policy_for(spec)
        if policy.mode == "danger-full-access":
            return await self.inner.run(dataclasses.replace(spec, sandbox=None))
        policy = self._with_temp_dir(spec, policy)
        if self._probe is None:  # the first trial runs bwrap: off the event loop
            await asyncio.to_thread(self._check_programs, policy)
        self._check_programs(policy)
        pinned = self._pinned_workspace(spec, policy)
        hold = self._hold_placeholders(policy, pinned)  # a few syscalls: no thread hop
        sources = MountSources()
        try:
            confined = self._confined(spec, policy, pinned, sources)
            result = await self.inner.run(confined)
        finally:
            sources.close()
            hold.release()
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
        policy = self._with_temp_dir(spec, policy)
        self._check_programs(policy)
        pinned = self._pinned_workspace(spec, policy)
        hold = self._hold_placeholders(policy, pinned)
        sources = MountSources()
        try:
            process = self.inner.start(self._confined(spec, policy, pinned, sources))
        except BaseException:
            sources.close()
            hold.release()
            raise
        hold.on_release(sources.close)  # the descriptors are held until the process settles
        self._holds.add(hold)
        task = asyncio.get_running_loop().create_task(self._release_after(process, hold))
        self._watchers.add(task)
        task.add_done_callback(self._watchers.discard)
        return ConfinedProcess(process, hold)

    def _hold_placeholders(self, policy: SandboxPolicy, pinned: int | None) -> PlaceholderHold:
        hold = PlaceholderHold(self.placeholders)
        view = None
        if pinned is not None and policy.workspace is not None:
            view = PinnedView(policy.workspace, pinned)
        try:
            for path, reached_by in _missing_protected(policy, view):
                hold.hold(reached_by, name=path)
        except OSError as error:
            hold.release()
            raise SandboxUnavailableError(
                f"the protected path {error.filename or '?'} does not exist and cannot be held "
                f"read-only ({error.strerror or error})",
                "make the folder writable by dsh, or create that path yourself",
            ) from error
        return hold

    async def _release_after(self, process: ShellProcess, hold: PlaceholderHold) -> None:
        try:
            await process.wait()
        finally:
            self._holds.discard(hold)
            hold.release()

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
            if self._watchers:  # the inner executor killed its processes: they settle
                await asyncio.wait(set(self._watchers), timeout=10)
            for hold in list(self._holds):
                hold.release()
            self._holds.clear()
            _close_all(self._pinned_fds)
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

    def _pinned_workspace(self, spec: ShellExecSpec, policy: SandboxPolicy) -> int | None:
        """The descriptor of the session's pinned workspace, once the pin is verified
        (`WorkspaceChangedError` otherwise); ``None`` when no pin applies to ``policy``."""
        session = (spec.dsh_env or {}).get("DSH_SESSION_ID")
        if self.workspace_pins is None or not session or policy.workspace is None:
            return None
        pin = self.workspace_pins(session)
        if pin is None or pin.path != policy.workspace:
            return None
        pin.verify(session_id=session)
        fd = self._pinned_fds.get(pin)
        if fd is None:
            fd = self._pinned_fds[pin] = pin.open(session_id=session)
        return fd

    def _confined(
        self,
        spec: ShellExecSpec,
        policy: SandboxPolicy,
        pinned: int | None,
        sources: MountSources,
    ) -> ShellExecSpec:
        """``spec`` re-targeted to run under ``bwrap``; every mount source at or below a
        writable root is opened into ``sources`` (the caller closes it once the command has
        ended), from the pinned workspace's descriptor ``pinned`` below the workspace."""
        kind: Callable[[Path], PathKind] = host_kind
        realpath: Callable[[Path], Path] = host_realpath
        nested: Callable[[Path, tuple[str, ...]], list[Path]] = find_nested_protected
        if pinned is not None and policy.workspace is not None:
            sources.borrow(policy.workspace, pinned)
            view = PinnedView(policy.workspace, pinned)  # never through the workspace's name
            kind, realpath, nested = view.kind, view.realpath, view.nested
        rules = self._seccomp_file()
        argv = bwrap_argv(
            policy,
            workdir=spec.workdir,
            command=spec.command,
            bwrap=self._bwrap_path(),
            shell=self.shell,
            seccomp_fd=SECCOMP_FD if rules is not None else None,
            workspace_fd=WORKSPACE_FD if pinned is not None else None,
            sources=sources,
            kind=kind,
            realpath=realpath,
            nested=nested,
        )
        pid = os.getpid()
        source = f"/proc/{pid}/fd/{pinned}" if pinned is not None else None
        opened = [(number, f"/proc/{pid}/fd/{fd}") for number, fd in sources.passed]
        line = shell_line(argv, rules, workspace_source=source, sources=opened)
        return dataclasses.replace(spec, command=line, sandbox=None)

    def _bwrap_path(self) -> str:
        path = self._probe.path if self._probe is not None else None
        if path is None:  # never reached: a run checks the programs first
            raise SandboxUnavailableError("bwrap was not found", FIX_OUTSIDE)
        return path

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
