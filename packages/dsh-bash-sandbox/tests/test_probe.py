"""probe_sandbox and fail-closed: a missing or broken bwrap stops every confined command."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from dsh_bash_sandbox import (
    FIX_CONFINE,
    FIX_INSTALL,
    FIX_NAMESPACES,
    FIX_OUTSIDE,
    SandboxExecutor,
    find_bwrap,
    probe_sandbox,
)
from dsh_shell import (
    SYSTEM_PROGRAM_DIRS,
    SandboxPolicy,
    SandboxUnavailableError,
    ShellExecRequest,
)

if TYPE_CHECKING:
    from conftest import FakeInner  # the fixture's type (conftest is not importable)

_SYSTEM_BWRAP = next(
    os.path.join(folder, "bwrap")
    for folder in SYSTEM_PROGRAM_DIRS
    if os.access(os.path.join(folder, "bwrap"), os.X_OK)
)
"""Where a bare ``bwrap`` is found: the first system program folder holding one."""

# What bwrap prints where unprivileged user namespaces are off (Debian, Ubuntu with AppArmor).
_NAMESPACE_FAILURE = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "bubblewrap 0.8.0"; exit 0; fi
echo "bwrap: No permissions to create a new namespace, likely because the kernel does not \
allow non-privileged user namespaces." >&2
exit 1
"""


@pytest.fixture
def broken_bwrap(tmp_path: Path) -> Path:
    path = tmp_path / "bin" / "bwrap"
    path.parent.mkdir()
    path.write_text(_NAMESPACE_FAILURE)
    path.chmod(0o755)
    return path


def test_the_real_bwrap_is_available_here() -> None:
    """CI installs bubblewrap (.ci/run); a machine without it fails here, loudly."""
    probe = probe_sandbox()
    assert probe.available, f"{probe.cause}; fix: {probe.fix}"
    assert (probe.cause, probe.fix) == (None, None)
    assert probe.path == _SYSTEM_BWRAP
    assert probe.version is not None
    assert probe.version.startswith("bubblewrap ")


def test_a_probe_is_cached_per_executable() -> None:
    assert probe_sandbox() is probe_sandbox()


