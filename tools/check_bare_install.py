"""Run inside an environment where dsh-agent-core was installed WITHOUT its extras.

``pip install dsh-agent-core`` carries only the local parts: PostgreSQL (``[postgres]``), the
MCP servers (``[mcp]``) and the editors' agent ``dsh acp`` (``[acp]``) are extras. This checks,
on the real install, that

1. neither extra's distributions nor what they pull are installed (psycopg, psycopg-pool, the
   MCP SDK and its server stack) and none of their modules can be imported;
2. ``dsh --help`` and the keyless ``dsh demo`` work;
3. a configuration asking for a PostgreSQL backend or an MCP server is refused with one line
   naming the extra (``dsh: error: ... needs dsh-agent-core[postgres]: pip install ...``) and a
   nonzero exit status, and so is ``dsh acp``.

Usage: ``python tools/check_bare_install.py`` (``nox -s bare`` builds the wheels and runs it in
a fresh environment). Exits 1 naming every check that failed.
"""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

ABSENT_DISTRIBUTIONS = (
    "dsh-persistence-postgres",
    "dsh-tool-mcp",
    "psycopg",
    "psycopg-binary",
    "psycopg-pool",
    "mcp",
    "dsh-acp",
    "agent-client-protocol",
    "starlette",
    "uvicorn",
    "cryptography",
)
"""What the extras bring, none of which a bare install may hold."""

ABSENT_MODULES = (
    "dsh_persistence_postgres",
    "dsh_tool_mcp",
    "dsh_acp",
    "psycopg",
    "psycopg_pool",
    "mcp",
    "acp",
)

REFUSALS = {
    "postgres": (
        '[persistence]\nbackend = "postgres"\n',
        'dsh: error: the config\'s persistence backend "postgres" needs '
        "dsh-agent-core[postgres]: pip install 'dsh-agent-core[postgres]'",
    ),
    "mcp": (
        '[mcp.servers.github]\ncommand = "github-mcp-server"\n',
        'dsh: error: the config\'s MCP server "github" needs dsh-agent-core[mcp]: '
        "pip install 'dsh-agent-core[mcp]'",
    ),
}
"""Per extra: a config asking for its part, and the one line ``dsh`` must answer with."""

ACP_REFUSAL = "dsh: error: dsh acp needs dsh-agent-core[acp]: pip install 'dsh-agent-core[acp]'"
"""The one line ``dsh acp`` answers with when the ``[acp]`` extra is not installed."""


def _installed(name: str) -> bool:
    try:
        md.distribution(name)
    except md.PackageNotFoundError:
        return False
    return True


def _dsh(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    dsh = shutil.which("dsh")
    if dsh is None:
        raise SystemExit("no dsh command on PATH: is dsh-agent-core installed here?")
    env = {**os.environ, "DSH_HOME": str(home), "DSH_POSTGRES_DSN": "postgresql://x@127.0.0.1/x"}
    for variable in ("DSH_CONFIG", "DSH_PROFILE", "DSH_MODEL"):
        env.pop(variable, None)
    return subprocess.run(
        [dsh, *args],
        env=env,
        cwd=home,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def check(scratch: Path) -> list[str]:
    """Every failed check, as one message each (empty: the bare install is as it should be)."""
    failures: list[str] = []
    failures += [f"installed: {d}" for d in ABSENT_DISTRIBUTIONS if _installed(d)]
    failures += [
        f"importable: {m}" for m in ABSENT_MODULES if importlib.util.find_spec(m) is not None
    ]
    for args in (["--help"], ["demo"]):
        home = scratch / "-".join(args).strip("-")
        home.mkdir()
        done = _dsh(home, *args)
        if done.returncode != 0:
            failures.append(f"dsh {' '.join(args)} exited {done.returncode}: {done.stderr}")
    for extra, (config, expected) in REFUSALS.items():
        home = scratch / f"asks-for-{extra}"
        home.mkdir()
        (home / "config.toml").write_text(config, encoding="utf-8")
        done = _dsh(home, "run", "hello")
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        if done.returncode == 0 or lines != [expected]:
            failures.append(
                f"a config asking for [{extra}]: exit {done.returncode}, stderr {lines!r}; "
                f"expected a nonzero exit and the one line {expected!r}"
            )
    home = scratch / "acp"
    home.mkdir()
    done = _dsh(home, "acp")
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    if done.returncode == 0 or lines != [ACP_REFUSAL]:
        failures.append(
            f"dsh acp: exit {done.returncode}, stderr {lines!r}; expected a nonzero exit and "
            f"the one line {ACP_REFUSAL!r}"
        )
    return failures


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="dsh-bare-") as scratch:
        failures = check(Path(scratch))
    for failure in failures:
        print(failure)
    if failures:
        print(f"bare dsh-agent-core: {len(failures)} check(s) failed")
        return 1
    print(
        "bare dsh-agent-core: no extra installed; dsh --help and dsh demo work; "
        "postgres and MCP configs, and dsh acp, are refused naming their extra"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
