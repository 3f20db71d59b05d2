"""Terminating a command: SIGTERM its whole family, wait out the grace, SIGKILL what is left.

The family (`dsh_bash_local._family.Family`) is the command's process group plus, on Linux,
its session and every descendant that left them; it is scanned before the first signal, while
the shell is still alive to be walked from.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from dsh_bash_local._family import Family, signal_group

_PROC_AVAILABLE = Path("/proc/self/stat").exists()
_POLL_FIRST = 0.01
_POLL_MAX = 0.1
_KILL_ROUNDS = 50

__all__ = ["group_alive", "kill_group_now", "signal_group", "terminate_group"]


def group_alive(pgid: int) -> bool:
    """Whether process group ``pgid`` still has a live member (zombies do not count on Linux)."""
    return _alive(Family(pgid))


def _alive(family: Family) -> bool:
    if _PROC_AVAILABLE:
        return bool(family.scan())
    try:
        os.killpg(family.pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def terminate_group(pgid: int, grace: float) -> None:
    """SIGTERM the family, wait up to ``grace`` seconds for it to die, then SIGKILL the rest.

    SIGKILL is repeated (each time freezing the family first, so nothing forks away) until no
    member is left, within a bounded number of rounds. Cancelling this coroutine SIGKILLs the
    family at once before propagating.
    """
    family = Family(pgid)
    members = family.scan()  # before any signal: the shell is still there to walk from
    if not members and not _alive(family):
        return
    family.signal(signal.SIGTERM, members)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace
    delay = _POLL_FIRST
    try:
        while _alive(family):
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            await asyncio.sleep(min(delay, remaining))
            delay = min(delay * 2, _POLL_MAX)
        await _kill_until_gone(family)
    except asyncio.CancelledError:
        family.kill()
        raise


async def _kill_until_gone(family: Family) -> None:
    delay = _POLL_FIRST
    for _ in range(_KILL_ROUNDS):
        if not _alive(family):
            return
        family.kill()
        await asyncio.sleep(delay)
        delay = min(delay * 2, _POLL_MAX)


def kill_group_now(pgid: int) -> None:
    """SIGKILL the family at once if anything of it is left (host exit, second cancellation)."""
    Family(pgid).kill()
