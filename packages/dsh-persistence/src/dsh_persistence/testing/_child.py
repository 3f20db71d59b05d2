"""The child-process side of the cross-process clauses (``python -m`` this module).

Reads one JSON request line on stdin — ``{"factory", "args", "session_id", "op"}`` — rebuilds a
backend instance with ``factory(args)`` and performs ``op``:

- ``hold-write``: open the session for writing, report ``ready``, hold the handle until a line
  (or EOF) arrives on stdin, then close everything and report ``released``;
- ``try-write``: try a write open and report ``opened`` (then close) or the error's class name;
- ``flush-several``: create ``FLUSH_SEVERAL`` sessions named ``<session_id>-<suffix>`` (some with
  nothing appended, some with one turn), call ``persistence.flush()`` once, report ``flushed``
  and hold every handle until a line (or EOF) arrives on stdin (the parent kills it first).

Reports are stdout lines starting with ``MARK`` so a chatty backend cannot confuse the parent.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import inspect
import json
import sys
from typing import Any

MARK = "DSH-CONTRACT "

FLUSH_SEVERAL: dict[str, bool] = {
    "empty-0": False,
    "busy-0": True,
    "empty-1": False,
    "busy-1": True,
    "empty-2": False,
}
"""The sessions ``flush-several`` creates, oldest first: suffix -> whether one turn is appended."""


def load_factory(spec: str) -> Any:
    """Import ``"module:function"`` or ``"/path/to/file.py:function"``."""
    module_name, _, attr = spec.rpartition(":")
    if module_name.endswith(".py"):
        file_spec = importlib.util.spec_from_file_location(
            "_dsh_contract_child_factory", module_name
        )
        if file_spec is None or file_spec.loader is None:
            raise ImportError(f"cannot load {module_name}")
        module = importlib.util.module_from_spec(file_spec)
        sys.modules[file_spec.name] = module
        file_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(module_name)
    return getattr(module, attr)


def _report(**fields: Any) -> None:
    sys.stdout.write(MARK + json.dumps(fields) + "\n")
    sys.stdout.flush()


async def _flush_several(persistence: Any, prefix: str) -> None:
    from dsh_persistence.testing._samples import header, one_turn

    handles = []
    for suffix, busy in FLUSH_SEVERAL.items():
        handles.append(await persistence.create(header(f"{prefix}-{suffix}")))
        if busy:
            await handles[-1].append(one_turn())
    await persistence.flush()
    _report(status="flushed")
    await asyncio.to_thread(sys.stdin.readline)
    for handle in handles:
        await handle.close()


async def _main() -> int:
    request = json.loads(sys.stdin.readline())
    factory = load_factory(request["factory"])
    persistence = factory(request["args"])
    if inspect.isawaitable(persistence):
        persistence = await persistence
    try:
        if request["op"] == "flush-several":
            await _flush_several(persistence, request["session_id"])
            return 0
        try:
            handle = await persistence.open(request["session_id"], "write")
        except Exception as error:
            _report(status="error", error=type(error).__name__, message=str(error))
            return 0
        if request["op"] == "try-write":
            await handle.close()
            _report(status="opened")
            return 0
        _report(status="ready")
        await asyncio.to_thread(sys.stdin.readline)
        await handle.close()
    finally:
        await persistence.aclose()
    _report(status="released")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(_main()))
