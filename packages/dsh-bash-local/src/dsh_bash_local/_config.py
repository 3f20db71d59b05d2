"""`LocalBashConfig`: the executor's limits, validated once at construction."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from dsh_shell import ShellValueError, check_byte_count, check_timeout

_MAX_GRACE = (2**31 - 1) / 1000


@dataclass(frozen=True, slots=True)
class LocalBashConfig:
    """Limits and defaults of a `LocalBashExecutor` (seconds and bytes).

    - ``cwd``: default workdir (else the process's current directory at resolve time);
    - ``timeout``: default foreground timeout (120 s), ``max_timeout``: its cap (600 s);
      a larger request is clamped;
    - ``max_output_bytes``: in-memory budget per stream (the stdout default of a request,
      always the stderr and background budget); the tail is kept;
    - ``max_spill_bytes``: a stream larger than this is not kept on disk (0 disables spill);
    - ``grace``: seconds between SIGTERM and SIGKILL of a process group, and the bound on
      waiting for pipes after the shell exits;
    - ``spill_dir``: where the private (0700) spill directory is created (default: the
      system temp directory);
    - ``shell``: the program run as ``<shell> -c <command>`` (a path, used as given, or a
      name looked up once, when the executor is built, in `dsh_shell.SYSTEM_PROGRAM_DIRS`
      only: never on ``PATH``).

    Invalid values raise `ShellValueError` naming ``config.<field>``.
    """

    cwd: Path | None = None
    timeout: float = 120.0
    max_timeout: float = 600.0
    max_output_bytes: int = 64_000
    max_spill_bytes: int = 64 * 1024 * 1024
    grace: float = 3.0
    spill_dir: Path | None = None
    shell: str = "bash"

    def __post_init__(self) -> None:
        if self.cwd is not None:
            object.__setattr__(self, "cwd", Path(self.cwd).absolute())
        if self.spill_dir is not None:
            object.__setattr__(self, "spill_dir", Path(self.spill_dir).absolute())
        check_timeout("config.timeout", self.timeout)
        check_timeout("config.max_timeout", self.max_timeout)
        if self.timeout > self.max_timeout:
            raise ShellValueError(
                "config.timeout", self.timeout, f"above config.max_timeout={self.max_timeout}"
            )
        check_byte_count("config.max_output_bytes", self.max_output_bytes)
        spill = self.max_spill_bytes
        if isinstance(spill, bool) or not isinstance(spill, int) or spill < 0:
            raise ShellValueError("config.max_spill_bytes", spill, "a whole number of bytes >= 0")
        grace = self.grace
        if isinstance(grace, bool) or not isinstance(grace, int | float):
            raise ShellValueError("config.grace", grace, "a number of seconds")
        if not math.isfinite(grace) or grace <= 0 or grace > _MAX_GRACE:
            raise ShellValueError("config.grace", grace, f"seconds in (0, {_MAX_GRACE}]")
        if not isinstance(self.shell, str) or not self.shell or "\0" in self.shell:
            raise ShellValueError("config.shell", self.shell, "a program name or path")
