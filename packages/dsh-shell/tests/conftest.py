"""A deliberately broken executor, for proving the contract suite catches what it claims to.

It inherits the whole parent environment (stale ``DSH_*`` and credential names leak), kills only
the shell on timeout (the group survives), and lets the cancellation of the awaiting task
escape instead of killing the group and reporting ``aborted``. Everything else is ordinary.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from collections.abc import Callable

import pytest
from hypothesis import settings

from dsh_shell import (
    TERMINAL_DEFAULTS,
    CollectedOutput,
    ShellExecRequest,
    ShellExecSpec,
    ShellProcess,
    ShellRunResult,
    resolve_request,
)
from dsh_shell.testing import ExecutorFixture

# Properties must not fail on a slow or loaded machine: no per-example deadline.
settings.register_profile("dsh", deadline=None)
settings.load_profile("dsh")


class _Collect(asyncio.SubprocessProtocol):
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.out = bytearray()
        self.err = bytearray()
        self.exited: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        (self.out if fd == 1 else self.err).extend(data)

    def process_exited(self) -> None:
        self.exited.set_result(None)


class LeakyExecutor:
    """Looks like an executor; leaks the parent environment and kills only the shell."""

    def resolve(self, request: ShellExecRequest) -> ShellExecSpec:
        return resolve_request(
            request,
            default_workdir=None,
            default_timeout=60,
            max_timeout=600,
            default_stdout_max_bytes=10_000_000,
        )

    async def run(self, spec: ShellExecSpec) -> ShellRunResult:
        loop = asyncio.get_running_loop()
        protocol = _Collect(loop)
        env = {**os.environ, **TERMINAL_DEFAULTS, **(spec.env or {}), **(spec.dsh_env or {})}
        stdin = spec.stdin.encode() if isinstance(spec.stdin, str) else spec.stdin
        transport, _ = await loop.subprocess_exec(
            lambda: protocol,
            "bash",
            "-c",
            spec.command,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=spec.workdir,
            env=env,
        )
        if stdin is not None:
            pipe = transport.get_pipe_transport(0)
            assert isinstance(pipe, asyncio.WriteTransport)
            pipe.write(stdin)
            pipe.close()
        timed_out = False
        try:
            await asyncio.wait_for(asyncio.shield(protocol.exited), spec.timeout)
            await asyncio.sleep(0.05)  # naive: hope the pipes are drained by now
        except TimeoutError:
            timed_out = True
            transport.kill()  # the shell only; its children live on
            await protocol.exited
        except asyncio.CancelledError:
            transport.kill()  # the shell only, and the cancellation escapes: no aborted result
            await asyncio.shield(protocol.exited)
            raise
        finally:
            transport.close()
        code = transport.get_returncode()
        assert code is not None
        return ShellRunResult(
            exit_code=code if code >= 0 else None,
            signal=signal.Signals(-code).name if code < 0 else None,
            timed_out=timed_out,
            aborted=False,
            timeout=spec.timeout,
            stdout=CollectedOutput(protocol.out.decode(errors="replace")),
            stderr=CollectedOutput(protocol.err.decode(errors="replace")),
            duration=0.0,
        )

    def start(self, spec: ShellExecSpec) -> ShellProcess:
        raise NotImplementedError("the leaky executor has no background support")


@pytest.fixture
def leaky_fixture() -> Callable[[], ExecutorFixture]:
    """A factory of fixtures for the leaky executor (it claims local processes, host pids)."""
    claims = frozenset({"local_processes", "host_pids"})
    return lambda: ExecutorFixture(capabilities=claims, make=LeakyExecutor)
