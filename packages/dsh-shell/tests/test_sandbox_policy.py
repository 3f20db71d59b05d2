"""SandboxPolicy: the pure path check, the widening ladder, validation, and the seam fields."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh_shell import (
    DEFAULT_DENIED_READ,
    DEFAULT_PROTECTED_NAMES,
    SANDBOX_MODES,
    CollectedOutput,
    SandboxAccess,
    SandboxMode,
    SandboxPolicy,
    SandboxUnavailableError,
    ShellError,
    ShellExecRequest,
    ShellExecSpec,
    ShellRunResult,
    ShellValueError,
    default_denied_paths,
    resolve_request,
    sandbox_denied_marker,
    sandbox_mode_from_log,
    sandbox_widens,
)


def _policy(mode: SandboxMode) -> SandboxPolicy:
    return SandboxPolicy(
        mode=mode,
        workspace=Path("/w"),
        writable_roots=(Path("/extra"),),
        temp_dir=Path("/tmp/dsh-session"),
        read_only_paths=(Path("/w/home-dsh"),),
        denied_paths=(Path("/root/.ssh"), Path("/w/secret.txt")),
    )


# (mode, path, access, allowed, reason)
_CASES: list[tuple[SandboxMode, str, SandboxAccess, bool, str]] = [
    # workspace-write: writes under the writable roots only
    ("workspace-write", "/w/src/a.py", "write", True, "write under the writable root /w: "),
    ("workspace-write", "/w", "write", True, "write under the writable root /w: "),
    ("workspace-write", "/extra/b", "write", True, "write under the writable root /extra: "),
    ("workspace-write", "/tmp/dsh-session/x", "write", True, "writable root /tmp/dsh-session: "),
    ("workspace-write", "/etc/x", "write", False, "write outside the writable roots: /etc/x"),
    ("workspace-write", "/wx/a", "write", False, "write outside the writable roots: /wx/a"),
    ("workspace-write", "/tmp/other", "write", False, "write outside the writable roots: "),
    # `..` is resolved lexically before any rule
    ("workspace-write", "/w/../etc/x", "write", False, "write outside the writable roots: /etc/x"),
    ("workspace-write", "/etc/../w/./a", "write", True, "write under the writable root /w: /w/a"),
    ("workspace-write", "/w/.git/../a", "write", True, "write under the writable root /w: /w/a"),
    # protected names, at any depth inside a writable root
    ("workspace-write", "/w/.git/config", "write", False, "protected name .git: /w/.git/config"),
    ("workspace-write", "/w/.git", "write", False, "protected name .git: /w/.git"),
    ("workspace-write", "/w/sub/.git/HEAD", "write", False, "protected name .git: "),
    ("workspace-write", "/w/.dsh/state", "write", False, "protected name .dsh: /w/.dsh/state"),
    ("workspace-write", "/extra/.git/x", "write", False, "protected name .git: /extra/.git/x"),
    ("workspace-write", "/w/.gitignore", "write", True, "write under the writable root /w: "),
    ("workspace-write", "/w/.git/config", "read", True, "read allowed: /w/.git/config"),
    # read-only paths inside the workspace
    ("workspace-write", "/w/home-dsh/s.jsonl", "write", False, "read-only path /w/home-dsh: "),
    ("workspace-write", "/w/home-dsh", "write", False, "read-only path /w/home-dsh: /w/home-dsh"),
    ("workspace-write", "/w/home-dsh/s.jsonl", "read", True, "read allowed: "),
    ("workspace-write", "/w/home-dshx", "write", True, "write under the writable root /w: "),
    # denied paths refuse read and write
    (
        "workspace-write",
        "/root/.ssh/id_rsa",
        "read",
        False,
        "denied path /root/.ssh: /root/.ssh/id",
    ),
    ("workspace-write", "/root/.ssh", "write", False, "denied path /root/.ssh: /root/.ssh"),
    ("workspace-write", "/w/secret.txt", "write", False, "denied path /w/secret.txt: "),
    ("workspace-write", "/w/secret.txt", "read", False, "denied path /w/secret.txt: "),
    ("workspace-write", "/root/.sshx", "read", True, "read allowed: /root/.sshx"),
    ("workspace-write", "/etc/passwd", "read", True, "read allowed: /etc/passwd"),
    # read-only: reads as above, writes only to the private temp dir
    ("read-only", "/w/src/a.py", "write", False, "read-only mode: /w/src/a.py"),
    ("read-only", "/extra/b", "write", False, "read-only mode: /extra/b"),
    ("read-only", "/etc/x", "write", False, "read-only mode: /etc/x"),
    ("read-only", "/tmp/dsh-session/x", "write", True, "writable root /tmp/dsh-session: "),
    ("read-only", "/w/src/a.py", "read", True, "read allowed: /w/src/a.py"),
    ("read-only", "/root/.ssh/id_rsa", "read", False, "denied path /root/.ssh: "),
    ("read-only", "/w/home-dsh/s.jsonl", "write", False, "read-only path /w/home-dsh: "),
    # danger-full-access: everything
    ("danger-full-access", "/etc/x", "write", True, "danger-full-access mode: /etc/x"),
    ("danger-full-access", "/w/.git/config", "write", True, "danger-full-access mode: "),
    ("danger-full-access", "/root/.ssh/id_rsa", "read", True, "danger-full-access mode: "),
    ("danger-full-access", "/w/home-dsh/s", "write", True, "danger-full-access mode: "),
]


@pytest.mark.parametrize(("mode", "path", "access", "allowed", "reason"), _CASES)
def test_check(
    mode: SandboxMode, path: str, access: SandboxAccess, allowed: bool, reason: str
) -> None:
    decision = _policy(mode).check(path, access)
    assert decision.allowed is allowed, decision.reason
    assert reason in decision.reason


def test_check_accepts_a_path_object_and_normalizes_it() -> None:
    decision = _policy("workspace-write").check(Path("/w/a/../../etc/x"), "write")
    assert decision.reason == "write outside the writable roots: /etc/x"


def test_check_refuses_a_relative_path_naming_it() -> None:
    with pytest.raises(ShellValueError) as caught:
        _policy("workspace-write").check("w/a", "write")
    assert caught.value.name == "path"


def test_check_refuses_an_unknown_access() -> None:
    with pytest.raises(ShellValueError) as caught:
        _policy("workspace-write").check("/w/a", "execute")  # type: ignore[arg-type]
    assert caught.value.name == "access"


def test_a_policy_without_workspace_writes_only_under_its_other_roots() -> None:
    policy = SandboxPolicy(writable_roots=(Path("/r"),))
    assert policy.check("/r/a", "write").allowed
    assert not policy.check("/w/a", "write").allowed
    assert SandboxPolicy().writable_paths == ()
    assert not SandboxPolicy().check("/any", "write").allowed
    assert not SandboxPolicy(mode="read-only").check("/tmp/x", "write").allowed


def test_the_defaults_are_workspace_write_without_network_protecting_git_dsh_and_hooks() -> None:
    policy = SandboxPolicy()
    assert (policy.mode, policy.network, policy.protected_names) == (
        "workspace-write",
        False,
        (".git", ".dsh", ".claude", ".codex"),
    )
    assert DEFAULT_PROTECTED_NAMES == (".git", ".dsh", ".claude", ".codex")
    assert policy.denied_paths == ()


def test_custom_protected_names_replace_the_defaults() -> None:
    policy = SandboxPolicy(workspace=Path("/w"), protected_names=(".hg",))
    assert not policy.check("/w/.hg/x", "write").allowed
    assert policy.check("/w/.git/x", "write").allowed


def test_writable_paths_lists_workspace_temp_dir_then_the_extra_roots() -> None:
    assert _policy("workspace-write").writable_paths == (
        Path("/w"),
        Path("/tmp/dsh-session"),
        Path("/extra"),
    )


def test_paths_are_normalized_lexically_at_construction() -> None:
    policy = SandboxPolicy(
        workspace=Path("/w/./a/.."),
        writable_roots=("/r//x/",),  # type: ignore[arg-type]
        denied_paths=(Path("/h/../root/.ssh"),),
    )
    assert policy.workspace == Path("/w")
    assert policy.writable_roots == (Path("/r/x"),)
    assert policy.denied_paths == (Path("/root/.ssh"),)


@pytest.mark.parametrize(
    ("field", "value", "name"),
    [
        ("mode", "full", "mode"),
        ("mode", None, "mode"),
        ("workspace", Path("rel"), "workspace"),
        ("temp_dir", "tmp", "temp_dir"),
        ("writable_roots", (Path("/ok"), Path("rel")), "writable_roots[1]"),
        ("writable_roots", "/a", "writable_roots"),
        ("read_only_paths", (Path("x"),), "read_only_paths[0]"),
        ("denied_paths", (Path("~/.ssh"),), "denied_paths[0]"),
        ("protected_names", ".git", "protected_names"),
        ("protected_names", ("a/b",), "protected_names[0]"),
        ("protected_names", ("",), "protected_names[0]"),
        ("protected_names", ("..",), "protected_names[0]"),
        ("network", "yes", "network"),
    ],
)
def test_construction_refuses_a_bad_field_naming_it(field: str, value: object, name: str) -> None:
    with pytest.raises(ShellValueError) as caught:
        SandboxPolicy(**{field: value})  # type: ignore[arg-type]
    assert caught.value.name == name


def test_the_modes_run_from_narrow_to_wide() -> None:
    assert SANDBOX_MODES == ("read-only", "workspace-write", "danger-full-access")


@pytest.mark.parametrize("current", SANDBOX_MODES)
@pytest.mark.parametrize("requested", SANDBOX_MODES)
def test_the_ladder_only_widens(current: SandboxMode, requested: SandboxMode) -> None:
    expected = SANDBOX_MODES.index(requested) > SANDBOX_MODES.index(current)
    assert sandbox_widens(current, requested) is expected
    policy = _policy(current)
    if expected:
        wider = policy.widened(requested)
        assert wider.mode == requested
        assert wider.writable_paths == policy.writable_paths
        assert policy.mode == current  # a copy
    else:
        with pytest.raises(ShellValueError) as caught:
            policy.widened(requested)
        assert caught.value.name == "mode"


def test_sandbox_widens_refuses_an_unknown_mode() -> None:
    with pytest.raises(ShellValueError) as caught:
        sandbox_widens("read-only", "root")  # type: ignore[arg-type]
    assert caught.value.name == "requested"


@pytest.mark.parametrize("mode", SANDBOX_MODES)
def test_the_denied_marker_names_the_mode(mode: SandboxMode) -> None:
    assert sandbox_denied_marker(mode) == f"[sandbox: file access denied under {mode} mode]"


def test_default_denied_paths_expand_the_credential_locations(tmp_path: Path) -> None:
    paths = default_denied_paths(tmp_path)
    assert len(paths) == len(DEFAULT_DENIED_READ)
    assert tmp_path / ".ssh" in paths
    assert tmp_path / ".config" / "gh" in paths
    assert tmp_path / ".docker" / "config.json" in paths
    assert all(entry.startswith("~/") for entry in DEFAULT_DENIED_READ)
    assert default_denied_paths() == default_denied_paths(Path.home())
    policy = SandboxPolicy(workspace=tmp_path, denied_paths=paths)
    assert not policy.check(tmp_path / ".aws" / "credentials", "read").allowed
    assert not policy.check(tmp_path / ".netrc", "write").allowed


def test_default_denied_paths_needs_an_absolute_home() -> None:
    with pytest.raises(ShellValueError):
        default_denied_paths(Path("home"))


def test_sandbox_unavailable_error_names_cause_and_fix() -> None:
    error = SandboxUnavailableError("bwrap is missing", "apt-get install bubblewrap")
    assert isinstance(error, ShellError)
    assert (error.cause, error.fix) == ("bwrap is missing", "apt-get install bubblewrap")
    assert str(error) == "sandbox unavailable: bwrap is missing; fix: apt-get install bubblewrap"


def test_resolve_carries_the_sandbox_policy(tmp_path: Path) -> None:
    policy = SandboxPolicy(workspace=tmp_path)
    spec = resolve_request(
        ShellExecRequest("true", sandbox=policy),
        default_workdir=tmp_path,
        default_timeout=1,
        max_timeout=1,
        default_stdout_max_bytes=1,
    )
    assert spec.sandbox is policy
    plain = resolve_request(
        ShellExecRequest("true"),
        default_workdir=tmp_path,
        default_timeout=1,
        max_timeout=1,
        default_stdout_max_bytes=1,
    )
    assert plain.sandbox is None


def test_a_spec_refuses_a_sandbox_that_is_not_a_policy(tmp_path: Path) -> None:
    with pytest.raises(ShellValueError) as caught:
        ShellExecSpec("true", tmp_path, 1, 1, sandbox="workspace-write")  # type: ignore[arg-type]
    assert caught.value.name == "sandbox"


def test_a_run_result_defaults_to_no_sandbox_denial() -> None:
    result = ShellRunResult(0, None, False, False, 1.0, CollectedOutput(""), CollectedOutput(""), 0)
    assert result.sandbox_denied is None
    denied = ShellRunResult(
        1,
        None,
        False,
        False,
        1.0,
        CollectedOutput(""),
        CollectedOutput("Read-only file system"),
        0,
        sandbox_denied="workspace-write",
    )
    assert denied.sandbox_denied == "workspace-write"


@pytest.mark.parametrize("name", [".claude", ".codex"])
def test_hook_folders_are_protected_like_git_whether_or_not_they_exist(name: str) -> None:
    policy = SandboxPolicy(workspace=Path("/w"))
    assert not policy.check(f"/w/{name}/hooks/guard.sh", "write").allowed
    assert not policy.check(f"/w/{name}", "write").allowed
    assert not policy.check(f"/w/sub/{name}/settings.json", "write").allowed
    assert policy.check(f"/w/{name}/hooks/guard.sh", "read").allowed


def test_protected_paths_stay_read_only() -> None:
    paths = ("scripts/hook.sh", "./bin", "/r/.venv/bin/jq")
    policy = SandboxPolicy(
        workspace=Path("/w"), writable_roots=(Path("/r"),), protected_paths=paths
    )
    assert policy.protected_paths == ("scripts/hook.sh", "bin", "/r/.venv/bin/jq")
    targets = (Path("/w/scripts/hook.sh"), Path("/w/bin"), Path("/r/.venv/bin/jq"))
    assert policy.protected_targets == targets
    assert not policy.check("/r/.venv/bin/jq", "write").allowed
    assert policy.check("/r/.venv/bin/other", "write").allowed
    decision = policy.check("/w/scripts/hook.sh", "write")
    assert not decision.allowed
    assert decision.reason == "protected path /w/scripts/hook.sh: /w/scripts/hook.sh"
    assert not policy.check("/w/bin/tool", "write").allowed
    assert policy.check("/w/scripts/other.sh", "write").allowed
    assert SandboxPolicy(protected_paths=("x", "/y")).protected_targets == (Path("/y"),)


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ("scripts/hook.sh", "protected_paths"),
        (("/",), "protected_paths[0]"),
        (("../outside.sh",), "protected_paths[0]"),
        (("a/../..",), "protected_paths[0]"),
        ((".",), "protected_paths[0]"),
        (("",), "protected_paths[0]"),
        ((3,), "protected_paths[0]"),
    ],
)
def test_bad_protected_paths_are_refused_naming_the_entry(value: object, field: str) -> None:
    with pytest.raises(ShellValueError) as caught:
        SandboxPolicy(protected_paths=value)  # type: ignore[arg-type]
    assert caught.value.name == field


def test_a_logged_mode_reads_fail_closed() -> None:
    assert sandbox_mode_from_log(None) is None
    assert sandbox_mode_from_log("workspace-write") == "workspace-write"
    assert sandbox_mode_from_log("danger-full-access") == "danger-full-access"
    assert sandbox_mode_from_log("") == "read-only"
    assert sandbox_mode_from_log("DANGER-FULL-ACCESS") == "read-only"
