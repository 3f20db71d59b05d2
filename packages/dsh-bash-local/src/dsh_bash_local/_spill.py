"""Private spill files: 0600, created exclusively inside one 0700 directory per executor."""

from __future__ import annotations

import itertools
import os
import secrets
import tempfile
from pathlib import Path


class SpillFiles:
    """Creates spill files lazily under a private directory made on first use."""

    def __init__(self, parent: Path | None) -> None:
        self._parent = parent
        self._root: Path | None = None
        self._counter = itertools.count(1)

    def _directory(self) -> Path:
        if self._root is None or not self._root.is_dir():
            parent = str(self._parent) if self._parent is not None else None
            self._root = Path(tempfile.mkdtemp(prefix="dsh-shell-", dir=parent))
        return self._root

    def open(self, label: str) -> tuple[int, Path]:
        """A new spill file for stream ``label``: its write descriptor and path."""
        name = f"dsh-shell-{os.getpid()}-{next(self._counter)}-{secrets.token_hex(6)}-{label}.log"
        path = self._directory() / name
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
        return os.open(path, flags, 0o600), path
