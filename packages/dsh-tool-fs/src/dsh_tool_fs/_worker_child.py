"""The search worker's side (see `dsh_tool_fs._worker`): kept apart so the child imports
neither asyncio nor the tool registry."""

from __future__ import annotations

import pickle
import sys
from typing import Any

from dsh_tool_fs._engine import EngineError, run_request

__all__ = ["serve"]


def serve() -> None:
    """The worker's side: one request from stdin, its answer (``("ok", result)`` or
    ``("error", EngineError)``) to stdout."""
    request = pickle.loads(sys.stdin.buffer.read())
    answer: tuple[str, Any]
    try:
        answer = ("ok", run_request(request))
    except EngineError as error:
        answer = ("error", error)
    except (MemoryError, RecursionError, OSError) as error:
        answer = ("error", EngineError("SEARCH_FAILED", f"the search failed: {error!r}"))
    sys.stdout.buffer.write(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))
    sys.stdout.buffer.flush()
