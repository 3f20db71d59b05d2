"""SandboxExecutor over a fake inner executor: policy selection, re-targeting, temp dirs, denial."""

from __future__ import annotations

import asyncio
import gc
import stat
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from dsh_bash_sandbox import SandboxExecutor, looks_sandbox_denied, probe_sandbox
from dsh_shell import (
    CollectedOutput,
    SandboxMode,
    SandboxPolicy,
    ShellExecRequest,
    ShellExecSpec,
    ShellExecutor,
    ShellRunResult,
    ShellValueError,
)

if TYPE_CHECKING:
    from conftest import FakeInner  # the fixture's type (conftest is not importable)


def test_it_is_a_shell_executor(inner: FakeInner) -> None:
    assert isinstance(SandboxExecutor(inner), ShellExecutor)


def test_bad_arguments_are_refused_naming_them(inner: FakeInner) -> None:
    for kwargs, name in (
        ({"policy": "workspace-write"}, "policy"),
        ({"bwrap": ""}, "bwrap"),
        ({"shell": "bash"}, "shell"),
    ):
        with pytest.raises(ShellValueError) as caught:
            SandboxExecutor(inner, **kwargs)  # type: ignore[arg-type]
        assert caught.value.name == name


def test_resolve_defaults_to_workspace_write_on_the_real_workdir(
    inner: FakeInner, workspace: Path, tmp_path: Path
) -> None:
    link = tmp_path / "link"
    link.symlink_to(workspace)
    spec = SandboxExecutor(inner).resolve(ShellExecRequest("true", workdir=link))
    assert spec.sandbox == SandboxPolicy(workspace=workspace)
    assert spec.workdir == link  # the inner executor's resolve, untouched


def test_resolve_prefers_the_requests_policy_then_the_executors(
    inner: FakeInner, workspace: Path
) -> None:
    default = SandboxPolicy(mode="read-only", network=True)
    executor = SandboxExecutor(inner, policy=default)
    spec = executor.resolve(ShellExecRequest("true", workdir=workspace))
    assert spec.sandbox == SandboxPolicy(mode="read-only", network=True, workspace=workspace)
    own = SandboxPolicy(workspace=Path("/elsewhere"))
    spec = executor.resolve(ShellExecRequest("true", workdir=workspace, sandbox=own))
    assert spec.sandbox is own


async def test_full_access_goes_to_the_inner_executor_unchanged(
    inner: FakeInner, workspace: Path
) -> None:
    policy = SandboxPolicy(mode="danger-full-access")
    executor = SandboxExecutor(inner, policy=policy)
    spec = executor.resolve(ShellExecRequest("echo $0", workdir=workspace))
    result = await executor.run(spec)
    assert inner.specs[0].command == "echo $0"
    assert inner.specs[0].sandbox is None
    assert (result.stdout.text, result.sandbox_denied) == ("bash\n", None)
    process = executor.start(spec)
    assert await process.wait() == "completed"
    assert inner.specs[1].command == "echo $0"


async def test_a_confined_command_is_re_targeted_under_bwrap(
    inner: FakeInner, workspace: Path
) -> None:
    executor = SandboxExecutor(inner)
    spec = executor.resolve(ShellExecRequest("echo hi", workdir=workspace, dsh_env={"DSH_X": "1"}))
    result = await executor.run(spec)
    handed = inner.specs[0]
    assert handed.command.startswith(f"exec {probe_sandbox().path} --ro-bind / / ")
    assert handed.sandbox is None
    assert (handed.workdir, handed.dsh_env, handed.timeout) == (
        spec.workdir,
        spec.dsh_env,
        spec.timeout,
    )
    assert (result.exit_code, result.stdout.text) == (0, "hi\n")
    await executor.aclose()


async def test_a_spec_built_elsewhere_is_confined_by_the_default_policy(
    inner: FakeInner, workspace: Path
) -> None:
    executor = SandboxExecutor(inner)
    outside = workspace.parent / "outside"
    spec = inner.resolve(ShellExecRequest(f"touch {outside}", workdir=workspace))
    assert spec.sandbox is None
    result = await executor.run(spec)
    assert result.exit_code != 0
    assert not outside.exists()
    await executor.aclose()


