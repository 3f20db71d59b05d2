"""Builds a JsonlPersistence in a child process (the contract suite's cross-process clauses)."""

from __future__ import annotations

from typing import Any

from dsh_persistence_jsonl import JsonlPersistence


def make(args: Any) -> JsonlPersistence:
    """``JsonlPersistence(args["root"], compression=..., pack_chunks=...)``."""
    return JsonlPersistence(
        args["root"], compression=args["compression"], pack_chunks=args["pack_chunks"]
    )
