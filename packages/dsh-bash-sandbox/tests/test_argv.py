"""bwrap_argv and shell_line, built without touching the filesystem (kind and realpath given)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from dsh_bash_sandbox import (
    FIRST_SOURCE_FD,
    ISOLATION_FLAGS,
    SECCOMP_FD,
    MountSources,
    PathKind,
    bwrap_argv,
    find_nested_protected,
    seccomp_filter,
    shell_line,
    signal_from_status,
)
from dsh_shell import SandboxPolicy, SandboxUnavailableError, ShellValueError

_EXISTING: dict[str, PathKind] = {
    "/w": "dir",
    "/w/.git": "dir",
    "/w/sub": "dir",
    "/w/sub/.dsh": "dir",
    "/t": "dir",
    "/extra": "dir",
    "/home/u/.dsh": "dir",
    "/home/u/.ssh": "dir",
    "/home/u/.netrc": "file",
}


def _kind(path: Path) -> PathKind:
    return _EXISTING.get(str(path))


def _argv(policy: SandboxPolicy, workdir: str = "/w", command: str = "echo hi") -> list[str]:
    return bwrap_argv(
        policy,
        workdir=Path(workdir),
        command=command,
        bwrap="/usr/bin/bwrap",
        kind=_kind,
        realpath=lambda path: path,
    )


def _pairs(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, item in enumerate(argv) if item == flag]


_POLICY = SandboxPolicy(
    workspace=Path("/w"),
    temp_dir=Path("/t"),
    writable_roots=(Path("/extra"), Path("/missing-root")),
    read_only_paths=(Path("/home/u/.dsh"), Path("/home/u/.missing")),
    denied_paths=(Path("/home/u/.ssh"), Path("/home/u/.netrc"), Path("/home/u/.aws")),
)


def test_the_base_mounts_and_namespaces_come_first() -> None:
    argv = _argv(_POLICY)
    assert argv[:8] == ["/usr/bin/bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    assert argv[8:13] == [
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
    ]
    assert argv[8 : 8 + len(ISOLATION_FLAGS)] == list(ISOLATION_FLAGS)
    assert "--share-net" not in argv


def test_network_is_shared_only_when_the_policy_allows_it() -> None:
    argv = _argv(SandboxPolicy(workspace=Path("/w"), network=True))
    assert argv[8:10] == ["--unshare-all", "--share-net"]


def test_existing_writable_roots_are_bound_read_write() -> None:
    assert _pairs(_argv(_POLICY), "--bind") == ["/w", "/t", "/extra"]  # /missing-root absent


def test_read_only_mode_binds_only_the_temp_dir() -> None:
    argv = _argv(SandboxPolicy(mode="read-only", workspace=Path("/w"), temp_dir=Path("/t")))
    assert _pairs(argv, "--bind") == ["/t"]
    assert "/w/.git" not in argv


def test_existing_protected_names_and_read_only_paths_are_bound_read_only_after_the_roots() -> None:
    argv = _argv(_POLICY, workdir="/w/sub")
    read_only = _pairs(argv, "--ro-bind")
    # /w/.git (in the root), /w/sub/.dsh (in the workdir), the DSH home; absent ones skipped
    assert read_only == ["/", "/w/.git", "/w/sub/.dsh", "/home/u/.dsh", "/dev/null"]
    assert argv.index("/w/.git") > argv.index("--bind")


def test_denied_paths_are_hidden_a_directory_by_a_read_only_tmpfs_a_file_by_dev_null() -> None:
    argv = _argv(_POLICY)
    at = argv.index("--tmpfs")
    assert argv[at : at + 4] == ["--tmpfs", "/home/u/.ssh", "--remount-ro", "/home/u/.ssh"]
    at = argv.index("/dev/null")
    assert argv[at - 1 : at + 2] == ["--ro-bind", "/dev/null", "/home/u/.netrc"]
    assert "/home/u/.aws" not in argv  # absent: nothing to hide


def test_tmpdir_workdir_and_the_command_end_the_line() -> None:
    argv = _argv(_POLICY, command="echo 'a b'")
    assert argv[-9:] == [
        "--setenv",
        "TMPDIR",
        "/t",
        "--chdir",
        "/w",
        "--",
        "/bin/bash",
        "-c",
        "echo 'a b'",
    ]


def test_symlinked_paths_are_mounted_at_their_real_location() -> None:
    argv = bwrap_argv(
        SandboxPolicy(workspace=Path("/link")),
        workdir=Path("/link"),
        command="true",
        kind=lambda path: "dir" if str(path).startswith(("/real", "/link")) else None,
        realpath=lambda path: Path(str(path).replace("/link", "/real")),
    )
    assert _pairs(argv, "--bind") == ["/real"]


def test_full_access_has_no_bwrap_line() -> None:
    with pytest.raises(ShellValueError):
        _argv(SandboxPolicy(mode="danger-full-access"))


def test_shell_line_execs_the_argv_quoted() -> None:
    line = shell_line(["/usr/bin/bwrap", "--", "/bin/bash", "-c", "echo 'a b'; exit 3"])
    assert line == "exec /usr/bin/bwrap -- /bin/bash -c 'echo '\"'\"'a b'\"'\"'; exit 3'"
    completed = subprocess.run(
        ["bash", "-c", shell_line(["bash", "-c", "echo 'a b'; exit 3"])],
        capture_output=True,
        check=False,
    )
    assert (completed.returncode, completed.stdout) == (3, b"a b\n")


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (None, None),
        (0, None),
        (3, None),
        (128, None),
        (129, "SIGHUP"),
        (137, "SIGKILL"),
        (143, "SIGTERM"),
        (139, "SIGSEGV"),
        (141, "SIGPIPE"),
        (145, None),  # SIGCHLD: its default action does not end a process
        (147, None),  # SIGSTOP
        (200, None),
    ],
)
def test_signal_from_status_reads_bwraps_128_plus_n(
    status: int | None, expected: str | None
) -> None:
    """bwrap reports a command killed by signal N as 128 + N (as a shell does)."""
    assert signal_from_status(status) == expected


def test_a_root_inside_another_is_not_mounted_on_its_own() -> None:
    """A nested root is writable through the outer one; mounting it would follow a symlink a
    command planted there (``ln -s /etc nested``) to a writable ``/etc``."""
    argv = bwrap_argv(
        SandboxPolicy(workspace=Path("/w/sub"), writable_roots=(Path("/w"),)),
        workdir=Path("/w/sub"),
        command="true",
        kind=_kind,
        realpath=lambda path: Path("/etc") if path == Path("/w/sub") else path,
    )
    assert _pairs(argv, "--bind")[0] == "/w"
    assert "/etc" not in argv


def test_directories_between_a_root_and_a_guarded_path_are_pinned_before_it() -> None:
    existing: dict[str, PathKind] = {
        "/home/u": "dir",
        "/home/u/.config": "dir",
        "/home/u/.config/gh": "dir",
        "/home/u/a": "dir",
        "/home/u/a/b": "dir",
        "/home/u/a/b/log": "file",
    }
    argv = bwrap_argv(
        SandboxPolicy(
            workspace=Path("/home/u"),
            read_only_paths=(Path("/home/u/a/b/log"),),
            denied_paths=(Path("/home/u/.config/gh"),),
        ),
        workdir=Path("/home/u"),
        command="true",
        kind=lambda path: existing.get(str(path)),
        realpath=lambda path: path,
    )
    assert _pairs(argv, "--bind") == ["/home/u", "/home/u/a", "/home/u/a/b", "/home/u/.config"]
    assert argv.index("/home/u/.config") < argv.index("--tmpfs")
    assert argv.index("/home/u/a/b") < argv.index("/home/u/a/b/log")


def test_the_seccomp_filter_is_built_for_known_machines_only() -> None:
    x86 = seccomp_filter("x86_64")
    arm = seccomp_filter("aarch64")
    assert x86 is not None
    assert arm is not None
    assert (len(x86), len(arm)) == (14 * 8, 13 * 8)  # classic BPF: 8 bytes per instruction
    assert seccomp_filter("riscv64") is None


def test_the_seccomp_filter_is_read_on_its_descriptor() -> None:
    argv = bwrap_argv(
        SandboxPolicy(workspace=Path("/w")),
        workdir=Path("/w"),
        command="true",
        kind=_kind,
        realpath=lambda path: path,
        seccomp_fd=SECCOMP_FD,
    )
    assert argv[13:15] == ["--seccomp", str(SECCOMP_FD)]
    line = shell_line(argv, Path("/t/filter file.bpf"))
    assert line.endswith(f" {SECCOMP_FD}< '/t/filter file.bpf'")


def test_nested_protected_names_are_found_within_the_bounds(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()  # directly in the root: the caller guards it already
    (tmp_path / "sub" / ".git").mkdir(parents=True)
    (tmp_path / "a" / "b" / "c" / ".dsh").mkdir(parents=True)
    (tmp_path / "a" / "b" / "c" / "d" / ".git").mkdir(parents=True)  # below the depth bound
    (tmp_path / "sub" / ".git" / "modules" / ".git").mkdir(parents=True)  # inside one: not walked
    (tmp_path / "link").symlink_to(tmp_path / "sub")  # never followed
    found = find_nested_protected(tmp_path, (".git", ".dsh"))
    assert sorted(found) == [tmp_path / "a" / "b" / "c" / ".dsh", tmp_path / "sub" / ".git"]


def test_a_nested_git_below_the_workspace_is_mounted_read_only(tmp_path: Path) -> None:
    (tmp_path / "sub" / ".git").mkdir(parents=True)
    argv = bwrap_argv(SandboxPolicy(workspace=tmp_path), workdir=tmp_path, command="true")
    assert str(tmp_path / "sub" / ".git") in _pairs(argv, "--ro-bind")


def test_with_sources_no_mount_inside_a_writable_root_is_given_by_name(tmp_path: Path) -> None:
    (tmp_path / "w" / "a" / ".git").mkdir(parents=True)
    (tmp_path / "w" / "hook.sh").write_text("true\n")
    work = tmp_path / "w"
    sources = MountSources()
    argv = bwrap_argv(
        SandboxPolicy(workspace=work, protected_paths=("hook.sh",)),
        workdir=work,
        command="true",
        sources=sources,
    )
    assert _pairs(argv, "--bind") == []
    assert _pairs(argv, "--ro-bind") == ["/"]
    numbers = [number for number, _ in sources.passed]
    assert numbers == list(range(FIRST_SOURCE_FD, FIRST_SOURCE_FD + len(numbers)))
    by_fd = {argv[i + 1]: argv[i - 1] for i in range(len(argv)) if argv[i - 1].endswith("-fd")}
    assert by_fd[str(work)] == "--bind-fd"
    assert by_fd[str(work / "a")] == "--bind-fd"  # the pinning self-bind
    assert by_fd[str(work / "a" / ".git")] == "--ro-bind-fd"
    assert by_fd[str(work / "hook.sh")] == "--ro-bind-fd"  # a protected file, too
    line = shell_line(argv, sources=[(n, f"/proc/self/fd/{fd}") for n, fd in sources.passed])
    assert f" {FIRST_SOURCE_FD}< /proc/self/fd/" in line
    sources.close()
    assert sources.passed == []


@pytest.mark.parametrize("replacement", ["symlink", "fifo"])
def test_a_source_replaced_after_the_check_is_refused_naming_it(
    tmp_path: Path, replacement: str
) -> None:
    work = tmp_path / "w"
    (work / "a" / ".git").mkdir(parents=True)
    (tmp_path / "outside" / ".git").mkdir(parents=True)
    sources = MountSources()
    if replacement == "symlink":  # a folder on the way, replaced by a link to outside
        (work / "a").rename(work / "a.moved")
        (work / "a").symlink_to(tmp_path / "outside")
        path, kind = work / "a" / ".git", "dir"
    else:  # a guarded file that is a FIFO: opening it never blocks, it is refused
        os.mkfifo(work / "hook.sh")
        path, kind = work / "hook.sh", "file"
    with pytest.raises(SandboxUnavailableError) as caught:
        sources(work, path, kind)  # type: ignore[arg-type]
    assert str(path) in caught.value.cause
    assert sources.passed == []
    sources.close()
