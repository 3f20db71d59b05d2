"""Builds a SqlitePersistence in a child process (the contract suite's cross-process clauses)."""

from __future__ import annotations

from typing import Any

from dsh_persistence_sqlite import SqlitePersistence


def make(args: Any) -> SqlitePersistence:
    """``SqlitePersistence(args["path"], compression=..., pack_chunks=...)``."""
    return SqlitePersistence(
        args["path"], compression=args["compression"], pack_chunks=args["pack_chunks"]
    )
