"""`probe_sandbox`: does ``bwrap`` here confine a command? Found once, proven once, per process."""

from __future__ import annotations

import os
import secrets
import subprocess
import tempfile
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from dsh_bash_sandbox._seccomp import seccomp_filter
from dsh_shell import (
    SYSTEM_PROGRAM_DIRS,
    SandboxUnavailableError,
    ShellNotFoundError,
    find_program,
    program_inside,
)

ISOLATION_FLAGS: Final[tuple[str, ...]] = (
    "--unshare-all",
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "ALL",
)
"""The namespace and privilege flags of every confined command (network: ``--share-net``)."""

FIX_INSTALL: Final = (
    "install bubblewrap: apt-get install bubblewrap (or pass --sandbox danger-full-access)"
)
"""The fix named when ``bwrap`` cannot be found or executed."""

FIX_NAMESPACES: Final = (
    "run where bwrap may create namespaces (allow unprivileged user namespaces, e.g. "
    "sysctl kernel.unprivileged_userns_clone=1 or kernel.apparmor_restrict_unprivileged_userns=0, "
    "or a container with namespace support) or pass --sandbox danger-full-access"
)
"""The fix named when ``bwrap`` runs but cannot build the sandbox."""

FIX_OUTSIDE: Final = (
    "install bwrap (and bash) outside every folder a confined command may write, name it by "
    'absolute path ([sandbox] bwrap = "/usr/bin/bwrap"), and remove the one found'
)
"""The fix named when the program found lies inside a writable root."""

FIX_CONFINE: Final = (
    'name the real bubblewrap ([sandbox] bwrap = "/usr/bin/bwrap"; apt-get install '
    "bubblewrap) or pass --sandbox danger-full-access"
)
"""The fix named when ``bwrap`` runs but its canary shows it does not confine."""

_PROBE_TIMEOUT = 30.0

# The canary: prints the nonce and its PID and network namespaces, tries to write into a
# read-only folder, then writes the nonce into its writable one. "$1" is the nonce, "$2" the
# writable folder (the read-only one is "$2/ro").
_CANARY = (
    'echo "$1"; readlink /proc/self/ns/pid; readlink /proc/self/ns/net; '
    'echo "$1" > "$2/ro/canary" 2>/dev/null; echo "$1" > "$2/canary"'
)


@dataclass(frozen=True, slots=True)
class SandboxProbe:
    """Whether confined commands can run here, and if not, why and what to do.

    ``bwrap`` is the executable as asked, ``path`` the absolute path it was found at (once per
    process; ``None`` when it was not), ``version`` what ``bwrap --version`` printed.
    ``cause`` and ``fix`` are ``None`` exactly when ``available``.
    """

    available: bool
    bwrap: str
    path: str | None
    version: str | None
    cause: str | None
    fix: str | None

    def raise_unless_available(self) -> None:
        """Raise `SandboxUnavailableError` naming the cause and the fix unless available."""
        if not self.available:
            raise SandboxUnavailableError(self.cause or "unknown", self.fix or FIX_INSTALL)


_found: dict[str, str | None] = {}
_refused: dict[str, str] = {}
_cache: dict[str, SandboxProbe] = {}
_lock = threading.Lock()


def find_bwrap(bwrap: str = "bwrap") -> str | None:
    """The absolute path ``bwrap`` runs as in this process, found on its first use and never
    looked up again; ``None`` when it is not found or was refused. A path is used as given; a
    bare name is searched only in `dsh_shell.SYSTEM_PROGRAM_DIRS`, never on ``PATH``, and one
    found where group or others may write it is refused (`dsh_shell.find_program`)."""
    with _lock:
        if bwrap not in _found:
            try:
                _found[bwrap] = find_program(bwrap)
            except ShellNotFoundError as refused:
                _found[bwrap] = None
                _refused[bwrap] = refused.reason
        return _found[bwrap]


