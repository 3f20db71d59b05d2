"""The sandbox policy, enforced in Python: the escape cases of the sandbox issue repeated for
the file tools under each mode, and escalation through sandbox_permissions and approval."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh_shell import SandboxMode, SandboxPolicy
from dsh_tool_fs import FileTools
from support import Caller, Event, Tools, code


class World:
    """A workspace, a DSH home holding the session log, a secret outside, a denied folder."""

    def __init__(self, root: Path) -> None:
        self.work = root / "work"
        self.home = root / "dsh-home"
        self.outside = root / "outside"
        self.denied = root / "user" / ".ssh"
        self.tmp = root / "tmp-session"
        for folder in (self.work / ".git", self.work / "sub" / ".dsh", self.home / "sessions",
                       self.outside, self.denied, self.tmp):  # fmt: skip
            folder.mkdir(parents=True)
        self.log = self.home / "sessions" / "s1.jsonl"
        self.log.write_text('{"type":"session"}\n')
        (self.outside / "secret.txt").write_text("outside\n")
        (self.denied / "id_ed25519").write_text("PRIVATE KEY\n")
        (self.work / "notes.txt").write_text("inside\n")
        (self.work / ".git" / "config").write_text("[core]\n")
        (self.work / "escape").symlink_to(self.outside)
        (self.work / "secret-link.txt").symlink_to(self.outside / "secret.txt")

    def policy(self, mode: SandboxMode) -> SandboxPolicy:
        return SandboxPolicy(
            mode=mode,
            temp_dir=self.tmp,
            read_only_paths=(self.home,),
            denied_paths=(self.denied,),
        )

    def tools(self, mode: SandboxMode, *, approve: bool | None = None, **options: Any) -> Tools:
        files = FileTools(self.policy(mode), ripgrep=None, **options)
        return Tools(files, Caller.at(self.work), approve=approve)


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


WRITES = [
    ("outside the workspace", lambda w: str(w.outside / "new.txt")),
    ("through .. ", lambda w: "../outside/new.txt"),
    ("through a symlinked directory", lambda w: "escape/new.txt"),
    ("through a symlinked file", lambda w: "secret-link.txt"),
    ("into .git", lambda w: ".git/config"),
    ("into a nested .dsh", lambda w: "sub/.dsh/state"),
    ("onto the session log", lambda w: str(w.log)),
    ("into a denied folder", lambda w: str(w.denied / "authorized_keys")),
]


@pytest.mark.parametrize(("case", "where"), WRITES, ids=[c for c, _ in WRITES])
async def test_workspace_write_refuses_every_escape(world: World, case: str, where: Any) -> None:
    tools = world.tools("workspace-write")
    target = where(world)
    before = {p: p.read_bytes() for p in world.outside.rglob("*") if p.is_file()}
    result = await tools.call("write", file_path=target, content="pwned\n")
    assert code(result) == "FS_SANDBOX_DENIED", (case, result.text)
    assert "[sandbox: file access denied under workspace-write mode]" in result.text
    assert "sandbox_permissions" in result.text
    after = {p: p.read_bytes() for p in world.outside.rglob("*") if p.is_file()}
    assert after == before
    assert world.log.read_text() == '{"type":"session"}\n'
    assert (world.work / ".git" / "config").read_text() == "[core]\n"
    assert not (world.denied / "authorized_keys").exists()


async def test_edit_is_refused_the_same_way_even_after_a_read(world: World) -> None:
    tools = world.tools("workspace-write")
    assert not (await tools.call("read", file_path="secret-link.txt")).is_error  # reads: allowed
    result = await tools.call(
        "edit", file_path="secret-link.txt", old_string="outside", new_string="pwned"
    )
    assert code(result) == "FS_SANDBOX_DENIED"
    assert str(world.outside / "secret.txt") in result.text  # judged where the link points
    assert (world.outside / "secret.txt").read_text() == "outside\n"


async def test_inside_the_workspace_and_the_session_tmp_writes_work(world: World) -> None:
    tools = world.tools("workspace-write")
    assert not (await tools.call("write", file_path="made.txt", content="ok\n")).is_error
    assert not (await tools.call("write", file_path=str(world.tmp / "t"), content="ok\n")).is_error
    assert (world.work / "made.txt").read_text() == "ok\n"


@pytest.mark.parametrize("mode", ["read-only", "workspace-write"])
async def test_a_denied_path_is_unreadable_in_every_confined_mode(world: World, mode: str) -> None:
    tools = world.tools(mode)  # type: ignore[arg-type]
    result = await tools.call("read", file_path=str(world.denied / "id_ed25519"))
    assert code(result) == "FS_SANDBOX_DENIED"
    assert "PRIVATE KEY" not in result.text


async def test_read_only_refuses_workspace_writes_but_not_the_session_tmp(world: World) -> None:
    tools = world.tools("read-only")
    refused = await tools.call("write", file_path="made.txt", content="x\n")
    assert code(refused) == "FS_SANDBOX_DENIED"
    assert "[sandbox: file access denied under read-only mode]" in refused.text
    assert not (world.work / "made.txt").exists()
    assert not (await tools.call("write", file_path=str(world.tmp / "t"), content="x")).is_error
    assert not (await tools.call("read", file_path="notes.txt")).is_error


async def test_full_access_allows_everything(world: World) -> None:
    tools = world.tools("danger-full-access")
    assert not (await tools.call("write", file_path="../outside/new.txt", content="x")).is_error
    assert (world.outside / "new.txt").read_text() == "x"


async def test_the_session_mode_is_the_last_one_the_caller_logged(world: World) -> None:
    files = FileTools(world.policy("workspace-write"), ripgrep=None)
    caller = Caller.at(world.work)
    tools = Tools(files, caller)
    caller.session.events.append(Event("sandbox/mode", {"mode": "read-only"}))
    assert code(await tools.call("write", file_path="m.txt", content="x")) == "FS_SANDBOX_DENIED"
    caller.session.events.append(Event("sandbox/mode", {"mode": "workspace-write"}))
    assert not (await tools.call("write", file_path="m.txt", content="x")).is_error
    caller.session.events.append(Event("sandbox/mode", {"mode": "no-such-mode"}))  # fails closed
    assert code(await tools.call("write", file_path="m.txt", content="y")) == "FS_SANDBOX_DENIED"


async def test_an_approved_escalation_widens_that_one_call(world: World) -> None:
    tools = world.tools("workspace-write", approve=True)
    target = str(world.outside / "granted.txt")
    result = await tools.call(
        "write",
        file_path=target,
        content="x\n",
        sandbox_permissions="danger-full-access",
        justification="The user asked for a file next to the project.",
    )
    assert not result.is_error, result.text
    assert tools.asked == [
        "escalate sandbox to danger-full-access: The user asked for a file next to the project."
    ]
    again = await tools.call("write", file_path=str(world.outside / "again.txt"), content="x")
    assert code(again) == "FS_SANDBOX_DENIED"  # one call only


async def test_a_rejected_or_unanswerable_escalation_runs_nothing(world: World) -> None:
    escalation = {
        "sandbox_permissions": "danger-full-access",
        "justification": "Needs to write outside.",
    }
    target = str(world.outside / "no.txt")
    rejected = world.tools("workspace-write", approve=False)
    result = await rejected.call("write", file_path=target, content="x", **escalation)
    assert code(result) == "DENIED"
    nobody = world.tools("workspace-write")  # no approval channel
    assert code(await nobody.call("write", file_path=target, content="x", **escalation)) == "DENIED"
    assert not (world.outside / "no.txt").exists()


async def test_escalation_arguments_are_checked(world: World) -> None:
    tools = world.tools("workspace-write", approve=True)
    alone = await tools.call(
        "read", file_path="notes.txt", sandbox_permissions="danger-full-access"
    )
    assert code(alone) == "INVALID_ARGS"
    assert "sandbox_permissions was given without justification" in alone.text
    reason_alone = await tools.call("read", file_path="notes.txt", justification="Because.")
    assert code(reason_alone) == "INVALID_ARGS"
    assert "justification was given without sandbox_permissions" in reason_alone.text
    narrowing = await tools.call(
        "read",
        file_path="notes.txt",
        sandbox_permissions="workspace-write",
        justification="No reason.",
    )
    assert code(narrowing) == "INVALID_ARGS"
    assert "does not widen" in narrowing.text
    assert tools.asked == []


async def test_without_a_sandbox_the_schema_has_no_escalation_fields(world: World) -> None:
    plain = FileTools(ripgrep=None)
    confined = FileTools(world.policy("workspace-write"), ripgrep=None)
    for tool in plain.definitions():
        assert "sandbox_permissions" not in tool.schema().parameters["properties"]
    for tool in confined.definitions():
        assert "sandbox_permissions" in tool.schema().parameters["properties"]


def test_opening_refuses_a_path_that_no_longer_leads_where_it_was_checked(tmp_path: Path) -> None:
    """The race a symlink swapped in after the check would win: the descriptor's own path is
    compared with the checked one, and a final symlink is never followed."""
    import os

    from dsh_tool_fs import SandboxDeniedError
    from dsh_tool_fs._confinement import open_verified

    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f.txt").write_text("x")
    (tmp_path / "swapped").symlink_to(tmp_path / "real")
    with pytest.raises(SandboxDeniedError, match="changed while it was opened"):
        open_verified(tmp_path / "swapped" / "f.txt", os.O_RDONLY)
    (tmp_path / "final-link").symlink_to(tmp_path / "real" / "f.txt")
    with pytest.raises(OSError, match="Too many levels of symbolic links"):
        open_verified(tmp_path / "final-link", os.O_RDONLY)
    fd = open_verified(tmp_path / "real" / "f.txt", os.O_RDONLY)
    os.close(fd)
