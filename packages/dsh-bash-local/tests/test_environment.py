"""The scrubbed child environment, from a real parent whose environment holds hostile entries."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

_RUN_ENV = """
import asyncio, json, sys
from dsh_bash_local import LocalBashExecutor
from dsh_shell import ShellExecRequest

async def main():
    async with LocalBashExecutor() as executor:
        spec = executor.resolve(ShellExecRequest("echo builtin; env -0", workdir=sys.argv[1]))
        result = await executor.run(spec)
    print(json.dumps([result.stdout.text, result.stderr.text, result.exit_code]))

asyncio.run(main())
"""

HOSTILE = {
    "BASH_FUNC_echo%%": "() { printf hacked; }",
    "SHELLOPTS": "xtrace",
    "BASHOPTS": "extglob",
    "DB_PASSWD": "leak",
    "PGPASSWORD": "leak",
    "PGPASSFILE": "/leak/.pgpass",
    "MYSQL_PWD": "leak",
    "GITHUB_PAT": "leak",
    "REGISTRY_AUTH": "leak",
    "AWS_SHARED_CREDENTIALS_FILE": "/leak",
    "COOKIE": "leak",
    "DATABASE_URL": "postgres://u:p@db/x",
    "http_proxy": "http://user:password@proxy.invalid:3128",
    "HTTPS_PROXY": "user:password@proxy.invalid:3128",
    "ALL_PROXY": "socks5h://token@proxy.invalid:1080",
}
KEPT = {"no_proxy": "localhost,.invalid", "FTP_PROXY": "http://proxy.invalid:21", "PLAIN": "x"}


def test_a_hostile_parent_environment_does_not_reach_the_command(tmp_path: Path) -> None:
    # `env NAME=value ...` puts them in the real parent's environment, as a user's shell would.
    assignments = [f"{name}={value}" for name, value in {**HOSTILE, **KEPT}.items()]
    argv = ["env", *assignments, sys.executable, "-c", _RUN_ENV, str(tmp_path)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)
    stdout, stderr, exit_code = json.loads(done.stdout)
    assert (exit_code, stderr) == (0, "")
    head, _, env_text = stdout.partition("\n")
    assert head == "builtin"  # echo was not redefined by BASH_FUNC_echo%%
    child = dict(entry.partition("=")[::2] for entry in env_text.split("\0") if entry)
    assert sorted(set(HOSTILE) & set(child)) == []
    assert not [name for name in child if name.startswith("BASH_FUNC_")]
    assert {name: child.get(name) for name in KEPT} == KEPT
