"""The parent side of the cross-process clauses: a child process holding or probing a session."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from typing import Any

from dsh_persistence.testing._child import MARK
from dsh_persistence.testing._expect import ContractViolation
from dsh_persistence.testing._fixture import PersistenceFixture


class ChildSession:
    """A child process running ``dsh_persistence.testing._child`` against the fixture's storage."""

    def __init__(self, process: asyncio.subprocess.Process, stderr: Any) -> None:
        self._process = process
        self._stderr = stderr
        self._finished = False

    @classmethod
    async def start(cls, fixture: PersistenceFixture, op: str, session_id: str) -> ChildSession:
        """Spawn the child and send it ``op`` on ``session_id``."""
        request = {
            "factory": fixture.child_factory,
            "args": fixture.child_args,
            "session_id": session_id,
            "op": op,
        }
        env = dict(os.environ)
        # The child sees the modules this process sees (a factory may live beside the tests).
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in finish()
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "dsh_persistence.testing._child",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env=env,
        )
        child = cls(process, stderr)
        assert process.stdin is not None
        process.stdin.write(json.dumps(request).encode() + b"\n")
        await process.stdin.drain()
        return child

    @property
    def pid(self) -> int:
        """The child's process id."""
        return self._process.pid

    def _stderr_text(self) -> str:
        if self._stderr.closed:
            return "(stderr no longer available)"
        self._stderr.seek(0)
        text: str = self._stderr.read().decode("utf-8", "replace")
        return text[-4000:]

    async def report(self) -> dict[str, Any]:
        """The child's next report (fails the clause when the child dies first)."""
        assert self._process.stdout is not None
        while True:
            raw = await self._process.stdout.readline()
            if not raw:
                await self._process.wait()
                raise ContractViolation(
                    f"the child process exited ({self._process.returncode}) without reporting; "
                    f"its stderr:\n{self._stderr_text()}"
                )
            line = raw.decode("utf-8", "replace")
            if line.startswith(MARK):
                report: dict[str, Any] = json.loads(line[len(MARK) :])
                return report

    async def expect_report(self, status: str, what: str) -> dict[str, Any]:
        """The next report, which must have ``status``."""
        report = await self.report()
        if report.get("status") != status:
            raise ContractViolation(f"{what}: the child reported {report}, expected {status!r}")
        return report

    async def release(self) -> None:
        """Ask a ``hold-write`` child to close and exit; wait for it."""
        assert self._process.stdin is not None
        self._process.stdin.write(b"release\n")
        await self._process.stdin.drain()
        await self.expect_report("released", "releasing the child's write handle")
        await self.finish()
        if self._process.returncode != 0:
            raise ContractViolation(
                f"the child exited with {self._process.returncode}:\n{self._stderr_text()}"
            )

    async def kill(self) -> None:
        """SIGKILL the child (no cleanup of any kind runs in it) and wait for it."""
        if self._process.returncode is None:
            self._process.kill()
        await self.finish()

    async def finish(self) -> None:
        """Wait for the child to exit (killing it if it is still running after stdin closes)."""
        if self._finished:
            return
        self._finished = True
        try:
            if self._process.stdin is not None and not self._process.stdin.is_closing():
                self._process.stdin.close()
            try:
                async with asyncio.timeout(60):
                    await self._process.communicate()
            except TimeoutError:
                self._process.kill()
                await self._process.communicate()
        finally:
            self._stderr.close()
