"""Process groups: is one still alive, signal it, terminate it (TERM, grace, KILL)."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

_PROC = Path("/proc")
_POLL_FIRST = 0.01
_POLL_MAX = 0.1


def _live_member_in_proc(pgid: int) -> bool:
    """Whether /proc shows a process of group ``pgid`` that is not a zombie."""
    with os.scandir(_PROC) as entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as stat_file:
                    stat = stat_file.read()
            except OSError:
                continue
            fields = stat[stat.rfind(b")") + 2 :].split()
            if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
                return True
    return False


def group_alive(pgid: int) -> bool:
    """Whether process group ``pgid`` still has a live member (zombies do not count on Linux)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if not _PROC.is_dir():
        return True
    return _live_member_in_proc(pgid)


def signal_group(pgid: int, signum: int) -> bool:
    """Send ``signum`` to the group; False when it no longer exists."""
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        return False
    return True


async def terminate_group(pgid: int, grace: float) -> None:
    """SIGTERM the group, wait up to ``grace`` seconds for it to die, then SIGKILL it.

    Returns once the group is gone or SIGKILL was sent. Cancelling this coroutine sends
    SIGKILL at once before propagating.
    """
    if not signal_group(pgid, signal.SIGTERM):
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace
    delay = _POLL_FIRST
    try:
        while group_alive(pgid):
            remaining = deadline - loop.time()
            if remaining <= 0:
                signal_group(pgid, signal.SIGKILL)
                return
            await asyncio.sleep(min(delay, remaining))
            delay = min(delay * 2, _POLL_MAX)
    except asyncio.CancelledError:
        signal_group(pgid, signal.SIGKILL)
        raise


def kill_group_now(pgid: int) -> None:
    """SIGKILL the group if it still exists (host exit, second cancellation)."""
    signal_group(pgid, signal.SIGKILL)
