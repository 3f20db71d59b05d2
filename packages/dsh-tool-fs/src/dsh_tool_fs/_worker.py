"""The search worker: one child process per ``glob``/``grep`` runs its Python work
(`dsh_tool_fs._engine.run_request`), so a search that outlives its time budget, or whose call
is cancelled, is stopped by killing that process. The harness's own interpreter never runs a
regular expression of the model's or an ignore line of the workspace's, so its event loop and
signal handlers keep running whatever the pattern.

The child is ``python -I`` (no current directory, ``PYTHONPATH`` or user site on its path)
with the parent's absolute ``sys.path``; it loads only the light modules of this package (not
its ``__init__``, nor asyncio), reads one pickled request on stdin and writes one pickled
answer on stdout (`dsh_tool_fs._worker_child.serve`).
It arms ``SIGALRM`` at start, so even a worker whose parent died ends soon after its budget.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import pickle
import sys
from typing import Any

from dsh_tool_fs._child_output import collect_output
from dsh_tool_fs._engine import (
    RAW_OUTPUT_LIMIT,
    EngineError,
    GlobRequest,
    GrepRequest,
    Hit,
)

__all__ = ["run_in_worker"]

_ANSWER_LIMIT = 4 * RAW_OUTPUT_LIMIT
"""Bytes of a worker's pickled answer read at most (its raw results are bounded already)."""
_STDERR_KEPT = 16 * 1024
_ALARM_GRACE = 5
"""Seconds past its budget after which a worker ends itself, should nobody kill it."""

_PACKAGE = os.path.dirname(os.path.abspath(__file__))
"""The folder of this package, the worker's ``dsh_tool_fs``."""

_BOOT = """\
import json, signal, sys, types
signal.alarm(int(sys.argv[3]))
sys.path[:] = json.loads(sys.argv[2])
package = types.ModuleType("dsh_tool_fs")
package.__path__ = [sys.argv[1]]
sys.modules["dsh_tool_fs"] = package
from dsh_tool_fs._worker_child import serve
serve()
"""
"""The child's program: the package as a bare namespace (its ``__init__`` imports pydantic and
the tool registry, which a worker does not need), then the worker's side."""


async def run_in_worker(request: GlobRequest | GrepRequest, budget: float) -> list[str] | list[Hit]:
    """``request`` run by a new worker process; the worker is killed (and reaped) when the
    caller is cancelled, a timeout included. Raises `EngineError` for the search's own errors
    and for a worker that failed."""
    path = [entry for entry in sys.path if entry.startswith("/")]
    alarm = max(1, math.ceil(budget)) + _ALARM_GRACE
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-I",
        "-c",
        _BOOT,
        _PACKAGE,
        json.dumps(path),
        str(alarm),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,  # a terminal's Ctrl-C is the harness's to handle, not its
    )
    answer, stderr, status = await collect_output(
        process,
        limit=_ANSWER_LIMIT,
        overflow=lambda: EngineError(
            "SEARCH_RAW_OUTPUT_OVERFLOW",
            f"the search's results passed {_ANSWER_LIMIT // (1024 * 1024)} MB; narrow it",
        ),
        stderr_kept=_STDERR_KEPT,
        stdin=pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL),
    )
    return _result(answer, status, stderr)


def _result(answer: bytes, status: int, stderr: bytes) -> list[str] | list[Hit]:
    kind: object = None
    value: Any = None
    if status == 0:
        try:
            kind, value = pickle.loads(answer)
        except Exception:  # a truncated or garbled answer is a failed worker
            kind = None
    if kind == "ok" and isinstance(value, list):
        return value
    if kind == "error" and isinstance(value, EngineError):
        raise value
    said = stderr.decode("utf-8", errors="replace").strip().splitlines()
    detail = said[-1] if said else "no message"
    raise EngineError("SEARCH_FAILED", f"the search worker failed (exit status {status}): {detail}")
