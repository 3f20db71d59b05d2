"""read, write and edit through an injected `FileAccess` (an editor's buffers): the sandbox
decides before the access is asked, writes leave the disk alone, what the access answers is
bounded in size and time, and its failures are typed errors naming the path."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from dsh_shell import SandboxMode, SandboxPolicy
from dsh_tool_fs import (
    OBSERVED_META_KEY,
    FileAccessRoutes,
    FileTools,
    Observation,
)
from dsh_tool_fs._read import WHOLE_FILE_BYTES
from dsh_tools import ToolCall, ToolResult
from support import Caller, Tools, code


class Buffers:
    """A `FileAccess` over in-memory buffers, as an editor holds them: ``requests`` records
    every request (kind, path), ``fail`` makes every request raise, ``hang`` makes requests
    wait until cancelled (``started`` is set once one waits, ``cancelled`` once one was)."""

    name = "the test editor"

    def __init__(self, *, reads: bool = True, writes: bool = True) -> None:
        self.reads = reads
        self.writes = writes
        self.texts: dict[str, object] = {}
        self.requests: list[tuple[str, str]] = []
        self.fail: Exception | None = None
        self.hang = False
        self.started = asyncio.Event()
        self.cancelled = False
        self.during: Any = None  # called with the path while a request is in flight

    async def _answer(self, kind: str, path: Path) -> None:
        self.requests.append((kind, str(path)))
        if self.during is not None:
            self.during(path)
        if self.fail is not None:
            raise self.fail
        if self.hang:
            self.started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled = True
                raise

    async def read_text(self, path: Path) -> str:
        await self._answer("read", path)
        if str(path) not in self.texts:
            raise FileNotFoundError(f"no buffer and no file {path}")
        return self.texts[str(path)]  # type: ignore[return-value]  # a test may hold a non-str

    async def write_text(self, path: Path, content: str) -> None:
        await self._answer("write", path)
        self.texts[str(path)] = content


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    return root


def routed(
    work: Path,
    buffers: Buffers,
    sandbox: SandboxPolicy | None = None,
    *,
    approve: bool | None = None,
    **options: Any,
) -> Tools:
    files = FileTools(sandbox, ripgrep=None, **options)
    files.route_access("s1", buffers)
    return Tools(files, Caller.at(work), approve=approve)


async def test_read_gives_the_buffer_not_the_disk(work: Path) -> None:
    target = work / "a.txt"
    target.write_text("on disk\n")
    buffers = Buffers()
    buffers.texts[str(target)] = "unsaved one\nunsaved two\n"
    result = await routed(work, buffers).call("read", file_path="a.txt", offset=2)
    assert not result.is_error, result.text
    assert "2: unsaved two\n" in result.text
    assert "on disk" not in result.text
    assert "(End of file: 2 lines in total.)" in result.text
    assert buffers.requests == [("read", str(target))]
    seen = Observation.from_meta(result.meta)
    assert seen is not None
    assert seen.content_only
    assert seen.size == len("unsaved one\nunsaved two\n")


async def test_write_goes_through_the_access_and_the_disk_is_untouched(work: Path) -> None:
    target = work / "a.txt"
    target.write_text("on disk\n")
    buffers = Buffers()
    buffers.texts[str(target)] = "unsaved\n"
    tools = routed(work, buffers)
    assert not (await tools.call("read", file_path="a.txt")).is_error
    result = await tools.call("write", file_path="a.txt", content="new text\n")
    assert not result.is_error, result.text
    assert result.text == f"Replaced {target} (9 bytes)."
    assert buffers.texts[str(target)] == "new text\n"
    assert target.read_text() == "on disk\n"
    created = await tools.call("write", file_path="fresh/b.txt", content="b\n")
    assert not created.is_error, created.text
    assert buffers.texts[str(work / "fresh" / "b.txt")] == "b\n"
    assert not (work / "fresh").exists()
    assert buffers.requests == [
        ("read", str(target)),
        ("read", str(target)),  # the current buffer, checked against what was read
        ("write", str(target)),
        ("write", str(work / "fresh" / "b.txt")),  # a new file: nothing to read first
    ]


async def test_edit_changes_the_buffer_the_model_read(work: Path) -> None:
    target = work / "code.py"
    target.write_text("x = 1\n")
    buffers = Buffers()
    buffers.texts[str(target)] = "x = 2  # unsaved\n"
    tools = routed(work, buffers)
    assert not (await tools.call("read", file_path="code.py")).is_error
    result = await tools.call("edit", file_path="code.py", old_string="x = 2", new_string="y = 3")
    assert not result.is_error, result.text
    assert buffers.texts[str(target)] == "y = 3  # unsaved\n"
    assert target.read_text() == "x = 1\n"
    again = await tools.call("edit", file_path="code.py", old_string="y = 3", new_string="z = 4")
    assert not again.is_error, again.text  # what the session wrote counts as read


async def test_edit_refuses_a_buffer_changed_since_the_read(work: Path) -> None:
    target = work / "a.txt"
    buffers = Buffers()
    buffers.texts[str(target)] = "before\n"
    tools = routed(work, buffers)
    assert not (await tools.call("read", file_path="a.txt")).is_error
    buffers.texts[str(target)] = "the user typed\n"
    result = await tools.call("edit", file_path="a.txt", old_string="user", new_string="model")
    assert code(result) == "FS_CHANGED"
    assert str(target) in result.text
    assert ("write", str(target)) not in buffers.requests
    assert buffers.texts[str(target)] == "the user typed\n"


async def test_edit_or_overwrite_of_a_file_never_read_asks_nothing(work: Path) -> None:
    (work / "a.txt").write_text("on disk\n")
    buffers = Buffers()
    tools = routed(work, buffers)
    edit = await tools.call("edit", file_path="a.txt", old_string="on", new_string="off")
    assert code(edit) == "FS_NOT_READ"
    write = await tools.call("write", file_path="a.txt", content="x\n")
    assert code(write) == "FS_NOT_READ"
    missing = await tools.call("edit", file_path="none.txt", old_string="a", new_string="b")
    assert code(missing) == "FS_NOT_FOUND"
    assert buffers.requests == []


class World:
    """A workspace, a folder outside it, a denied folder and a read-only DSH home."""

    def __init__(self, root: Path) -> None:
        self.work = root / "work"
        self.outside = root / "outside"
        self.denied = root / "user" / ".ssh"
        self.home = root / "dsh-home"
        for folder in (self.work / ".git", self.outside, self.denied, self.home):
            folder.mkdir(parents=True)
        (self.work / "notes.txt").write_text("inside\n")
        (self.denied / "id_ed25519").write_text("PRIVATE KEY\n")
        self.buffers = Buffers()
        for path in (self.work / "notes.txt", self.denied / "id_ed25519"):
            self.buffers.texts[str(path)] = path.read_text()

    def tools(self, mode: SandboxMode, *, approve: bool | None = None) -> Tools:
        policy = SandboxPolicy(
            mode=mode,
            temp_dir=self.home / "tmp",
            read_only_paths=(self.home,),
            denied_paths=(self.denied,),
        )
        return routed(self.work, self.buffers, policy, approve=approve)


REFUSED = [
    ("read-only", "write", {"file_path": "notes.txt", "content": "x"}),
    ("read-only", "edit", {"file_path": "notes.txt", "old_string": "in", "new_string": "out"}),
    ("workspace-write", "write", {"file_path": "../outside/new.txt", "content": "x"}),
    ("workspace-write", "write", {"file_path": ".git/config", "content": "x"}),
    ("workspace-write", "read", {"file_path": "../user/.ssh/id_ed25519"}),
    ("workspace-write", "write", {"file_path": "../dsh-home/config.toml", "content": "x"}),
]


@pytest.mark.parametrize(("mode", "tool", "arguments"), REFUSED)
async def test_the_sandbox_refuses_before_the_access_is_asked(
    tmp_path: Path, mode: SandboxMode, tool: str, arguments: dict[str, Any]
) -> None:
    world = World(tmp_path)
    tools = world.tools(mode)
    if tool == "edit":  # read first (allowed), so only the sandbox can refuse the edit
        assert not (await tools.call("read", file_path="notes.txt")).is_error
        world.buffers.requests.clear()
    result = await tools.call(tool, **arguments)
    assert code(result) == "FS_SANDBOX_DENIED", result.text
    assert world.buffers.requests == []


async def test_an_approved_escalation_goes_through_the_access(tmp_path: Path) -> None:
    world = World(tmp_path)
    tools = world.tools("workspace-write", approve=True)
    target = world.outside / "granted.txt"
    result = await tools.call(
        "write",
        file_path=str(target),
        content="x\n",
        sandbox_permissions="danger-full-access",
        justification="The user asked for it.",
    )
    assert not result.is_error, result.text
    assert world.buffers.requests == [("write", str(target))]
    assert not target.exists()


async def test_a_text_over_the_bound_is_refused(work: Path) -> None:
    buffers = Buffers()
    buffers.texts[str(work / "big.txt")] = "x" * (WHOLE_FILE_BYTES + 1)
    buffers.texts[str(work / "wide.txt")] = "é" * (WHOLE_FILE_BYTES // 2 + 1)  # 2 bytes each
    buffers.texts[str(work / "odd.txt")] = {"not": "text"}
    tools = routed(work, buffers)
    for name in ("big.txt", "wide.txt"):
        result = await tools.call("read", file_path=name)
        assert code(result) == "FS_TOO_LARGE"
        assert str(work / name) in result.text
    odd = await tools.call("read", file_path="odd.txt")
    assert code(odd) == "FS_ACCESS_FAILED"
    assert str(work / "odd.txt") in odd.text


async def test_a_binary_buffer_is_refused_as_binary(work: Path) -> None:
    buffers = Buffers()
    buffers.texts[str(work / "blob")] = "a\0b"
    result = await routed(work, buffers).call("read", file_path="blob")
    assert code(result) == "FS_NOT_TEXT"


async def test_a_failing_access_fails_the_call_naming_the_path(work: Path) -> None:
    target = work / "a.txt"
    buffers = Buffers()
    buffers.texts[str(target)] = "text\n"
    tools = routed(work, buffers)
    assert not (await tools.call("read", file_path="a.txt")).is_error
    buffers.fail = ConnectionError("Connection closed")
    for tool, arguments in (
        ("read", {}),
        ("write", {"content": "new\n"}),
        ("edit", {"old_string": "text", "new_string": "word"}),
    ):
        result = await tools.call(tool, file_path="a.txt", **arguments)
        assert code(result) == "FS_ACCESS_FAILED", result.text
        assert str(target) in result.text
        assert "the test editor" in result.text
        assert "Connection closed" in result.text
    missing = Buffers()
    result = await routed(work, missing).call("read", file_path="gone.txt")
    assert code(result) == "FS_ACCESS_FAILED"
    assert f"no buffer and no file {work / 'gone.txt'}" in result.text


async def test_a_write_failure_keeps_the_old_version_as_the_one_seen(work: Path) -> None:
    target = work / "a.txt"
    buffers = Buffers()
    buffers.texts[str(target)] = "one\n"
    tools = routed(work, buffers)
    assert not (await tools.call("read", file_path="a.txt")).is_error
    buffers.fail = RuntimeError("refused by the editor")
    assert code(await tools.call("write", file_path="a.txt", content="two\n")) == "FS_ACCESS_FAILED"
    buffers.fail = None
    retried = await tools.call("write", file_path="a.txt", content="two\n")
    assert not retried.is_error, retried.text
    assert buffers.texts[str(target)] == "two\n"


async def test_an_access_that_never_answers_fails_the_call_at_its_bound(work: Path) -> None:
    buffers = Buffers()
    buffers.hang = True
    tools = routed(work, buffers, access_timeout=0.05)
    result = await tools.call("read", file_path="a.txt")
    assert code(result) == "FS_ACCESS_FAILED"
    assert f"{work / 'a.txt'} could not be read through the test editor" in result.text
    assert "no answer within 0.05 s" in result.text
    assert buffers.cancelled  # the request was given up, not left waiting


async def test_cancelling_the_call_cancels_the_request(work: Path) -> None:
    buffers = Buffers()
    buffers.hang = True
    tools = routed(work, buffers)
    call = ToolCall("c1", "read", json.dumps({"file_path": "a.txt"}))
    running: asyncio.Task[ToolResult] = asyncio.ensure_future(
        tools.registry.execute(call, tools.caller)
    )
    await buffers.started.wait()
    running.cancel()
    result = await running  # the registry answers a cancelled call with a result
    assert code(result) == "ABORTED"
    assert buffers.cancelled


async def test_only_the_routed_session_goes_through_the_access(work: Path) -> None:
    target = work / "a.txt"
    target.write_text("on disk\n")
    buffers = Buffers()
    buffers.texts[str(target)] = "unsaved\n"
    files = FileTools(ripgrep=None)
    disposer = files.route_access("s1", buffers)
    other = Tools(files, Caller.at(work, "s2"))
    assert "1: on disk" in (await other.call("read", file_path="a.txt")).text
    routed_session = Tools(files, Caller.at(work, "s1"))
    assert "1: unsaved" in (await routed_session.call("read", file_path="a.txt")).text
    with pytest.raises(ValueError, match="'s1' already has a file access"):
        files.route_access("s1", Buffers())
    disposer()
    assert "1: on disk" in (await routed_session.call("read", file_path="a.txt")).text
    grep = await routed_session.call("grep", pattern="unsaved|disk")
    assert "a.txt" in grep.text  # searches read the disk (the buffer's word is not there)
    assert buffers.requests == [("read", str(target))]


@pytest.mark.parametrize(("reads", "writes"), [(True, False), (False, True)])
async def test_an_access_offering_one_half_is_not_used_and_two_edits_both_land(
    work: Path, reads: bool, writes: bool
) -> None:
    """A version must be read where it is written: with one half through the access, the
    second edit would be made on a copy the first never reached (the first edit lost)."""
    target = work / "a.txt"
    target.write_text("x = 1\ny = 2\n")
    buffers = Buffers(reads=reads, writes=writes)
    buffers.texts[str(target)] = "x = 1\ny = 2\nz = 3\n"  # unsaved in the editor
    tools = routed(work, buffers)
    assert not (await tools.call("read", file_path="a.txt")).is_error
    first = await tools.call("edit", file_path="a.txt", old_string="x = 1", new_string="x = 10")
    assert not first.is_error, first.text
    second = await tools.call("edit", file_path="a.txt", old_string="y = 2", new_string="y = 20")
    assert not second.is_error, second.text
    assert target.read_text() == "x = 10\ny = 20\n"
    assert buffers.requests == []


async def test_a_resumed_session_keeps_content_only_versions_from_its_log(work: Path) -> None:
    target = work / "a.txt"
    buffers = Buffers()
    buffers.texts[str(target)] = "buffer\n"
    first = routed(work, buffers)
    read = await first.call("read", file_path="a.txt")
    assert read.meta[OBSERVED_META_KEY]["contentOnly"] is True
    files = FileTools(ripgrep=None)  # a new process: the state comes from the log
    files.route_access("s1", buffers)
    resumed = Tools(files, first.caller)
    result = await resumed.call("edit", file_path="a.txt", old_string="buffer", new_string="b")
    assert not result.is_error, result.text
    assert buffers.texts[str(target)] == "b\n"


async def test_a_disk_session_refuses_a_file_last_seen_in_a_buffer(work: Path) -> None:
    target = work / "a.txt"
    target.write_text("same\n")
    buffers = Buffers()
    buffers.texts[str(target)] = "unsaved\n"
    files = FileTools(ripgrep=None)
    disposer = files.route_access("s1", buffers)
    tools = Tools(files, Caller.at(work))
    assert not (await tools.call("read", file_path="a.txt")).is_error
    disposer()  # the editor went away; the session goes on from the terminal
    result = await tools.call("edit", file_path="a.txt", old_string="same", new_string="new")
    assert code(result) == "FS_CHANGED"  # the disk is not the buffer the model saw
    assert target.read_text() == "same\n"


def test_routes_are_per_session_and_disposable() -> None:
    routes = FileAccessRoutes()
    buffers = Buffers()
    with routes.route("s1", buffers), pytest.raises(ValueError, match="s1"):
        routes.route("s1", buffers)
    routes.route("s1", Buffers())  # free again once disposed


@pytest.mark.parametrize("seconds", [0, -1, float("inf"), True])
def test_the_access_timeout_is_a_positive_finite_number(seconds: Any) -> None:
    with pytest.raises(ValueError, match="access_timeout"):
        FileTools(access_timeout=seconds)


async def test_a_link_swapped_in_while_the_editor_reads_refuses_the_call(tmp_path: Path) -> None:
    """The editor opens by name and follows links: a folder swapped for a link to a denied
    one while the request runs is seen afterwards, and the text it gave is not shown."""
    work, secret = tmp_path / "work", tmp_path / "secret"
    (work / "d").mkdir(parents=True)
    secret.mkdir()
    (work / "d" / "key").write_text("harmless\n")
    (secret / "key").write_text("PRIVATE KEY\n")
    buffers = Buffers()
    buffers.texts[str(work / "d" / "key")] = "PRIVATE KEY\n"  # what a link-following open reads

    def swap(path: Path) -> None:
        (work / "d" / "key").unlink()
        (work / "d").rmdir()
        (work / "d").symlink_to(secret)

    buffers.during = swap
    policy = SandboxPolicy(mode="workspace-write", workspace=work, denied_paths=(secret,))
    result = await routed(work, buffers, policy).call("read", file_path="d/key")
    assert code(result) == "FS_SANDBOX_DENIED", result.text
    assert "changed while this call used it" in result.text
    assert "PRIVATE KEY" not in result.text


async def test_a_link_swapped_in_during_an_edit_sends_no_write(tmp_path: Path) -> None:
    """An edit reads the buffer again before it writes: a folder swapped for a link outside
    the workspace during that read refuses the call before any write goes out."""
    work, outside = tmp_path / "work", tmp_path / "outside"
    (work / "d").mkdir(parents=True)
    outside.mkdir()
    (work / "d" / "a.txt").write_text("x = 1\n")
    (outside / "a.txt").write_text("x = 1\n")
    buffers = Buffers()
    buffers.texts[str(work / "d" / "a.txt")] = "x = 1\n"
    tools = routed(work, buffers, SandboxPolicy(mode="workspace-write", workspace=work))
    assert not (await tools.call("read", file_path="d/a.txt")).is_error

    def swap(path: Path) -> None:
        buffers.during = None
        (work / "d" / "a.txt").unlink()
        (work / "d").rmdir()
        (work / "d").symlink_to(outside)

    buffers.during = swap
    result = await tools.call("edit", file_path="d/a.txt", old_string="x = 1", new_string="x = 2")
    assert code(result) == "FS_SANDBOX_DENIED", result.text
    assert [kind for kind, _ in buffers.requests] == ["read", "read"]  # no write went out
    assert (outside / "a.txt").read_text() == "x = 1\n"


@pytest.mark.parametrize("kind", ["fifo", "directory"])
async def test_a_path_that_is_not_a_regular_file_is_never_sent(work: Path, kind: str) -> None:
    target = work / "odd"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.mkdir()
    buffers = Buffers()
    tools = routed(work, buffers)
    result = await tools.call("read", file_path="odd")
    assert code(result) == "FS_NOT_A_FILE", result.text
    assert buffers.requests == []
