"""Errors of the JSONL backend that are not per-session (the seam's errors cover the rest)."""

from __future__ import annotations


class RootEncodingError(ValueError):
    """A root holds logs of the other encoding (``session.jsonl`` vs ``session.jsonl.zstd``).

    One root holds one encoding; ``path`` names an artifact of the other one.
    """

    def __init__(self, root: str, configured: str, path: str) -> None:
        found = "zstd" if path.endswith(".zstd") else "none"
        super().__init__(
            f"JSONL root {root} holds compression={found!r} logs (e.g. {path}) but this "
            f"instance is configured with compression={configured!r}; use a separate root or "
            "select the matching compression mode (migrate_root converts a zstd root to a "
            "plain one)"
        )
        self.root = root
        self.configured = configured
        self.path = path
