"""The portable spawn path: a child run through the loop's subprocess transport."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess

from dsh_bash_local._child import SPAWN_FAILURES, Child, Launch
from dsh_bash_local._collector import OutputCollector
from dsh_bash_local._settle import Settlement


class _ChildProtocol(asyncio.SubprocessProtocol):
    def __init__(self, settlement: Settlement, stdout: OutputCollector, stderr: OutputCollector):
        self._settlement = settlement
        self._collectors = {1: stdout, 2: stderr}

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self._collectors[fd].feed(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self._settlement.stream_closed(fd)

    def process_exited(self) -> None:
        self._settlement.process_exited()


class TransportChild(Child):
    """A child run through ``loop.subprocess_exec`` (portable; the loop's child watcher)."""

    def __init__(
        self, transport: asyncio.SubprocessTransport, settlement: Settlement, launch: Launch
    ) -> None:
        pid = transport.get_pid()
        assert pid is not None
        super().__init__(pid, settlement, launch)
        self._transport = transport

    def _returncode(self) -> int | None:
        return self._transport.get_returncode()

    def _stop_reading(self) -> None:
        self._transport.close()


async def _spawn(launch: Launch) -> TransportChild:
    loop = asyncio.get_running_loop()
    settlement = Settlement(loop, {1, 2}, launch.grace)
    try:
        transport, _ = await loop.subprocess_exec(
            lambda: _ChildProtocol(settlement, launch.stdout, launch.stderr),
            *launch.argv,
            stdin=subprocess.PIPE if launch.stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=launch.workdir,
            env=launch.env,
            start_new_session=True,
        )
    except SPAWN_FAILURES as error:
        raise launch.spawn_error(error) from error
    child = TransportChild(transport, settlement, launch)
    if launch.stdin is not None:
        pipe = transport.get_pipe_transport(0)
        assert isinstance(pipe, asyncio.WriteTransport)
        with contextlib.suppress(OSError):
            if launch.stdin:
                pipe.write(launch.stdin)
            pipe.close()
    return child


async def spawn_transport_child(launch: Launch) -> tuple[Child, bool]:
    """Spawn through the loop's transport; a cancellation during the spawn is held.

    The spawn runs in its own task, so a cancellation that arrives meanwhile cannot leave a
    half-started child: the caller always gets it (and can terminate its group); the second
    value tells whether the caller was cancelled meanwhile.
    """
    spawning = asyncio.ensure_future(_spawn(launch))
    try:
        return await asyncio.shield(spawning), False
    except asyncio.CancelledError:
        while not spawning.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(spawning)
        if spawning.cancelled():
            raise
        return spawning.result(), True
