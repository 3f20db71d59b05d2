"""The escape suite: real commands trying to leave the sandbox, SandboxExecutor(LocalBashExecutor).

Each case runs twice: under ``workspace-write`` it must be refused, under ``danger-full-access``
(no sandbox, the command goes to the local executor as it is) it must be allowed — so every
case proves both that the attempt works and that the sandbox stops it. Assertions are on what
the host sees (the file unchanged, the listener's connections, the signal handler, the
process table), not only on exit codes. Two cases are refused in both modes, and say why.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shlex
import signal
import sys
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from dsh_bash_local import LocalBashConfig, LocalBashExecutor
from dsh_bash_sandbox import SandboxExecutor
from dsh_shell import (
    SandboxMode,
    SandboxPolicy,
    ShellExecRequest,
    ShellRunResult,
    default_denied_paths,
)

MODES = pytest.mark.parametrize("mode", ["workspace-write", "danger-full-access"])
_SECRET = "not-a-real-key-but-a-marker"
_LOG_LINE = '{"seq":0,"type":"session/header"}\n'


@dataclass
class World:
    """A workspace with a repository and a DSH home inside, a user home with credentials."""

    mode: SandboxMode
    executor: SandboxExecutor
    workspace: Path
    outside: Path
    log: Path
    user_home: Path

    @property
    def refused(self) -> bool:
        return self.mode != "danger-full-access"

    async def run(self, command: str, limit: float = 60) -> ShellRunResult:
        """Run ``command`` in the workspace with a timeout of ``limit`` seconds."""
        request = ShellExecRequest(command, workdir=self.workspace, timeout=limit)
        return await self.executor.run(self.executor.resolve(request))


@pytest.fixture
async def world(tmp_path: Path, mode: SandboxMode) -> AsyncIterator[World]:
    workspace = tmp_path / "workspace"
    (workspace / ".git").mkdir(parents=True)
    (workspace / ".git" / "config").write_text("[core]\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    dsh_home = workspace / "dsh-home"
    (dsh_home / "sessions").mkdir(parents=True)
    log = dsh_home / "sessions" / "s1.jsonl"
    log.write_text(_LOG_LINE)
    user_home = tmp_path / "user-home"
    (user_home / ".ssh").mkdir(parents=True)
    (user_home / ".ssh" / "id_ed25519").write_text(_SECRET)
    (user_home / ".netrc").write_text(f"machine example.org password {_SECRET}\n")
    policy = SandboxPolicy(
        mode=mode,
        workspace=workspace,
        read_only_paths=(dsh_home,),
        denied_paths=default_denied_paths(user_home),
    )
    inner = LocalBashExecutor(LocalBashConfig(grace=0.5))
    async with SandboxExecutor(inner, policy=policy) as executor:
        yield World(mode, executor, workspace, outside, log, user_home)


@MODES
async def test_write_outside_the_workspace(world: World) -> None:
    target = world.outside / "escaped.txt"
    result = await world.run(f"echo escaped > {target}")
    if world.refused:
        assert not target.exists()
        assert result.exit_code != 0
        assert "Read-only file system" in result.stderr.text
        assert result.sandbox_denied == "workspace-write"
    else:
        assert target.read_text() == "escaped\n"
        assert result.sandbox_denied is None


@MODES
async def test_write_git_config(world: World) -> None:
    config = world.workspace / ".git" / "config"
    result = await world.run("echo '[escaped]' >> .git/config && echo x > .git/new-file")
    if world.refused:
        assert config.read_text() == "[core]\n"
        assert not (world.workspace / ".git" / "new-file").exists()
        assert result.sandbox_denied == "workspace-write"
    else:
        assert config.read_text() == "[core]\n[escaped]\n"


@MODES
async def test_write_through_a_symlink_in_the_workspace_pointing_outside(world: World) -> None:
    target = world.outside / "target.txt"
    target.write_text("original\n")
    (world.workspace / "link").symlink_to(target)
    result = await world.run("echo escaped > link")
    if world.refused:
        assert target.read_text() == "original\n"
        assert result.sandbox_denied == "workspace-write"
    else:
        assert target.read_text() == "escaped\n"


@MODES
async def test_append_to_the_sessions_own_log(world: World) -> None:
    """The DSH home (a read-only path, here inside the workspace) is readable, never writable."""
    result = await world.run(f"cat {world.log} && echo '{{\"forged\":true}}' >> {world.log}")
    assert result.stdout.text == _LOG_LINE  # readable in both modes
    if world.refused:
        assert world.log.read_text() == _LOG_LINE
        assert result.sandbox_denied == "workspace-write"
    else:
        assert world.log.read_text() == _LOG_LINE + '{"forged":true}\n'


@MODES
async def test_connect_to_a_loopback_listener_the_test_started(world: World) -> None:
    received: list[bytes] = []
    arrived = asyncio.Event()

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received.append(await reader.read())
        writer.close()
        arrived.set()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        result = await world.run(f"echo from-the-command > /dev/tcp/127.0.0.1/{port}")
        if world.refused:
            # A sentinel connection from the test: once it is accepted, any earlier connection
            # (the command's, which would have come first) has been accepted too.
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"sentinel\n")
            writer.close()
            await asyncio.wait_for(arrived.wait(), 60)
            assert received == [b"sentinel\n"]
            assert result.exit_code != 0
            assert result.sandbox_denied == "workspace-write"
        else:
            await asyncio.wait_for(arrived.wait(), 60)
            assert received == [b"from-the-command\n"]
    finally:
        server.close()
        await server.wait_closed()


@MODES
async def test_read_a_denied_path(world: World) -> None:
    result = await world.run(
        f"cat {world.user_home}/.ssh/id_ed25519; cat {world.user_home}/.netrc; ls -A "
        f"{world.user_home}/.ssh; echo ran-inside"
    )
    assert "ran-inside" in result.stdout.text  # the command ran: its reads were refused
    if world.refused:
        assert _SECRET not in result.stdout.text
        assert "id_ed25519" not in result.stdout.text
    else:
        assert result.stdout.text.count(_SECRET) == 2


@MODES
async def test_signal_the_parent_process(world: World) -> None:
    loop = asyncio.get_running_loop()
    signalled = asyncio.Event()
    sentinel = asyncio.Event()
    loop.add_signal_handler(signal.SIGUSR1, signalled.set)
    loop.add_signal_handler(signal.SIGUSR2, sentinel.set)
    try:
        result = await world.run(
            f"kill -USR1 {os.getpid()}; status=$?; echo ran-inside; exit $status"
        )
        assert "ran-inside" in result.stdout.text  # the command ran: its kill was refused
        if world.refused:
            # The command's signal, had it been sent, was delivered before its run() returned;
            # a later sentinel signal is handled after it.
            os.kill(os.getpid(), signal.SIGUSR2)
            await asyncio.wait_for(sentinel.wait(), 60)
            await asyncio.sleep(0)
            assert not signalled.is_set()
            assert result.exit_code != 0
        else:
            await asyncio.wait_for(signalled.wait(), 60)
            assert result.exit_code == 0
    finally:
        loop.remove_signal_handler(signal.SIGUSR1)
        loop.remove_signal_handler(signal.SIGUSR2)


def _digest_or_denied(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except PermissionError:
        return "denied"


_PROC_1 = (
    "for f in environ cmdline; do "
    "if d=$(sha256sum /proc/1/$f 2>/dev/null); then echo ${d%% *}; else echo denied; fi; done"
)


@MODES
async def test_read_proc_1_environ_of_the_host_init(world: World) -> None:
    """The command sees the host's pid 1 only without the sandbox.

    Only digests cross (the host init's environment is never printed); where even root may
    not read it (a VM's init), the command must see exactly that refusal under full access.
    ``/proc/1/cmdline`` (world-readable) identifies which process pid 1 is.
    """
    host = [_digest_or_denied(Path("/proc/1/environ")), _digest_or_denied(Path("/proc/1/cmdline"))]
    result = await world.run(_PROC_1)
    seen = result.stdout.text.split()
    if world.refused:
        assert seen[1] != host[1]  # pid 1 is the sandbox's own init, not the host's
        assert seen[0] == "denied" or seen[0] != host[0]
    else:
        assert seen == host


def _processes_with(token: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if token.encode() in cmdline:
                found.append(int(entry))
    return found


async def _eventually(predicate: object, what: str) -> None:
    assert callable(predicate)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"{what} did not happen within 60 s")
        await asyncio.sleep(0.02)


@pytest.mark.parametrize(
    "mode",
    [
        "workspace-write",
        pytest.param(
            "danger-full-access",
            marks=pytest.mark.xfail(
                strict=True,
                reason="the local executor's known limit (dsh-bash-local README): a setsid "
                "double fork whose parent exited before the timeout is reparented and cannot "
                "be told from other processes; only the sandbox's PID namespace finds it",
            ),
        ),
    ],
)
async def test_a_setsid_double_forked_grandchild_after_a_timeout(world: World) -> None:
    """Gone after the timeout in both modes: the seam says a timeout leaves nothing behind.

    Under ``danger-full-access`` that is the local executor's job, not the sandbox's; it is a
    strict xfail there (the local executor cannot find it), so the day it can, this fails and
    the mark goes.
    """
    token = f"dsh-escape-{uuid.uuid4().hex}"
    command = f"(setsid bash -c 'exec -a {token} sleep 600' &); sleep 600"
    task = asyncio.ensure_future(world.run(command, limit=10))  # room to start on a busy host
    try:
        await _eventually(lambda: bool(_processes_with(token)), "the grandchild running")
        result = await task
        assert result.timed_out
        await _eventually(lambda: not _processes_with(token), "the grandchild's death")
    finally:
        for pid in _processes_with(token):
            os.kill(pid, signal.SIGKILL)


@MODES
async def test_an_ambient_dsh_value_of_the_harness_reaches_the_command(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Refused in both modes: the scrub of inherited ``DSH_*`` is the seam's rule, not the
    sandbox's, so the local executor applies it under ``danger-full-access`` too."""
    monkeypatch.setenv("DSH_ESCAPE_PROBE", "ambient")
    monkeypatch.setenv("dsh_escape_probe_lower", "ambient")
    result = await world.run(
        'printf "%s %s" "${DSH_ESCAPE_PROBE-absent}" "${dsh_escape_probe_lower-absent}"'
    )
    assert result.stdout.text == "absent absent"


async def _run_in(executor: SandboxExecutor, workdir: Path, command: str) -> ShellRunResult:
    return await executor.run(executor.resolve(ShellExecRequest(command, workdir=workdir)))


@MODES
async def test_move_a_denied_paths_parent_away_then_read_it_in_a_later_command(
    tmp_path: Path, mode: SandboxMode
) -> None:
    """With the home as the workspace, ``~/.config`` is writable but ``~/.config/gh`` denied:
    renaming ``~/.config`` would carry the hidden directory to a name no rule lists. The
    directories between a writable root and a guarded path are mount points, so it fails."""
    home = tmp_path / "home"
    (home / ".config" / "gh").mkdir(parents=True)
    (home / ".config" / "gh" / "hosts.yml").write_text(_SECRET)
    policy = SandboxPolicy(mode=mode, workspace=home, denied_paths=default_denied_paths(home))
    async with SandboxExecutor(LocalBashExecutor(), policy=policy) as executor:
        await _run_in(executor, home, "mv .config .moved")
        second = await _run_in(executor, home, "cat .moved/gh/hosts.yml .config/gh/hosts.yml")
    if mode == "danger-full-access":
        assert (home / ".moved" / "gh" / "hosts.yml").exists()
        assert second.stdout.text == _SECRET
    else:
        assert (home / ".config" / "gh" / "hosts.yml").read_text() == _SECRET
        assert not (home / ".moved").exists()
        assert _SECRET not in second.stdout.text


@MODES
async def test_plant_a_symlink_where_a_nested_writable_root_will_be(
    tmp_path: Path, mode: SandboxMode
) -> None:
    """A configured root inside the workspace that does not exist yet: a command makes it a
    symlink to a directory outside; the next command writes through it. The nested root is
    writable through the workspace and never mounted on its own, so the symlink is not
    followed to a writable mount."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    policy = SandboxPolicy(mode=mode, workspace=workspace, writable_roots=(workspace / "cache",))
    async with SandboxExecutor(LocalBashExecutor(), policy=policy) as executor:
        planted = await _run_in(executor, workspace, f"ln -s {outside} cache")
        assert planted.exit_code == 0
        written = await _run_in(executor, workspace, "echo escaped > cache/file")
    if mode == "danger-full-access":
        assert (outside / "file").read_text() == "escaped\n"
    else:
        assert not (outside / "file").exists()
        assert written.sandbox_denied == "workspace-write"


@MODES
async def test_connect_to_a_host_unix_socket(world: World) -> None:
    """A read-only mount does not stop connect() on a socket file (an ssh-agent, Docker's
    socket); the sandbox's seccomp filter refuses AF_UNIX sockets instead."""
    received: list[bytes] = []
    arrived = asyncio.Event()

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received.append(await reader.read())
        writer.close()
        arrived.set()

    path = world.outside / "agent.sock"
    server = await asyncio.start_unix_server(accept, path)
    script = (
        "import socket; s = socket.socket(socket.AF_UNIX); "
        f"s.connect({str(path)!r}); s.sendall(b'from-the-command')"
    )
    try:
        result = await world.run(f"{sys.executable} -c {shlex.quote(script)}")
        if world.refused:
            _, writer = await asyncio.open_unix_connection(path)
            writer.write(b"sentinel")
            writer.close()
            await asyncio.wait_for(arrived.wait(), 60)
            assert received == [b"sentinel"]
            assert result.exit_code != 0
            assert result.sandbox_denied == "workspace-write"
        else:
            await asyncio.wait_for(arrived.wait(), 60)
            assert received == [b"from-the-command"]
    finally:
        server.close()
        await server.wait_closed()


def _io_uring_enabled() -> bool:
    """Whether this kernel lets an unconfined process create an io_uring at all."""
    try:
        return Path("/proc/sys/kernel/io_uring_disabled").read_text().strip() == "0"
    except OSError:
        return True  # older kernels have no switch: io_uring is on


@MODES
async def test_open_an_io_uring_which_could_connect_sockets_without_socket(world: World) -> None:
    """io_uring can open and connect an AF_UNIX socket (IORING_OP_SOCKET/CONNECT) without the
    socket syscall the filter watches, so confined commands get EPERM from io_uring_setup."""
    script = (
        "import ctypes, sys; libc = ctypes.CDLL(None, use_errno=True); "
        "params = ctypes.create_string_buffer(120); "
        "fd = libc.syscall(425, 8, params); "
        "print('ran-inside', fd, ctypes.get_errno())"
    )
    result = await world.run(f"{sys.executable} -c {shlex.quote(script)}")
    words = result.stdout.text.split()
    assert words[0] == "ran-inside", result.stderr.text
    fd, errno_value = int(words[1]), int(words[2])
    if world.refused:
        assert (fd, errno_value) == (-1, 1)  # EPERM from the filter
    elif _io_uring_enabled():
        assert fd >= 0  # unconfined, the kernel hands out a ring
    else:
        assert errno_value != 0  # the host itself refuses io_uring: nothing to compare


@MODES
async def test_write_a_nested_repositorys_git_config(world: World) -> None:
    """A nested repository's ``.git`` (below the workspace) is protected like the top one: a
    planted hook there would run unconfined the next time the user runs git in it."""
    nested = world.workspace / "vendor" / "lib" / ".git"
    nested.mkdir(parents=True)
    (nested / "config").write_text("[core]\n")
    result = await world.run("echo '[core] fsmonitor = evil' >> vendor/lib/.git/config")
    if world.refused:
        assert (nested / "config").read_text() == "[core]\n"
        assert "Read-only file system" in result.stderr.text
    else:
        assert "fsmonitor" in (nested / "config").read_text()
