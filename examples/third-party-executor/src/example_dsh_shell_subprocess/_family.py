"""A command's process family, found through ``/proc``, and how it is terminated.

Each command starts as the leader of a new session (``start_new_session=True``), so its shell's
pid is also its session id and process-group id. Its family is every process still in that
session (the group, other groups made by ``set -m``, orphans re-parented to init) plus every
descendant of those, followed by parent pid (which also finds a ``setsid`` child in a session of
its own while its parent lives). A process is remembered by its pid *and* its start time, so
one that died meanwhile is never confused with a stranger the kernel gave its pid. The session
id itself cannot be reused while any process is still in the session.

Without ``/proc`` (not Linux) only the process group is signalled.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

Family = dict[int, int]
"""Pid → start time (clock ticks since boot) of each process of a family."""


@dataclass(frozen=True, slots=True)
class _Stat:
    parent: int
    session: int
    start: int
    zombie: bool


def _stat(pid: int) -> _Stat | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
        # "pid (comm) state ppid pgrp session ... starttime ...": comm may hold spaces and ")".
        fields = raw[raw.rfind(b")") + 2 :].split()
        return _Stat(
            parent=int(fields[1]),
            session=int(fields[3]),
            start=int(fields[19]),
            zombie=fields[0] in (b"Z", b"X"),
        )
    except (OSError, IndexError, ValueError):  # gone meanwhile, or not a Linux /proc
        return None


def _process_table() -> dict[int, _Stat]:
    table: dict[int, _Stat] = {}
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if name.isdigit():
                stat = _stat(int(name))
                if stat is not None:
                    table[int(name)] = stat
    return table


def find_family(leader: int, *, leader_running: bool) -> Family:
    """The live processes of the session ``leader`` started, and all their descendants.

    The leader's own pid counts only while it is ``leader_running`` (not yet reaped): after
    that the number may belong to a stranger.
    """
    table = _process_table()
    children: dict[int, list[int]] = {}
    for pid, stat in table.items():
        children.setdefault(stat.parent, []).append(pid)
    pending = [
        pid
        for pid, stat in table.items()
        if stat.session == leader or (leader_running and pid == leader)
    ]
    found: set[int] = set()
    while pending:
        pid = pending.pop()
        if pid not in found:
            found.add(pid)
            pending.extend(children.get(pid, ()))
    return {pid: table[pid].start for pid in found if not table[pid].zombie}


def living(family: Family) -> Family:
    """The members of ``family`` that are still the same, live (non-zombie) processes."""
    alive: Family = {}
    for pid, start in family.items():
        stat = _stat(pid)
        if stat is not None and stat.start == start and not stat.zombie:
            alive[pid] = start
    return alive


def _signal(family: Family, leader: int, leader_running: bool, number: signal.Signals) -> None:
    if leader_running:  # the group id is ours for sure while the leader is not reaped
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(leader, number)
    for pid in living(family):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, number)


async def terminate_family(leader: int, grace: float, leader_running: Callable[[], bool]) -> None:
    """SIGTERM the whole family, wait up to ``grace`` seconds, then SIGKILL what is left.

    The family is remembered from the first look, so a descendant whose parent died of the
    SIGTERM (and so lost its link to the tree) still gets the SIGKILL; each SIGKILL round looks
    again for processes forked meanwhile, until none is left.
    """
    family = find_family(leader, leader_running=leader_running())
    _signal(family, leader, leader_running(), signal.SIGTERM)
    # No event says that a process which is not our child died, so look every 20 ms.
    for _ in range(max(1, round(grace / 0.02))):
        if not living(family) and not leader_running():
            break
        await asyncio.sleep(0.02)
    for _ in range(50):
        family.update(find_family(leader, leader_running=leader_running()))
        if not living(family) and not leader_running():
            return
        _signal(family, leader, leader_running(), signal.SIGKILL)
        await asyncio.sleep(0.01)
