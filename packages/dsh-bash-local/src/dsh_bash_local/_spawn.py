"""Spawning a child the fastest safe way this host allows."""

from __future__ import annotations

from dsh_bash_local import _fd_child
from dsh_bash_local._child import Child, Launch
from dsh_bash_local._transport_child import spawn_transport_child


async def spawn(launch: Launch) -> tuple[Child, bool]:
    """Start ``launch``; the flag tells whether the caller was cancelled meanwhile.

    With pidfds (Linux) the spawn is synchronous, so it cannot be interrupted; otherwise the
    loop's subprocess transport is used with the cancellation held until the spawn is done.
    """
    if _fd_child.PIDFD_AVAILABLE:
        return _fd_child.spawn_fd_child(launch), False
    return await spawn_transport_child(launch)
