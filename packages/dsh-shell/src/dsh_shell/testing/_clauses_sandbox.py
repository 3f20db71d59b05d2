"""Clauses: the programs an executor starts, and what a confined command may never write.

Every executor is held to them. One that does not confine refuses a command that carries a
confining `SandboxPolicy` (`SandboxUnavailableError`) and runs nothing, which these clauses
accept; one that confines must run it and keep the protected paths as they were.
"""

from __future__ import annotations

import os
from pathlib import Path

from dsh_shell._errors import SandboxUnavailableError
from dsh_shell._results import ShellRunResult
from dsh_shell._sandbox import SandboxPolicy
from dsh_shell.testing._clauses_child import run_in_child
from dsh_shell.testing._context import ClauseContext, ambient_environment, expect
from dsh_shell.testing._fixture import CHILD_PROCESS, LOCAL_PROCESSES
from dsh_shell.testing._registry import ClauseGroup

group = ClauseGroup()
clause = group.clause

_PLANTED = ("bash", "sh", "bwrap")
"""The programs an executor might start by name: its shell and a sandbox."""


def _plant(folder: Path, marker: Path) -> None:
    """Fake ``bash``, ``sh`` and ``bwrap`` in ``folder``, each leaving ``marker`` if run."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in _PLANTED:
        fake = folder / name
        fake.write_text(f"#!/bin/sh\necho {name} >> '{marker}'\necho planted\n")
        fake.chmod(0o755)


def _ran(marker: Path) -> str:
    return marker.read_text().strip().replace("\n", ", ") if marker.exists() else ""


def _workspace(ctx: ClauseContext) -> Path:
    path = Path(os.path.realpath(ctx.scratch)) / "workspace"
    path.mkdir()
    return path


async def _confined(
    ctx: ClauseContext, command: str, workspace: Path, **policy: object
) -> ShellRunResult | None:
    """Run ``command`` in ``workspace`` under a workspace-write policy; ``None`` when the
    executor refused it as unconfinable (then it must have run nothing)."""
    sandbox = SandboxPolicy(workspace=workspace, **policy)  # type: ignore[arg-type]
    try:
        return await ctx.run(command, workdir=workspace, sandbox=sandbox)
    except SandboxUnavailableError:
        return None


@clause(LOCAL_PROCESSES)
async def programs_are_not_looked_up_on_path_at_each_command(ctx: ClauseContext) -> None:
    """The executor's own programs (its shell, a sandbox) are not looked up on PATH for each
    command: a fake `bash`, `sh` or `bwrap` put in a folder at the head of PATH after the
    executor ran its first command never runs."""
    first = await ctx.run("echo first")
    expect(first.stdout.text == "first\n", f"`echo first` gave {first}")
    marker = ctx.scratch / "planted-ran"
    _plant(ctx.scratch / "planted-bin", marker)
    with ambient_environment({"PATH": f"{ctx.scratch / 'planted-bin'}:{os.environ['PATH']}"}):
        result = await ctx.run("echo ok")
    expect(not _ran(marker), f"a program planted on PATH ran instead: {_ran(marker)}")
    expect(result.stdout.text == "ok\n", f"`echo ok` gave {result}")


@clause(LOCAL_PROCESSES, CHILD_PROCESS)
async def programs_in_relative_path_entries_are_never_run(ctx: ClauseContext) -> None:
    """An executor built where PATH has an empty entry, `.` and a relative folder (each names
    whatever the current directory holds) never runs a fake `bash`, `sh` or `bwrap` found
    through them."""
    marker = ctx.scratch / "planted-ran"
    _plant(ctx.scratch, marker)
    _plant(ctx.scratch / "planted-rel", marker)
    search = f"::.:planted-rel:{os.environ['PATH']}"
    with ambient_environment({"PATH": search}):
        report = await run_in_child(ctx, "echo ok", ctx.safety_net / 2, cwd=str(ctx.scratch))
    expect(not _ran(marker), f"a program in a relative PATH entry ran: {_ran(marker)}")
    got = (report.get("error"), report.get("exit_code"), report.get("stdout"))
    expect(got == (None, 0, "ok\n"), f"`echo ok` gave {report}")


@clause(LOCAL_PROCESSES, CHILD_PROCESS)
async def programs_on_a_user_path_entry_are_never_run(ctx: ClauseContext) -> None:
    """An executor built while PATH starts with an absolute folder outside every writable root
    of the command (a ``~/bin`` an earlier run in the home directory could have filled) that
    holds a fake `bash`, `sh` and `bwrap` never runs them, confined or not: its own programs
    come from the system program folders (`dsh_shell.SYSTEM_PROGRAM_DIRS`), never from PATH;
    a confined command runs, or is refused (SandboxUnavailableError) having run nothing."""
    marker = ctx.scratch / "planted-ran"
    user_bin = ctx.scratch / "home" / "bin"
    _plant(user_bin, marker)
    workspace = _workspace(ctx)
    with ambient_environment({"PATH": f"{user_bin}:{os.environ['PATH']}"}):
        plain = await run_in_child(ctx, "echo ok", ctx.safety_net / 2, workdir=workspace)
        confined = await run_in_child(
            ctx, "echo ok", ctx.safety_net / 2, workdir=workspace, confine=True
        )
    expect(not _ran(marker), f"a program on a user PATH entry ran: {_ran(marker)}")
    got = (plain.get("error"), plain.get("exit_code"), plain.get("stdout"))
    expect(got == (None, 0, "ok\n"), f"`echo ok` gave {plain}")
    if confined.get("error") is not None:
        expect(
            confined["error"] == "SandboxUnavailableError",
            f"the confined command was refused with {confined['error']}: {confined.get('message')}",
        )
    else:
        ran = (confined.get("exit_code"), confined.get("stdout"))
        expect(ran == (0, "ok\n"), f"the confined `echo ok` gave {confined}")


@clause(LOCAL_PROCESSES, CHILD_PROCESS)
async def confined_commands_never_start_programs_from_a_writable_root(
    ctx: ClauseContext,
) -> None:
    """An executor built while PATH starts with a folder inside the workspace (an activated
    `.venv/bin`) that holds a fake `bash`, `sh` and `bwrap` never runs them for a confined
    command: it runs the command with programs from elsewhere, or refuses it
    (SandboxUnavailableError, naming why) having run nothing."""
    marker = ctx.scratch / "planted-ran"
    planted = ctx.scratch / ".venv" / "bin"
    _plant(planted, marker)
    with ambient_environment({"PATH": f"{planted}:{os.environ['PATH']}"}):
        report = await run_in_child(ctx, "echo ok", ctx.safety_net / 2, confine=True)
    expect(not _ran(marker), f"a program planted in the workspace ran: {_ran(marker)}")
    if report.get("error") is not None:
        expect(
            report["error"] == "SandboxUnavailableError",
            f"the confined command was refused with {report['error']}: {report.get('message')}",
        )
    else:
        got = (report.get("exit_code"), report.get("stdout"))
        expect(got == (0, "ok\n"), f"the confined `echo ok` gave {report}")


_EXISTING = {
    ".git/config": "[core]\n",
    ".git/hooks/pre-commit": "#!/bin/sh\n",
    ".dsh/config.toml": "model = 'x'\n",
    ".claude/settings.json": "{}\n",
    ".claude/hooks/guard.sh": "#!/bin/sh\nexit 0\n",
    ".codex/hooks.json": "{}\n",
    "scripts/hook.sh": "#!/bin/sh\nexit 0\n",
}


@clause(LOCAL_PROCESSES)
async def confined_commands_cannot_change_protected_paths(ctx: ClauseContext) -> None:
    """Under a workspace-write policy, `.git`, `.dsh`, `.claude`, `.codex` and the policy's
    protected paths (a hook's script) stay as they were: overwrite, append, delete, chmod,
    create beside, rename the folder away and a symlink swap all fail, while the rest of the
    workspace is writable (or the executor refused the command and ran nothing)."""
    workspace = _workspace(ctx)
    for relative, text in _EXISTING.items():
        (workspace / relative).parent.mkdir(parents=True, exist_ok=True)
        (workspace / relative).write_text(text)
    attempts = []
    for relative in _EXISTING:
        top = relative.split("/")[0]
        attempts += [
            f"echo evil > {relative}",
            f"echo evil >> {relative}",
            f"chmod 777 {relative}",
            f"rm -f {relative}",
            f"touch {Path(relative).parent}/planted",
            f"mv {top} {top}.moved",
            f"rm -rf {top}",
            f"ln -sfn /tmp {top}",
        ]
    command = "; ".join(f"{a} 2>/dev/null" for a in attempts) + "; echo done > ok"
    result = await _confined(ctx, command, workspace, protected_paths=("scripts/hook.sh",))
    changed = [r for r, text in _EXISTING.items() if _text(workspace / r) != text]
    expect(not changed, f"a confined command changed protected paths: {changed}")
    leftovers = sorted(p.name for p in workspace.iterdir() if p.name.endswith(".moved"))
    leftovers += [r for r in _EXISTING if (workspace / r).parent.joinpath("planted").exists()]
    expect(not leftovers, f"a confined command created beside protected paths: {leftovers}")
    _expect_ran_or_refused(result, workspace)


@clause(LOCAL_PROCESSES)
async def confined_commands_cannot_create_missing_protected_paths(ctx: ClauseContext) -> None:
    """Under a workspace-write policy in a workspace without `.git`, `.dsh`, `.claude` or
    `.codex`, a confined command cannot create them (`mkdir .claude && echo x >
    .claude/hooks/x.sh`), nor a protected path that does not exist yet; afterwards the
    workspace holds only what it may write — nothing of the sandbox is left behind."""
    workspace = _workspace(ctx)
    (workspace / "scripts").mkdir()
    names = (".git", ".dsh", ".claude", ".codex")
    attempts = [f"mkdir -p {n}/hooks && echo x > {n}/hooks/x.sh" for n in names]
    attempts += [f"echo x > {n}" for n in names]
    attempts += ["echo x > scripts/hook.sh", "mkdir -p tools/hooks && echo x > tools/hooks/h"]
    command = "; ".join(f"{a} 2>/dev/null" for a in attempts) + "; echo done > ok"
    result = await _confined(
        ctx, command, workspace, protected_paths=("scripts/hook.sh", "tools/hooks/h")
    )
    present = sorted(str(p.relative_to(workspace)) for p in workspace.rglob("*") if p.name != "ok")
    expect(present == ["scripts"], f"a confined command created protected paths: {present}")
    _expect_ran_or_refused(result, workspace)


def _text(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _expect_ran_or_refused(result: ShellRunResult | None, workspace: Path) -> None:
    if result is None:
        expect(not (workspace / "ok").exists(), "the command was refused, yet it ran")
        return
    expect(
        _text(workspace / "ok") == "done\n",
        f"the confined command did not run to its end or could not write the workspace: {result}",
    )
