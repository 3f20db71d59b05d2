"""A session's pinned workspace under real bubblewrap: verified before each command, bound
from a descriptor of the pinned directory, so a folder swapped for a symlink is never
followed (issue 32 §1.2)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from dsh_bash_sandbox import SandboxExecutor
from dsh_shell import (
    SandboxPolicy,
    ShellExecRequest,
    ShellExecSpec,
    ShellRunResult,
    WorkspaceChangedError,
    WorkspacePin,
)

if TYPE_CHECKING:
    from conftest import FakeInner  # the fixture's type (conftest is not importable)


def swap_for_link(folder: Path, target: Path) -> None:
    """What another session in the parent folder can do: move the folder, link it elsewhere."""
    folder.rename(folder.with_name(folder.name + ".real"))
    folder.symlink_to(target)


class SwapBeforeSpawn:
    """An inner executor that swaps the workspace for a link after the sandbox checked the pin
    and built the command line, right before the process starts (the race, made certain)."""

    def __init__(self, inner: FakeInner, folder: Path, target: Path) -> None:
        self.inner = inner
        self.folder = folder
        self.target = target

    def resolve(self, request: ShellExecRequest) -> ShellExecSpec:
        return self.inner.resolve(request)

    async def run(self, spec: ShellExecSpec) -> ShellRunResult:
        swap_for_link(self.folder, self.target)
        return await self.inner.run(spec)

    def start(self, spec: ShellExecSpec) -> Any:
        return self.inner.start(spec)


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    sub = tmp_path / "work" / "sub"
    sub.mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    return sub, outside


def request(sub: Path, command: str) -> ShellExecRequest:
    return ShellExecRequest(
        command,
        workdir=sub,
        dsh_env={"DSH_SESSION_ID": "s-1"},
        sandbox=SandboxPolicy(workspace=sub),
    )


async def test_a_workspace_swapped_for_a_link_refuses_the_command(
    inner: FakeInner, tree: tuple[Path, Path]
) -> None:
    sub, outside = tree
    pin = WorkspacePin.of(sub)
    executor = SandboxExecutor(inner, workspace_pins={"s-1": pin}.get)
    swap_for_link(sub, outside)
    with pytest.raises(WorkspaceChangedError) as caught:
        await executor.run(executor.resolve(request(sub, "touch landed")))
    assert caught.value.session_id == "s-1"
    assert caught.value.path == str(sub)
    assert inner.specs == []  # nothing ran
    with pytest.raises(WorkspaceChangedError):
        executor.start(executor.resolve(request(sub, "touch landed")))
    assert list(outside.iterdir()) == []
    await executor.aclose()


async def test_a_swap_after_the_check_cannot_re_point_the_bind(
    inner: FakeInner, tree: tuple[Path, Path]
) -> None:
    sub, outside = tree
    pin = WorkspacePin.of(sub)
    racing = SwapBeforeSpawn(inner, sub, outside)
    executor = SandboxExecutor(racing, workspace_pins={"s-1": pin}.get)
    result = await executor.run(executor.resolve(request(sub, f"touch {sub}/landed")))
    assert list(outside.iterdir()) == []  # bwrap bound the pinned directory, or refused
    assert result.exit_code != 0 or (sub.with_name("sub.real") / "landed").exists()
    assert "--bind-fd" in inner.specs[0].command
    await executor.aclose()


async def test_a_pinned_workspace_runs_and_is_bound_from_its_descriptor(
    inner: FakeInner, tree: tuple[Path, Path]
) -> None:
    sub, _ = tree
    executor = SandboxExecutor(inner, workspace_pins={"s-1": WorkspacePin.of(sub)}.get)
    result = await executor.run(executor.resolve(request(sub, "touch made && pwd")))
    assert (result.exit_code, result.stdout.text) == (0, f"{sub}\n")
    assert (sub / "made").exists()
    assert f"--bind-fd 8 {sub}" in inner.specs[0].command
    await executor.aclose()


def test_a_pin_refuses_a_path_that_is_not_its_own_real_path(tree: tuple[Path, Path]) -> None:
    sub, outside = tree
    link = sub.parent / "link"
    link.symlink_to(outside)
    with pytest.raises(WorkspaceChangedError) as caught:
        WorkspacePin.of(link)
    assert f"resolves to {str(outside)!r}" in str(caught.value)
    pin = WorkspacePin.of(sub)
    sub.rename(sub.with_name("sub.old"))  # kept, so its inode is not reused
    sub.mkdir()  # the same name, another directory
    with pytest.raises(WorkspaceChangedError, match="is another directory"):
        pin.verify(session_id="s-1")


class SwapInsideBeforeSpawn:
    """An inner executor that runs ``swap`` after the sandbox checked every path and built the
    command line, right before the process starts (a concurrent job winning the race)."""

    def __init__(self, inner: FakeInner, swap: Any) -> None:
        self.inner = inner
        self.swap = swap

    def resolve(self, request: ShellExecRequest) -> ShellExecSpec:
        return self.inner.resolve(request)

    async def run(self, spec: ShellExecSpec) -> ShellRunResult:
        self.swap()
        return await self.inner.run(spec)

    def start(self, spec: ShellExecSpec) -> Any:
        self.swap()
        return self.inner.start(spec)


def _decoy(outside: Path) -> Path:
    """A folder outside the workspace shaped like the target (a nested repository's ``.git``),
    with a file a confined command must never reach."""
    target = outside / "a"
    (target / ".git").mkdir(parents=True)
    (target / "victim.txt").write_text("original\n")
    return target


async def test_a_workspace_re_pointed_after_the_check_binds_nothing_outside(
    inner: FakeInner, tree: tuple[Path, Path]
) -> None:
    # The reviewer's race: the pinned workspace holds a/.git (so a/ is pinned by a self-bind);
    # before the spawn the workspace is swapped for a folder whose a/ links outside.
    sub, outside = tree
    (sub / "a" / ".git").mkdir(parents=True)
    target = _decoy(outside)

    def swap() -> None:
        sub.rename(sub.with_name("sub.real"))
        sub.mkdir()
        for name in (".git", ".claude", ".codex", ".dsh"):  # where the placeholders were
            (sub / name).mkdir()
        (sub / "a").symlink_to(target)

    executor = SandboxExecutor(
        SwapInsideBeforeSpawn(inner, swap), workspace_pins={"s-1": WorkspacePin.of(sub)}.get
    )
    result = await executor.run(
        executor.resolve(request(sub, "echo PWNED > a/victim.txt; touch a/landed; ls -a a"))
    )
    assert (target / "victim.txt").read_text() == "original\n"
    assert sorted(p.name for p in target.iterdir()) == [".git", "victim.txt"]
    if result.exit_code == 0:  # ran confined: the writes went to the pinned folder's own a/
        assert (sub.with_name("sub.real") / "a" / "victim.txt").read_text() == "PWNED\n"
    await executor.aclose()


@pytest.mark.parametrize("background", [False, True])
async def test_a_folder_of_the_workspace_linked_outside_before_spawn_binds_nothing_outside(
    inner: FakeInner, tree: tuple[Path, Path], background: bool
) -> None:
    # The same race inside the session's own workspace: a job replaces a folder between a
    # writable root and a guarded path with a (relative) link to outside, after the check.
    sub, outside = tree
    (sub / "a" / ".git").mkdir(parents=True)
    target = _decoy(outside)

    def swap() -> None:
        (sub / "a").rename(sub / "a.moved")
        (sub / "a").symlink_to(os.path.relpath(target, sub))

    executor = SandboxExecutor(
        SwapInsideBeforeSpawn(inner, swap), workspace_pins={"s-1": WorkspacePin.of(sub)}.get
    )
    spec = executor.resolve(request(sub, "echo PWNED > a/victim.txt; mkdir a/.git/hooks"))
    if background:
        process = executor.start(spec)
        await process.wait()
        code = process.exit_code
    else:
        code = (await executor.run(spec)).exit_code
    assert (target / "victim.txt").read_text() == "original\n"
    assert list((target / ".git").iterdir()) == []
    assert not (sub / "a.moved" / ".git" / "hooks").exists()  # the guarded folder stayed read-only
    assert code != 0 or (sub / "a.moved" / "victim.txt").exists()
    await executor.aclose()


class SwapAfterVerify(WorkspacePin):
    """A pin whose check passes and then, once armed, lets a concurrent sibling swap the
    workspace: everything the sandbox looks up after the check sees the swapped folder."""

    swap: Any = None

    def verify(self, *, session_id: str | None = None) -> None:
        super().verify(session_id=session_id)
        swap, SwapAfterVerify.swap = SwapAfterVerify.swap, None
        if swap is not None:
            swap()


@pytest.mark.parametrize("swapped_for", ["a link", "a folder"])
@pytest.mark.parametrize("claude", ["present", "missing"])
async def test_a_workspace_swapped_while_the_command_is_prepared_binds_nothing_outside(
    inner: FakeInner, tree: tuple[Path, Path], swapped_for: str, claude: str
) -> None:
    # The workspace is swapped right after its pin was verified (so the mounts are worked out
    # on the swapped folder) and swapped back right before the spawn (so the pin still holds).
    # A missing .claude is held by a placeholder in the pinned folder, not in the swapped one.
    sub, outside = tree
    names = (".git", ".codex", ".dsh", "a/.git")
    for name in names if claude == "missing" else (*names, ".claude"):
        (sub / name).mkdir(parents=True)
    target = _decoy(outside)
    evil = sub.with_name("evil")
    if swapped_for == "a link":  # the workspace's name leads outside, to a/.git there
        evil.symlink_to(outside)
    else:  # a folder shaped like it whose a/ links outside
        for name in (".git", ".claude", ".codex", ".dsh"):
            (evil / name).mkdir(parents=True)
        (evil / "a").symlink_to(target)
    aside = sub.with_name("aside")

    def swap() -> None:
        sub.rename(aside)
        evil.rename(sub)

    def swap_back() -> None:
        sub.rename(evil)
        aside.rename(sub)

    pin = SwapAfterVerify(*vars_of(WorkspacePin.of(sub)))
    executor = SandboxExecutor(inner, workspace_pins={"s-1": pin}.get)
    await executor.run(executor.resolve(request(sub, "true")))  # the pin's descriptor is open
    executor.inner = SwapInsideBeforeSpawn(inner, swap_back)
    SwapAfterVerify.swap = swap
    command = "echo PWNED > a/victim.txt; mkdir a/.git/hooks .git/hooks .claude .claude/hooks"
    result = await executor.run(executor.resolve(request(sub, command)))
    assert SwapAfterVerify.swap is None  # the swap happened
    assert (target / "victim.txt").read_text() == "original\n"
    assert list((target / ".git").iterdir()) == []
    assert list((sub / "a" / ".git").iterdir()) == []  # the guarded folders stayed read-only
    assert list((sub / ".git").iterdir()) == []
    assert not (sub / ".claude" / "hooks").exists()
    assert result.exit_code != 0
    await executor.aclose()


def vars_of(pin: WorkspacePin) -> tuple[Path, int, int]:
    return pin.path, pin.device, pin.inode
