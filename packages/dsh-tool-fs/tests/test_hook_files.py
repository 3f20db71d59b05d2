"""Hook folders and hook scripts under the file tools (issue 32, 1.3): hooks run unconfined, so
`write` and `edit` never change `.claude/`, `.codex/` or a policy's protected path — existing or
not yet created — while the rest of the workspace stays writable."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh_shell import SandboxPolicy
from dsh_tool_fs import FileTools
from support import Caller, Tools, code

GUARD = "#!/bin/sh\nexit 0\n"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / ".claude" / "hooks").mkdir(parents=True)
    (work / ".claude" / "hooks" / "guard.sh").write_text(GUARD)
    (work / "scripts").mkdir()
    (work / "scripts" / "check.sh").write_text(GUARD)
    return work


def _tools(work: Path) -> Tools:
    policy = SandboxPolicy(protected_paths=("scripts/check.sh", "tools/post.sh"))
    return Tools(FileTools(policy, ripgrep=None), Caller.at(work))


TARGETS = [
    ".claude/hooks/guard.sh",
    ".claude/settings.json",
    ".codex/hooks.json",
    "sub/.claude/hooks/x.sh",
    "scripts/check.sh",
    "tools/post.sh",
]


@pytest.mark.parametrize("target", TARGETS)
async def test_write_never_changes_a_hook_folder_or_a_protected_path(
    work: Path, target: str
) -> None:
    tools = _tools(work)
    result = await tools.call("write", file_path=target, content="touch PWNED\n")
    assert code(result) == "FS_SANDBOX_DENIED", result.text
    assert "[sandbox: file access denied under workspace-write mode]" in result.text
    assert (work / ".claude" / "hooks" / "guard.sh").read_text() == GUARD
    assert (work / "scripts" / "check.sh").read_text() == GUARD
    for missing in (".claude/settings.json", ".codex", "sub", "tools"):
        assert not (work / missing).exists()


@pytest.mark.parametrize("target", [".claude/hooks/guard.sh", "scripts/check.sh"])
async def test_edit_after_a_read_is_refused_too(work: Path, target: str) -> None:
    tools = _tools(work)
    assert not (await tools.call("read", file_path=target)).is_error  # reading is allowed
    result = await tools.call("edit", file_path=target, old_string="exit 0", new_string="id")
    assert code(result) == "FS_SANDBOX_DENIED"
    assert (work / target).read_text() == GUARD


async def test_the_rest_of_the_workspace_stays_writable(work: Path) -> None:
    tools = _tools(work)
    assert not (await tools.call("write", file_path="scripts/other.sh", content="ok\n")).is_error
    assert (work / "scripts" / "other.sh").read_text() == "ok\n"
