"""`probe_sandbox`: can this host run ``bwrap`` with the isolation flags? Asked once per binary."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from typing import Final

from dsh_bash_sandbox._seccomp import seccomp_filter
from dsh_shell import SandboxUnavailableError

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

_PROBE_TIMEOUT = 30.0


@dataclass(frozen=True, slots=True)
class SandboxProbe:
    """Whether confined commands can run here, and if not, why and what to do.

    ``bwrap`` is the executable as asked, ``path`` where it was found (``None`` when it was
    not), ``version`` what ``bwrap --version`` printed. ``cause`` and ``fix`` are ``None``
    exactly when ``available``.
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


_cache: dict[tuple[str, str | None], SandboxProbe] = {}
_lock = threading.Lock()


def probe_sandbox(bwrap: str = "bwrap") -> SandboxProbe:
    """Run a tiny real ``bwrap`` with the isolation flags once per executable (then cached).

    ``bwrap`` is a program name looked up on ``PATH`` or a path. The probe mounts ``/``
    read-only, a ``/dev`` and a ``/proc``, unshares every namespace, drops every capability and
    loads the seccomp filter (`seccomp_filter`) and runs ``/bin/sh -c :``; any failure makes
    the sandbox unavailable (fail closed).
    """
    path = shutil.which(bwrap)
    key = (bwrap, path)
    with _lock:
        cached = _cache.get(key)
        if cached is None:
            cached = _cache[key] = _probe(bwrap, path)
    return cached


def clear_probe_cache() -> None:
    """Forget every probe (the next `probe_sandbox` of each executable runs ``bwrap`` again)."""
    with _lock:
        _cache.clear()


def _probe(bwrap: str, path: str | None) -> SandboxProbe:
    if path is None:
        cause = f"bwrap not found: {bwrap!r} is not an executable on PATH"
        return SandboxProbe(False, bwrap, None, None, cause, FIX_INSTALL)
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
        argv = [path, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
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
                [*argv, "--", "/bin/sh", "-c", ":"],
                capture_output=True,
                text=True,
                errors="replace",
                timeout=_PROBE_TIMEOUT,
                check=False,
                stdin=subprocess.DEVNULL,
                pass_fds=fds,
            )
    except (OSError, subprocess.SubprocessError) as error:
        cause = f"bwrap at {path} cannot be executed: {error}"
        return SandboxProbe(False, bwrap, path, None, cause, FIX_INSTALL)
    version = (version_run.stdout.strip() or None) if version_run.returncode == 0 else None
    if trial.returncode != 0:
        lines = [line for line in trial.stderr.strip().splitlines() if line.strip()]
        detail = lines[-1] if lines else f"exit status {trial.returncode}"
        cause = f"bwrap at {path} cannot create the sandbox's namespaces: {detail}"
        return SandboxProbe(False, bwrap, path, version, cause, FIX_NAMESPACES)
    return SandboxProbe(True, bwrap, path, version, None, None)
