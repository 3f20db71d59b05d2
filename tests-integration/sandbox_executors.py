"""The sandbox executor over the real local one, buildable from JSON args (also in a child).

No pytest here: the contract suite's ``child_process`` clauses import this file in a child
Python process (``f"{FACTORIES}:make_sandbox"``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dsh_bash_local import LocalBashConfig, LocalBashExecutor
from dsh_bash_sandbox import SandboxExecutor
from dsh_shell import SandboxMode, SandboxPolicy

FACTORIES = Path(__file__)
"""This file, as a ``child_factory`` path."""


def make_sandbox(args: dict[str, Any]) -> SandboxExecutor:
    """``SandboxExecutor(LocalBashExecutor(config))`` under ``args["mode"]`` (workspace-write).

    ``grace``, ``max_spill_bytes`` and ``spill_dir`` configure the local executor; the policy's
    workspace is each spec's workdir.
    """
    names = ("grace", "max_spill_bytes", "spill_dir", "timeout", "max_timeout")
    config = LocalBashConfig(**{k: args[k] for k in names if k in args})
    mode: SandboxMode = args.get("mode", "workspace-write")
    return SandboxExecutor(LocalBashExecutor(config), policy=SandboxPolicy(mode=mode))
