"""Reading a search child's output (ripgrep, or the search worker): bounded, and the child
killed and reaped on any exception, a cancellation included."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

__all__ = ["collect_output"]


async def collect_output(
    process: asyncio.subprocess.Process,
    *,
    limit: int,
    overflow: Callable[[], BaseException],
    stderr_kept: int,
    stdin: bytes | None = None,
) -> tuple[bytes, bytes, int]:
    """Write ``stdin`` (when given) to ``process``, then read its stdout, the head of its stderr
    (``stderr_kept`` bytes) and its exit status. A stdout past ``limit`` raises ``overflow()``;
    whatever is raised kills the process and waits for it first. ``process`` must have been
    started with piped stdout and stderr (and stdin, for ``stdin``)."""
    assert process.stdout is not None
    assert process.stderr is not None
    errors = asyncio.ensure_future(_head(process.stderr, stderr_kept))
    try:
        if stdin is not None:
            assert process.stdin is not None
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                process.stdin.write(stdin)
                await process.stdin.drain()
                process.stdin.close()
        answer = bytearray()
        while chunk := await process.stdout.read(1 << 16):
            answer += chunk
            if len(answer) > limit:
                raise overflow()
        status = await process.wait()
        stderr = await errors
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        with contextlib.suppress(BaseException):
            await process.wait()
        errors.cancel()
        raise
    return bytes(answer), stderr, status


async def _head(stream: asyncio.StreamReader, kept: int) -> bytes:
    """The first ``kept`` bytes of ``stream``, read to its end (so the child never blocks)."""
    head = bytearray()
    while chunk := await stream.read(1 << 16):
        if len(head) < kept:
            head += chunk[: kept - len(head)]
    return bytes(head)
