"""Errors of the JSONL backend that are not per-session (the seam's errors cover the rest), and
the mapping of filesystem errors to the seam's ``SessionStorageError``."""

from __future__ import annotations

import os

from dsh_persistence import SessionStorageError


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


def storage_error(
    session_id: str, operation: str, path: str | os.PathLike[str] | None, error: OSError
) -> SessionStorageError:
    """The seam's ``SessionStorageError`` for an ``OSError`` of the filesystem (ENOSPC, EROFS,
    EACCES, EIO, …) met while doing ``operation`` on ``path``."""
    reason = error.strerror or str(error)
    if error.filename is not None and path is not None and str(error.filename) != str(path):
        reason = f"{reason} ({error.filename})"
    return SessionStorageError(
        session_id,
        operation=operation,
        reason=reason,
        artifact=None if path is None else os.fspath(path),
        errno=error.errno,
    )
