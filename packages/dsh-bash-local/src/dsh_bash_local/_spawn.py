"""Spawning a child the fastest safe way this host allows."""

from __future__ import annotations

from pathlib import Path

from dsh_bash_local import _fd_child
from dsh_bash_local._child import Child, spawn_transport_child
from dsh_bash_local._collector import OutputCollector


async def spawn(
    shell: str,
    command: str,
    *,
    workdir: Path,
    env: dict[str, str],
    stdin: str | bytes | None,
    stdout: OutputCollector,
    stderr: OutputCollector,
    drain_bound: float,
) -> tuple[Child, bool]:
    """Start ``shell -c command``; the flag tells whether the caller was cancelled meanwhile.

    With pidfds (Linux) the spawn is synchronous, so it cannot be interrupted; otherwise the
    loop's subprocess transport is used with the cancellation held until the spawn is done.
    """
    if _fd_child.PIDFD_AVAILABLE:
        child = _fd_child.spawn_fd_child(
            shell,
            command,
            workdir=workdir,
            env=env,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            drain_bound=drain_bound,
        )
        return child, False
    return await spawn_transport_child(
        shell,
        command,
        workdir=workdir,
        env=env,
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        drain_bound=drain_bound,
    )
