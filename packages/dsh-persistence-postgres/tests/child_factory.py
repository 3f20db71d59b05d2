"""Builds a PostgresPersistence in a child process (the contract suite's cross-process clauses)."""

from __future__ import annotations

from typing import Any

from dsh_persistence_postgres import PostgresPersistence


def make(args: Any) -> PostgresPersistence:
    """``PostgresPersistence(args["dsn"], schema=args["schema"], compression=...)``."""
    return PostgresPersistence(
        args["dsn"], schema=args["schema"], compression=args.get("compression", True)
    )
