"""Status rows of sessions: the stored ones (``cold``) merged with the live agents
(``running``, ``idle``; live wins), most recently updated first, and a session's events."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from dsh_agent_core._status import SessionStatusRow, iso_time
from dsh_agent_core._titles import title_of_events
from dsh_agent_loop import LoopAgent
from dsh_persistence import SessionPersistence, SessionSnapshot
from dsh_session import SessionEvent, SessionHeader

__all__ = ["SessionRows", "live_row"]


def _updated(agent: LoopAgent) -> int:
    """When ``agent``'s session last changed (its last event, else its creation), epoch ms."""
    events = agent.session.events
    return events[-1].time if len(events) else agent.session.header.created_at


def live_row(agent: LoopAgent, snapshot: SessionSnapshot | None) -> SessionStatusRow:
    """The row of a live agent (``snapshot``: its stored state, for the log's path)."""
    return SessionStatusRow(
        session_id=agent.id,
        status="running" if agent.status == "running" else "idle",
        title=agent.session.title,
        updated_at=iso_time(_updated(agent)),
        session_path=snapshot.plain_path if snapshot is not None else None,
    )


class SessionRows:
    """The sessions of ``persistence`` and the live agents ``get`` and ``live`` give."""

    def __init__(
        self,
        persistence: SessionPersistence,
        get: Callable[[str], LoopAgent | None],
        live: Callable[[], list[LoopAgent]],
    ) -> None:
        self._persistence = persistence
        self._get = get
        self._live = live

    async def sessions(self) -> list[SessionSnapshot]:
        """Every stored session, most recently updated first."""
        snapshots = await self._persistence.list()
        return sorted(snapshots, key=lambda s: (s.updated_at or 0, s.id), reverse=True)

    async def events(self, session_id: str) -> list[SessionEvent] | None:
        """The events of ``session_id``: the live agent's, else the stored log's (``None`` when
        neither exists)."""
        agent = self._get(session_id)
        if agent is not None:
            return list(agent.session.events)
        if await self._persistence.stat(session_id) is None:
            return None
        async with await self._persistence.open(session_id, "read") as handle:
            return list(await handle.read(0))

    async def header(self, session_id: str) -> SessionHeader | None:
        """The header of ``session_id``, live or stored (``None`` when neither)."""
        live = self._get(session_id)
        if live is not None:
            return live.session.header
        snapshot = await self._persistence.stat(session_id)
        return snapshot.header if snapshot is not None else None

    async def _title(self, session_id: str) -> str | None:
        with contextlib.suppress(Exception):  # an unreadable log has no title; verify says why
            async with await self._persistence.open(session_id, "read") as handle:
                return title_of_events(await handle.read(0))
        return None

    async def _cold_row(self, snapshot: SessionSnapshot) -> SessionStatusRow:
        """The row of a stored session no live agent holds."""
        return SessionStatusRow(
            session_id=snapshot.id,
            status="cold",
            title=await self._title(snapshot.id),
            updated_at=iso_time(snapshot.updated_at),
            session_path=snapshot.plain_path,
        )

    async def status_of(self, session_id: str) -> SessionStatusRow:
        """The row of one session (``missing`` when neither live nor stored)."""
        snapshot = await self._persistence.stat(session_id)
        agent = self._get(session_id)
        if agent is not None:
            return live_row(agent, snapshot)
        if snapshot is None:
            return SessionStatusRow(session_id=session_id, status="missing")
        return await self._cold_row(snapshot)

    async def status(self, recent_n: int) -> list[SessionStatusRow]:
        """The ``recent_n`` most recently updated sessions, live ones merged in (live wins)."""
        snapshots = {s.id: s for s in await self.sessions()}
        rows: dict[str, tuple[int, bool, SessionStatusRow | None]] = {}
        for snapshot in snapshots.values():
            rows[snapshot.id] = (snapshot.updated_at or 0, False, None)
        for agent in self._live():
            rows[agent.id] = (_updated(agent), True, live_row(agent, snapshots.get(agent.id)))
        # most recent first; in the same millisecond a live agent comes before a stored one
        chosen = sorted(rows.items(), key=lambda item: (*item[1][:2], item[0]), reverse=True)
        result: list[SessionStatusRow] = []
        for session_id, (_, _, found) in chosen[:recent_n]:
            result.append(
                found if found is not None else await self._cold_row(snapshots[session_id])
            )
        return result
