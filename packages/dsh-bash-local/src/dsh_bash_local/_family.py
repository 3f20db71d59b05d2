"""A command's whole family on Linux: its group, its session, and descendants that left both.

``set -m; sleep &`` moves a child to its own process group and ``setsid sleep &`` to its own
session, so killing the command's group misses them. `Family` finds them through ``/proc``: every
process of the command's group or session, every descendant of those, and every process found
earlier that is still the same process (pid and start time), with its descendants. A process
whose parent died before it was found (a double-forked daemon that also called ``setsid``) has
been reparented to init and cannot be told apart from any other: only a PID namespace (the
sandbox executor) catches it. Without ``/proc`` a family is just its group.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

_PROC = Path("/proc")
_FREEZE_ROUNDS = 100


@dataclass(frozen=True, slots=True)
class _Stat:
    ppid: int
    pgrp: int
    session: int
    start: int
    live: bool


def _read_stat(pid: str) -> _Stat | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat_file:
            raw = stat_file.read()
    except OSError:
        return None
    # Fields after the command name, from the 3rd: state ppid pgrp session ... starttime (22nd).
    fields = raw[raw.rfind(b")") + 2 :].split()
    if len(fields) < 20:
        return None
    return _Stat(
        ppid=int(fields[1]),
        pgrp=int(fields[2]),
        session=int(fields[3]),
        start=int(fields[19]),
        live=fields[0] not in (b"Z", b"X"),
    )


def _process_table() -> dict[int, _Stat]:
    table: dict[int, _Stat] = {}
    try:
        entries = os.scandir(_PROC)
    except OSError:
        return table
    with entries:
        for entry in entries:
            if entry.name.isdigit():
                stat = _read_stat(entry.name)
                if stat is not None:
                    table[int(entry.name)] = stat
    return table


class Family:
    """The live processes of the command whose shell leads group (and session) ``pgid``.

    `scan` refreshes the membership and remembers every member found (pid and start time), so a
    member whose parent dies later is still found, and a recycled pid is never mistaken for it.
    """

    def __init__(self, pgid: int) -> None:
        self.pgid = pgid
        self._known: dict[int, int] = {}
        self._outside: set[int] = set()

    def scan(self) -> set[int]:
        """The live members now: the group, the session, known members, and their descendants."""
        table = _process_table()
        children: defaultdict[int, list[int]] = defaultdict(list)
        for pid, stat in table.items():
            children[stat.ppid].append(pid)
        roots = [
            pid
            for pid, stat in table.items()
            if stat.pgrp == self.pgid
            or stat.session == self.pgid
            or self._known.get(pid) == stat.start
        ]
        found: set[int] = set()
        while roots:
            pid = roots.pop()
            if pid not in found:
                found.add(pid)
                roots.extend(children.get(pid, ()))
        found -= {1, os.getpid()}  # never init, never the executor itself
        live = {pid for pid in found if table[pid].live}
        self._known.update((pid, table[pid].start) for pid in live)
        self._outside |= {pid for pid in live if table[pid].pgrp != self.pgid}
        return live

    def signal(self, signum: int, pids: set[int] | None = None) -> set[int]:
        """Send ``signum`` to the group and to each member outside it (``pids``, else a scan).

        Each process gets the signal once: members of the group only through the group.
        """
        members = self.scan() if pids is None else pids
        signal_group(self.pgid, signum)
        for pid in members & self._outside:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signum)
        return members

    def kill(self) -> set[int]:
        """Freeze every member (SIGSTOP, until a scan finds no new one), then SIGKILL them all.

        A stopped process cannot fork, so no member escapes between the scan and the kill.
        Returns the members that were sent SIGKILL.
        """
        stopped: set[int] = set()
        for _ in range(_FREEZE_ROUNDS):
            fresh = self.scan() - stopped
            if not fresh:
                break
            stopped |= self.signal(signal.SIGSTOP, fresh)
        self.signal(signal.SIGKILL, stopped | self.scan())
        return stopped


def signal_group(pgid: int, signum: int) -> bool:
    """Send ``signum`` to the group; False when it no longer exists."""
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        return False
    return True