async def test_the_environment_is_the_inner_executors_plus_tmpdir(
    inner: FakeInner, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DSH_STALE", "leak")
    monkeypatch.setenv("PLAIN_VALUE", "kept")
    executor = SandboxExecutor(inner)
    request = ShellExecRequest(
        'echo "$PLAIN_VALUE ${DSH_STALE-absent} $DSH_SESSION_ID $TERM"; echo "$TMPDIR"',
        workdir=workspace,
        dsh_env={"DSH_SESSION_ID": "s1"},
    )
    spec = executor.resolve(request)
    result = await executor.run(spec)
    first, tmpdir = result.stdout.text.splitlines()
    assert first == "kept absent s1 dumb"
    assert Path(tmpdir) == executor.temp_dir_for(spec)
    await executor.aclose()


async def test_each_session_gets_a_private_temp_dir_removed_by_aclose(
    inner: FakeInner, workspace: Path, tmp_path: Path
) -> None:
    executor = SandboxExecutor(inner, temp_root=tmp_path)

    def spec(session: str | None, mode: SandboxMode) -> ShellExecSpec:
        dsh_env = {"DSH_SESSION_ID": session} if session else None
        policy = SandboxPolicy(mode=mode)
        request = ShellExecRequest(
            'echo data > "$TMPDIR/f" && cat "$TMPDIR/f" && echo "$TMPDIR"',
            workdir=workspace,
            dsh_env=dsh_env,
            sandbox=policy,
        )
        return executor.resolve(request)

    seen: dict[str | None, set[str]] = {}
    modes: tuple[SandboxMode, ...] = ("workspace-write", "read-only")
    for session in ("s1", "s2", None):
        for mode in modes:
            result = await executor.run(spec(session, mode))
            out = result.stdout.text.splitlines()
            assert out[0] == "data", result  # writable in both confined modes
            seen.setdefault(session, set()).add(out[1])
    assert all(len(dirs) == 1 for dirs in seen.values())  # one per session, both modes
    dirs = [Path(next(iter(d))) for d in seen.values()]
    assert len(set(dirs)) == 3
    for path in dirs:
        assert path.parent == tmp_path
        assert stat.S_IMODE(path.stat().st_mode) == 0o700
    await executor.aclose()
    assert inner.closed
    assert not any(path.exists() for path in dirs)


async def test_a_refused_write_sets_sandbox_denied(inner: FakeInner, workspace: Path) -> None:
    executor = SandboxExecutor(inner)
    for mode, command in (
        ("workspace-write", "echo x > .git/config"),
        ("read-only", "echo x > new-file"),
    ):
        policy = SandboxPolicy(mode=mode)  # type: ignore[arg-type]
        request = ShellExecRequest(command, workdir=workspace, sandbox=policy)
        result = await executor.run(executor.resolve(request))
        assert result.sandbox_denied == mode
    assert (workspace / ".git" / "config").read_text() == "[core]\n"
    assert not (workspace / "new-file").exists()
    ok = await executor.run(executor.resolve(ShellExecRequest("echo x > f", workdir=workspace)))
    assert (ok.exit_code, ok.sandbox_denied) == (0, None)
    await executor.aclose()


async def test_network_is_off_unless_the_policy_allows_it(
    inner: FakeInner, workspace: Path
) -> None:
    executor = SandboxExecutor(inner)
    server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    command = f"echo > /dev/tcp/127.0.0.1/{port} && echo connected"
    try:
        off = await executor.run(executor.resolve(ShellExecRequest(command, workdir=workspace)))
        assert (off.stdout.text, off.sandbox_denied) == ("", "workspace-write")
        policy = SandboxPolicy(network=True)
        request = ShellExecRequest(command, workdir=workspace, sandbox=policy)
        on = await executor.run(executor.resolve(request))
        assert (on.stdout.text, on.sandbox_denied) == ("connected\n", None)
    finally:
        server.close()
        await server.wait_closed()
        await executor.aclose()


async def test_a_self_signal_is_reported_as_the_signal(inner: FakeInner, workspace: Path) -> None:
    executor = SandboxExecutor(inner)
    result = await executor.run(
        executor.resolve(ShellExecRequest("kill -TERM $$", workdir=workspace))
    )
    assert (result.exit_code, result.signal) == (None, "SIGTERM")
    await executor.aclose()


@pytest.mark.parametrize("name", [".git", ".dsh", ".claude", ".codex"])
async def test_a_protected_name_that_does_not_exist_yet_cannot_be_created(
    inner: FakeInner, tmp_path: Path, name: str
) -> None:
    """A missing protected name is held by an empty read-only placeholder while a command
    runs: neither ``mkdir`` nor a rename onto it works, the rest of the workspace is writable,
    and afterwards nothing is left (the placeholder is gone, nothing of the user's is lost)."""
    workspace = tmp_path / "fresh"
    workspace.mkdir()
    (workspace / "staged").mkdir()
    (workspace / "staged" / "x.sh").write_text("evil\n")
    executor = SandboxExecutor(inner)
    command = (
        f"mkdir -p {name}/hooks && echo x > {name}/hooks/x.sh; "
        f"mv staged {name}; ln -s staged {name}; rmdir {name}; echo done > ok"
    )
    result = await executor.run(executor.resolve(ShellExecRequest(command, workdir=workspace)))
    assert "Read-only file system" in result.stderr.text
    assert (workspace / "ok").read_text() == "done\n"  # it ran, and could write elsewhere
    assert sorted(p.name for p in workspace.iterdir()) == ["ok", "staged"]
    assert (workspace / "staged" / "x.sh").read_text() == "evil\n"
    spec = executor.resolve(ShellExecRequest("true", workdir=workspace))
    assert spec.sandbox is not None
    assert not spec.sandbox.check(workspace / name / "hooks" / "x.sh", "write").allowed
    await executor.aclose()


async def test_a_background_command_holds_the_placeholder_until_it_ends(
    inner: FakeInner, tmp_path: Path
) -> None:
    """While a background command runs, a foreground one that ends does not remove the
    placeholder the background one still has mounted (it is removed by the last user)."""
    workspace = tmp_path / "fresh"
    workspace.mkdir()
    executor = SandboxExecutor(inner)
    loop = (
        "until [ -e go ]; do sleep 0.02; done; "
        "mkdir .claude 2>/dev/null && echo created > .claude/x; echo tried > tried"
    )
    process = executor.start(executor.resolve(ShellExecRequest(loop, workdir=workspace)))
    await executor.run(executor.resolve(ShellExecRequest("true", workdir=workspace)))
    assert (workspace / ".claude").is_dir()  # still held by the background command
    (workspace / "go").write_text("")
    assert await process.wait() == "completed"
    assert (workspace / "tried").read_text() == "tried\n"
    assert not (workspace / ".claude").exists()
    await executor.aclose()


async def test_background_commands_are_confined_too(inner: FakeInner, workspace: Path) -> None:
    executor = SandboxExecutor(inner)
    command = "echo x > .git/config; echo done"
    process = executor.start(executor.resolve(ShellExecRequest(command, workdir=workspace)))
    assert await process.wait() == "completed"
    assert process.read_output().delta == "done\n"
    assert (workspace / ".git" / "config").read_text() == "[core]\n"
    assert inner.specs[0].command.startswith(f"exec {probe_sandbox().path} ")
    await executor.aclose()


def _result(code: int | None, stderr: str, *, timed_out: bool = False) -> ShellRunResult:
    return ShellRunResult(
        code, None, timed_out, False, 1.0, CollectedOutput(""), CollectedOutput(stderr), 0.1
    )


@pytest.mark.parametrize(
    ("code", "stderr", "network", "expected"),
    [
        (1, "x: Read-only file system", False, True),
        (1, "cp: Permission denied", False, True),
        (2, "Operation not permitted", True, True),
        (1, "curl: (6) Could not resolve host: example.org", False, True),
        (1, "curl: (6) Could not resolve host: example.org", True, False),
        (7, "connect: Network is unreachable", False, True),
        (1, "connect: Connection refused", False, True),
        (0, "x: Read-only file system", False, False),  # succeeded anyway
        (None, "Permission denied", False, False),  # killed by a signal
        (1, "no such file", False, False),
    ],
)
def test_looks_sandbox_denied(code: int | None, stderr: str, network: bool, expected: bool) -> None:
    assert looks_sandbox_denied(_result(code, stderr), SandboxPolicy(network=network)) is expected


def test_a_timed_out_result_is_not_a_denial() -> None:
    result = _result(1, "Permission denied", timed_out=True)
    assert not looks_sandbox_denied(result, SandboxPolicy())


async def test_an_executor_never_closed_still_removes_its_directories_when_collected(
    inner: FakeInner, workspace: Path, tmp_path: Path
) -> None:
    executor = SandboxExecutor(inner, temp_root=tmp_path / "root")
    (tmp_path / "root").mkdir()
    result = await executor.run(executor.resolve(ShellExecRequest("echo hi", workdir=workspace)))
    assert result.stdout.text == "hi\n"
    created = sorted((tmp_path / "root").iterdir())
    assert len(created) == 2  # the session's TMPDIR and the seccomp filter's directory
    del executor
    gc.collect()
    assert list((tmp_path / "root").iterdir()) == []


async def test_concurrent_commands_share_placeholders_and_leave_nothing(
    inner: FakeInner, tmp_path: Path
) -> None:
    """Sixteen commands at once in a workspace without protected names: each joins the
    placeholders the others made (one that ends never removes what another has mounted), every
    command runs, none creates a protected name, and nothing is left afterwards."""
    workspace = tmp_path / "fresh"
    workspace.mkdir()
    executor = SandboxExecutor(inner)
    command = "mkdir .claude 2>/dev/null || echo refused"

    async def one() -> str:
        request = ShellExecRequest(command, workdir=workspace)
        return (await executor.run(executor.resolve(request))).stdout.text

    outputs = await asyncio.gather(*(one() for _ in range(16)))
    assert outputs == ["refused\n"] * 16
    assert list(workspace.iterdir()) == []
    await executor.aclose()
