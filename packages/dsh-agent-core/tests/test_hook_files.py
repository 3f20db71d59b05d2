"""What hooks run stays out of the model's reach, and the sandbox's own programs are real
(issue 32, 1.3-1.5): through the composed harness, with real bwrap and real hooks."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from dsh_agent_core import Config, DshError, compose, load_config
from dsh_agent_core._hook_files import hook_files
from dsh_agent_core.cli import cli
from dsh_bash_sandbox import FIX_CONFINE, FIX_OUTSIDE, clear_probe_cache
from dsh_hooks import HooksConfig
from dsh_llm.testing import ScriptedModel, text_response, tool_call_response
from dsh_shell import SYSTEM_PROGRAM_DIRS
from shapes import flat

GUARD = "#!/bin/bash\ncat > /dev/null\nexit 0\n"


def configured(home: Path, text: str) -> Config:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)
    return load_config(env={"DSH_HOME": str(home)})


@pytest.fixture(autouse=True)
def _fresh_probes() -> Iterator[None]:
    clear_probe_cache()
    yield
    clear_probe_cache()


async def test_the_model_can_neither_rewrite_nor_plant_what_a_hook_runs(tmp_path: Path) -> None:
    """The hooks guide's layout: scripts under .claude/hooks, run unconfined. A confined command
    that appends to one, plants a script a hook names, or creates .codex gets nowhere (the hook
    runs the user's script after the call, not the model's); the file tools are refused too."""
    work = tmp_path / "work"
    (work / ".claude" / "hooks").mkdir(parents=True)
    guard = work / ".claude" / "hooks" / "guard.sh"
    guard.write_text(GUARD)
    guard.chmod(0o755)
    text = (
        '[hooks]\ndialect = "claude-code"\n\n[[hooks.PostToolUse]]\n'
        "hooks = [\n"
        "  { command = '\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh' },\n"
        "  { command = 'bash scripts/check.sh' },\n"
        "]\n"
    )
    attack = (
        "echo 'touch PWNED' >> .claude/hooks/guard.sh; "
        "mkdir -p scripts && echo 'touch PWNED' > scripts/check.sh; "
        "mkdir -p .codex && echo '{}' > .codex/hooks.json; echo done > ok"
    )
    calls = [
        tool_call_response(("c1", "bash", {"command": attack, "description": "Try"})),
        tool_call_response(("c2", "write", {"file_path": str(guard), "content": "touch PWNED"})),
        text_response("ok"),
    ]
    model = ScriptedModel(calls)
    async with compose(configured(tmp_path / "home", text), models={"scripted": model}) as h:
        assert "scripts/check.sh" in h.policy.protected_paths
        agent = await h.create("try", model="scripted:m", cwd=work)
        await agent.wait_idle()
        results = [
            flat("tool/result", e.to_wire()["data"])
            for e in agent.session.events
            if e.type == "tool/result"
        ]
    assert (work / "ok").read_text() == "done\n"  # the command ran, confined
    assert guard.read_text() == GUARD
    assert sorted(p.name for p in work.iterdir()) == [".claude", "ok"]  # no scripts/, no .codex
    assert not (work / "PWNED").exists()  # the hooks ran the user's files only
    assert results[1]["isError"]
    assert "FS_SANDBOX_DENIED" in json.dumps(results[1])


def test_hook_files_names_programs_and_scripts_as_the_hook_shell_finds_them() -> None:
    hooks = HooksConfig.model_validate(
        {
            "dialect": "claude-code",
            "hooks": {
                "PreToolUse": [
                    {
                        "hooks": [
                            {"command": '"$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh'},
                            {"command": "FOO=1 python3 -u tools/x.py --flag && $HOME/bin/h | jq ."},
                            {"command": "bash -c 'echo inline'; exec ./run.sh ../up.sh"},
                        ]
                    }
                ]
            },
        }
    )
    found = hook_files(hooks, {"PATH": "/usr/bin:/w/.venv/bin", "HOME": "/home/u"}, "/nowhere")
    assert found == (
        ".claude/hooks/guard.sh",
        "/usr/bin/python3",
        "/w/.venv/bin/python3",
        "tools/x.py",
        "/home/u/bin/h",
        "/usr/bin/jq",
        "/w/.venv/bin/jq",
        "/usr/bin/bash",
        "/w/.venv/bin/bash",
        "/usr/bin/echo",
        "run.sh",
    )


async def test_dsh_env_never_reports_a_bwrap_planted_in_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An activated .venv/bin in the workspace holds a fake bwrap (a confined command put it
    there): on PATH it is never looked at (bwrap comes from the system program folders); named
    by path in the config, the harness refuses it, unrun, naming it — and no session starts
    confined by it."""
    work = tmp_path / "work"
    marker = tmp_path / "fake-ran"
    fake = work / ".venv" / "bin" / "bwrap"
    fake.parent.mkdir(parents=True)
    fake.write_text(f"#!/bin/sh\ntouch {marker}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    monkeypatch.chdir(work)
    async with compose(configured(tmp_path / "home", "")) as h:
        probe = h.sandbox_probe()
        assert probe.path is not None
        assert os.path.dirname(probe.path) in SYSTEM_PROGRAM_DIRS
    async with compose(configured(tmp_path / "home", f'[sandbox]\nbwrap = "{fake}"\n')) as h:
        probe = h.sandbox_probe()
        assert not probe.available
        assert probe.path == str(fake)
        assert probe.cause is not None
        assert probe.cause.startswith(f"bwrap at {fake} lies inside the writable root {work}")
        assert probe.fix == FIX_OUTSIDE
        with pytest.raises(DshError, match="lies inside the writable root"):
            h.check_sandbox()
    assert not marker.exists()


async def test_a_bwrap_that_runs_nothing_is_unavailable_not_a_silent_success(
    tmp_path: Path,
) -> None:
    """bwrap = "/bin/true": the model is never told "(no output)" for a command that did not
    run; the harness refuses to start confined sessions, naming the path and the canary."""
    config = configured(tmp_path / "home", '[sandbox]\nbwrap = "/bin/true"\n')
    async with compose(config) as h:
        probe = h.sandbox_probe(cwd=tmp_path)
        assert not probe.available
        assert probe.fix == FIX_CONFINE
        assert probe.cause is not None
        assert probe.cause.startswith("bwrap at /bin/true does not confine: its canary did not run")
        with pytest.raises(DshError, match="/bin/true does not confine"):
            h.check_sandbox()


@pytest.mark.parametrize("command", [["env"], ["demo"]])
def test_dsh_env_and_demo_never_run_a_bwrap_planted_where_they_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    """A bwrap planted on PATH is never looked at (bwrap comes from the system program
    folders); named by path in the config, `dsh env` reports it as refused, naming it, and
    `dsh demo` falls back to no sandbox and says why — neither runs it."""
    work = tmp_path / "work"
    marker = tmp_path / "fake-ran"
    fake = work / "node_modules" / ".bin" / "bwrap"
    fake.parent.mkdir(parents=True)
    fake.write_text(f"#!/bin/sh\ntouch {marker}\necho 'bubblewrap 9.9'\n")
    fake.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    monkeypatch.chdir(work)
    for name in ("DSH_CONFIG", "DSH_PROFILE", "DSH_PERMISSION_MODE"):
        monkeypatch.delenv(name, raising=False)
    done = CliRunner().invoke(cli, ["--home", str(home), *command])
    assert done.exit_code == 0, done.output
    assert "9.9" not in done.output
    assert str(fake) not in done.output
    if command == ["env"]:
        assert "available (/usr/bin/bwrap" in done.output
    (home / "config.toml").write_text(f'[sandbox]\nbwrap = "{fake}"\n')
    done = CliRunner().invoke(cli, ["--home", str(home), *command])
    assert done.exit_code == 0, done.output
    assert f"bwrap at {fake} lies inside the writable root {work}" in done.output
    assert not marker.exists()