def test_a_missing_bwrap_names_the_cause_and_the_install_fix(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-bwrap")
    probe = probe_sandbox(missing)
    assert not probe.available
    assert probe.path is None
    assert probe.cause == f"bwrap not found: {missing!r} is not an executable file"
    assert probe.fix == FIX_INSTALL
    assert "apt-get install bubblewrap" in FIX_INSTALL
    assert "--sandbox danger-full-access" in FIX_INSTALL


def test_a_bwrap_that_cannot_create_namespaces_names_its_error(broken_bwrap: Path) -> None:
    probe = probe_sandbox(str(broken_bwrap))
    assert not probe.available
    assert probe.version == "bubblewrap 0.8.0"
    assert probe.cause is not None
    assert probe.cause.startswith(f"bwrap at {broken_bwrap} cannot create the sandbox's namespaces")
    assert "non-privileged user namespaces" in probe.cause
    assert probe.fix == FIX_NAMESPACES


@pytest.mark.parametrize("which", ["missing", "broken"])
async def test_run_and_start_fail_closed_and_run_nothing(
    which: str, broken_bwrap: Path, inner: FakeInner, workspace: Path
) -> None:
    bwrap = str(broken_bwrap) if which == "broken" else str(workspace / "no-bwrap")
    marker = workspace / "ran"
    executor = SandboxExecutor(inner, bwrap=bwrap)
    spec = executor.resolve(ShellExecRequest(f"touch {marker}", workdir=workspace))
    with pytest.raises(SandboxUnavailableError) as caught:
        await executor.run(spec)
    assert caught.value.fix == (FIX_NAMESPACES if which == "broken" else FIX_INSTALL)
    assert str(caught.value).startswith("sandbox unavailable: bwrap ")
    with pytest.raises(SandboxUnavailableError):
        executor.start(spec)
    read_only = executor.resolve(
        ShellExecRequest(
            f"touch {marker}", workdir=workspace, sandbox=SandboxPolicy(mode="read-only")
        )
    )
    with pytest.raises(SandboxUnavailableError):
        await executor.run(read_only)
    assert inner.specs == []  # the inner executor was never asked to run anything
    assert not marker.exists()
    await executor.aclose()


async def test_full_access_needs_no_bwrap(inner: FakeInner, workspace: Path) -> None:
    policy = SandboxPolicy(mode="danger-full-access")
    executor = SandboxExecutor(inner, policy=policy, bwrap=str(workspace / "no-bwrap"))
    result = await executor.run(executor.resolve(ShellExecRequest("echo hi", workdir=workspace)))
    assert result.stdout.text == "hi\n"


# A "bwrap" that runs the command it was given, unconfined: everything after "--".
_UNCONFINED = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "bubblewrap 0.8.0"; exit 0; fi
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done
shift
exec "$@"
"""


def _script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


@pytest.mark.parametrize("fake", ["/bin/true", "unconfined"])
async def test_a_bwrap_that_does_not_confine_is_caught_by_its_canary(
    fake: str, inner: FakeInner, workspace: Path, tmp_path: Path
) -> None:
    """``bwrap = "/bin/true"`` runs nothing; a wrapper that runs the command as it is runs it
    unconfined: the canary catches both, and nothing the model asked for runs."""
    bwrap = fake if fake.startswith("/") else str(_script(tmp_path / "fake" / "bwrap", _UNCONFINED))
    probe = probe_sandbox(bwrap)
    assert not probe.available
    assert probe.fix == FIX_CONFINE
    assert probe.cause is not None
    assert probe.cause.startswith(f"bwrap at {bwrap} does not confine: its canary ")
    if fake == "/bin/true":
        assert "did not run" in probe.cause
    else:
        assert "shared this process's pid namespace" in probe.cause
        assert "wrote into the read-only folder" in probe.cause
    marker = workspace / "ran"
    executor = SandboxExecutor(inner, bwrap=bwrap)
    spec = executor.resolve(ShellExecRequest(f"touch {marker}", workdir=workspace))
    with pytest.raises(SandboxUnavailableError) as caught:
        await executor.run(spec)
    assert bwrap in caught.value.cause
    with pytest.raises(SandboxUnavailableError):
        executor.start(spec)
    assert inner.specs == []
    assert not marker.exists()
    await executor.aclose()


def test_the_real_bwrap_passes_its_canary_in_its_own_namespaces() -> None:
    probe = probe_sandbox("/usr/bin/bwrap")
    assert probe.available, probe.cause
    assert probe.path == "/usr/bin/bwrap"


def test_bwrap_is_found_once_per_process_and_never_on_path_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = find_bwrap()
    assert found is not None
    assert os.path.isabs(found)
    planted = _script(tmp_path / "bin" / "bwrap", _UNCONFINED)
    monkeypatch.setenv("PATH", f"{planted.parent}:{os.environ['PATH']}")
    assert find_bwrap() == found
    assert probe_sandbox().path == found


@pytest.mark.parametrize("entry", ["", ".", "bin"])
def test_relative_and_empty_path_entries_are_never_searched_for_bwrap(
    entry: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _script(tmp_path / "bwrap", _UNCONFINED)
    _script(tmp_path / "bin" / "bwrap", _UNCONFINED)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", f"{entry}:{os.environ['PATH']}")
    assert find_bwrap() == _SYSTEM_BWRAP


def test_a_bwrap_on_a_user_path_entry_outside_the_roots_is_never_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Day 1 a run in ~ planted ~/bin/bwrap (a wrapper that passes the canary); day 2 a run in
    ~/proj, whose writable roots do not hold ~/bin, still takes bwrap from the system folders
    and never runs the planted one."""
    home = tmp_path / "home"
    marker = tmp_path / "fake-ran"
    _script(
        home / "bin" / "bwrap", f'#!/bin/sh\necho "$*" >> {marker}\nexec {_SYSTEM_BWRAP} "$@"\n'
    )
    (home / "proj").mkdir()
    monkeypatch.setenv("PATH", f"{home / 'bin'}:{os.environ['PATH']}")
    # (the conftest clears the probe cache before each test)
    probe = probe_sandbox(writable_roots=[home / "proj"])
    assert probe.path == _SYSTEM_BWRAP
    assert probe.available, probe.cause
    assert not marker.exists()


async def test_a_bwrap_found_inside_a_writable_root_is_refused_and_never_run(
    inner: FakeInner, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An activated ``.venv/bin`` in the workspace holds a planted bwrap: refused, naming it and
    the root, before anything runs (not even ``--version``)."""
    marker = workspace / "fake-ran"
    planted = _script(workspace / ".venv" / "bin" / "bwrap", f"#!/bin/sh\ntouch {marker}\n")
    monkeypatch.setenv("PATH", f"{planted.parent}:{os.environ['PATH']}")
    assert SandboxExecutor(inner).probe(workspace=workspace).path == _SYSTEM_BWRAP
    executor = SandboxExecutor(inner, bwrap=str(planted))  # named by path: used as given
    spec = executor.resolve(ShellExecRequest("echo hi", workdir=workspace))
    with pytest.raises(SandboxUnavailableError) as caught:
        await executor.run(spec)
    assert caught.value.cause == (
        f"bwrap at {planted} lies inside the writable root {workspace}, where a confined "
        "command could have put it or could replace it; it was not run"
    )
    assert caught.value.fix == FIX_OUTSIDE
    assert executor.probe(workspace=workspace).cause == caught.value.cause
    monkeypatch.chdir(workspace)  # no workspace given: the current directory is one
    assert executor.probe().cause == caught.value.cause
    assert not marker.exists()
    assert inner.specs == []
    await executor.aclose()


async def test_an_outer_shell_inside_a_writable_root_is_refused(
    inner: FakeInner, workspace: Path
) -> None:
    """The inner executor names its shell (``shell_path``); one inside the workspace could be
    replaced by a confined command, so nothing runs through it."""
    inner.shell_path = str(_script(workspace / "bin" / "bash", "#!/bin/sh\nexit 0\n"))
    executor = SandboxExecutor(inner)
    spec = executor.resolve(ShellExecRequest("echo hi", workdir=workspace))
    with pytest.raises(SandboxUnavailableError) as caught:
        await executor.run(spec)
    assert caught.value.cause.startswith(f"the outer shell at {inner.shell_path} lies inside ")
    assert not executor.probe(workspace=workspace).available
    assert inner.specs == []
    await executor.aclose()
