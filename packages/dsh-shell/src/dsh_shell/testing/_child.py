"""The child-process side of the ``child_process`` clauses (``python -m`` this module).

``argv[1]`` is one JSON request — ``{"factory", "args", "command", "workdir", "timeout"}`` and
optionally ``"confine"`` (run under ``SandboxPolicy(workspace=workdir)``) — not stdin: what the
command inherits on stdin is what the clause looks at. The executor is rebuilt with
``factory(args)``, the command run once without stdin, and the result reported as one stdout
line starting with ``MARK`` (so a chatty executor cannot confuse the parent); a `ShellError`
is reported as ``{"error": <class name>, "message": ...}``.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import inspect
import json
import sys
from typing import Any

from dsh_shell._errors import ShellError
from dsh_shell._request import ShellExecRequest
from dsh_shell._sandbox import SandboxPolicy

MARK = "DSH-SHELL-CONTRACT "


def load_factory(spec: str) -> Any:
    """Import ``"module:function"`` or ``"/path/to/file.py:function"``."""
    module_name, _, attr = spec.rpartition(":")
    if module_name.endswith(".py"):
        file_spec = importlib.util.spec_from_file_location(
            "_dsh_shell_contract_child_factory", module_name
        )
        if file_spec is None or file_spec.loader is None:
            raise ImportError(f"cannot load {module_name}")
        module = importlib.util.module_from_spec(file_spec)
        sys.modules[file_spec.name] = module
        file_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(module_name)
    return getattr(module, attr)


async def _main(request: dict[str, Any]) -> dict[str, Any]:
    executor = load_factory(request["factory"])(request["args"])
    if inspect.isawaitable(executor):
        executor = await executor
    sandbox = SandboxPolicy(workspace=request["workdir"]) if request.get("confine") else None
    try:
        spec = executor.resolve(
            ShellExecRequest(
                request["command"],
                workdir=request["workdir"],
                timeout=request["timeout"],
                sandbox=sandbox,
            )
        )
        result = await executor.run(spec)
    except ShellError as error:
        return {"error": type(error).__name__, "message": str(error)}
    finally:
        aclose = getattr(executor, "aclose", None)
        if aclose is not None and inspect.iscoroutinefunction(aclose):
            await aclose()
    return {
        "exit_code": result.exit_code,
        "timed_out": result.timed_out,
        "stdout": result.stdout.text,
        "stderr": result.stderr.text,
    }


if __name__ == "__main__":
    report = asyncio.run(_main(json.loads(sys.argv[1])))
    sys.stdout.write(MARK + json.dumps(report) + "\n")
    sys.stdout.flush()