def probe_sandbox(bwrap: str = "bwrap", *, writable_roots: Iterable[Path] = ()) -> SandboxProbe:
    """Whether ``bwrap`` confines commands here; the trial runs once per executable.

    ``bwrap`` is a program name or a path, found once per process (`find_bwrap`). One found
    inside any of ``writable_roots`` (as named or with its symlinks resolved) is refused
    without being run: a confined command could have put it there. Otherwise the trial runs
    ``bwrap --version`` and a canary under the isolation flags (``/`` read-only, a private
    ``/dev`` and ``/proc``, every namespace unshared, no capabilities, the seccomp filter) with
    a writable folder and a read-only one inside it: the canary must print a fresh nonce, be in
    its own PID and network namespaces, fail to write the read-only folder and write the nonce
    into the writable one — checked from outside. Anything else makes the sandbox unavailable
    (fail closed), naming the path and what the canary did.
    """
    path = find_bwrap(bwrap)
    if path is None:
        refused = _refused.get(bwrap)
        if refused is not None:
            return SandboxProbe(False, bwrap, None, None, f"bwrap {refused}", FIX_OUTSIDE)
        cause = (
            f"bwrap not found: {bwrap!r} is not an executable file"
            if "/" in bwrap
            else f"bwrap not found: {bwrap!r} is in none of {', '.join(SYSTEM_PROGRAM_DIRS)} "
            "(PATH is never searched; name it by absolute path)"
        )
        return SandboxProbe(False, bwrap, None, None, cause, FIX_INSTALL)
    root = program_inside(path, writable_roots)
    if root is not None:
        cause = (
            f"bwrap at {path} lies inside the writable root {root}, where a confined command "
            "could have put it or could replace it; it was not run"
        )
        return SandboxProbe(False, bwrap, path, None, cause, FIX_OUTSIDE)
    with _lock:
        cached = _cache.get(path)
        if cached is None:
            cached = _cache[path] = _probe(bwrap, path)
    if cached.bwrap != bwrap:
        return SandboxProbe(cached.available, bwrap, path, cached.version, cached.cause, cached.fix)
    return cached


def clear_probe_cache() -> None:
    """Forget every probe and where each ``bwrap`` was found (tests; the next use finds and
    runs it again)."""
    with _lock:
        _cache.clear()
        _found.clear()
        _refused.clear()


def _namespace(kind: str) -> str | None:
    try:
        return os.readlink(f"/proc/self/ns/{kind}")
    except OSError:
        return None


def _probe(bwrap: str, path: str) -> SandboxProbe:
    try:
        version_run = subprocess.run(
            [path, "--version"],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=_PROBE_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        with tempfile.TemporaryDirectory(prefix="dsh-sandbox-probe-") as scratch:
            writable = Path(os.path.realpath(scratch)) / "rw"
            (writable / "ro").mkdir(parents=True)
            nonce = secrets.token_hex(16)
            trial, seen = _canary(path, writable, nonce)
    except (OSError, subprocess.SubprocessError) as error:
        cause = f"bwrap at {path} cannot be executed: {error}"
        return SandboxProbe(False, bwrap, path, None, cause, FIX_INSTALL)
    printed = version_run.stdout.strip().splitlines()
    version = printed[0] if printed and version_run.returncode == 0 else None
    if trial.returncode != 0:
        lines = [line for line in trial.stderr.strip().splitlines() if line.strip()]
        detail = lines[-1] if lines else f"exit status {trial.returncode}"
        cause = f"bwrap at {path} cannot create the sandbox's namespaces: {detail}"
        return SandboxProbe(False, bwrap, path, version, cause, FIX_NAMESPACES)
    if seen:
        cause = f"bwrap at {path} does not confine: its canary {'; '.join(seen)}"
        return SandboxProbe(False, bwrap, path, version, cause, FIX_CONFINE)
    return SandboxProbe(True, bwrap, path, version, None, None)


def _canary(
    path: str, writable: Path, nonce: str
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run the canary under ``path``; return the run and what it did wrong (nothing: none)."""
    read_only = writable / "ro"
    argv = [path, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    argv += ["--bind", str(writable), str(writable), "--ro-bind", str(read_only), str(read_only)]
    argv += ISOLATION_FLAGS
    rules = seccomp_filter()
    with tempfile.TemporaryFile() as filter_file:
        fds: tuple[int, ...] = ()
        if rules is not None:
            filter_file.write(rules)
            filter_file.flush()
            filter_file.seek(0)
            fds = (filter_file.fileno(),)
            argv += ["--seccomp", str(filter_file.fileno())]
        trial = subprocess.run(
            [*argv, "--", "/bin/sh", "-c", _CANARY, "sh", nonce, str(writable)],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=_PROBE_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
            pass_fds=fds,
        )
    seen: list[str] = []
    lines = trial.stdout.splitlines()
    if not lines or lines[0] != nonce:
        shown = trial.stdout[:200] if trial.stdout else "nothing"
        seen.append(f"did not run (it should print a fresh nonce; printed {shown!r})")
    else:
        for index, kind in ((1, "pid"), (2, "net")):
            inside = lines[index] if len(lines) > index else None
            if inside is None or inside == _namespace(kind):
                seen.append(f"shared this process's {kind} namespace ({inside or 'unknown'})")
    if (read_only / "canary").exists():
        seen.append(f"wrote into the read-only folder {read_only}")
    try:
        written = (writable / "canary").read_text().strip()
    except OSError:
        written = None
    if not seen and written != nonce:
        seen.append(f"could not write its writable folder {writable}")
    return trial, seen
