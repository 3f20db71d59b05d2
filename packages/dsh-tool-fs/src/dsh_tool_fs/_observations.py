"""Read-before-edit: the version of each file a session last read or wrote.

``edit`` (and ``write`` over an existing file) refuse a file the session has not read, or one
that changed on disk since (its device, inode, size or modification time differ; when the read
saw the whole file, its SHA-256 too). A version read or written through a `FileAccess` (an
editor's buffer, which has no file status) is known by its content alone (``content_only``):
it is current while the text, wherever it is read now, has the same SHA-256. Each successful
``read``/``write``/``edit`` result carries the version it saw in its ``meta`` (``fsObserved``),
which the session log keeps: a resumed session's state is rebuilt from its own log the first
time one of its calls needs it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from dsh_tool_fs._errors import FileChangedError, FileNotReadError
from dsh_tools import ToolExecution

__all__ = ["OBSERVED_META_KEY", "Observation", "Observations"]

OBSERVED_META_KEY = "fsObserved"
"""The key of a file tool result's ``meta`` holding the version the call saw."""


@dataclass(frozen=True, slots=True)
class Observation:
    """One file's version as a call saw it (``sha256`` only when it saw the whole content).

    ``content_only``: seen through a `FileAccess` (device, inode and time are 0), so only
    ``size`` and ``sha256`` say which version it was."""

    path: str
    device: int
    inode: int
    size: int
    mtime_ns: int
    sha256: str | None = None
    content_only: bool = False

    @classmethod
    def of(cls, path: str, status: os.stat_result, content: bytes | None) -> Observation:
        """The version ``status`` (and, when given, the whole ``content``) describe."""
        digest = hashlib.sha256(content).hexdigest() if content is not None else None
        return cls(path, status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, digest)

    @classmethod
    def of_content(cls, path: str, content: bytes) -> Observation:
        """The version of a text seen whole through a `FileAccess`: its content alone."""
        digest = hashlib.sha256(content).hexdigest()
        return cls(path, 0, 0, len(content), 0, digest, content_only=True)

    def to_meta(self) -> dict[str, Any]:
        """The JSON ``meta`` form."""
        # device, inode and nanosecond times pass 2**53: decimal strings keep them exact in JSON
        meta: dict[str, Any] = {
            "path": self.path,
            "device": str(self.device),
            "inode": str(self.inode),
            "size": self.size,
            "mtimeNs": str(self.mtime_ns),
        }
        if self.sha256 is not None:
            meta["sha256"] = self.sha256
        if self.content_only:
            meta["contentOnly"] = True
        return meta

    @classmethod
    def from_meta(cls, value: object) -> Observation | None:
        """The observation a result's ``meta`` holds, or ``None`` for anything else."""
        if not isinstance(value, dict):
            return None
        found = value.get(OBSERVED_META_KEY)
        if not isinstance(found, dict):
            return None
        path, digest, size = found.get("path"), found.get("sha256"), found.get("size")
        texts = [found.get(key) for key in ("device", "inode", "mtimeNs")]
        if not isinstance(path, str) or type(size) is not int:
            return None
        if not all(isinstance(n, str) and n.isdigit() and len(n) <= 24 for n in texts):
            return None
        if digest is not None and not isinstance(digest, str):
            return None
        device, inode, mtime_ns = (int(str(n)) for n in texts)
        content_only = found.get("contentOnly") is True
        return cls(path, device, inode, size, mtime_ns, digest, content_only)

    def same_file_version(self, status: os.stat_result) -> bool:
        """Whether ``status`` shows the version this observation saw."""
        return (self.device, self.inode, self.size, self.mtime_ns) == (
            status.st_dev,
            status.st_ino,
            status.st_size,
            status.st_mtime_ns,
        )


def _logged_results(execution: ToolExecution) -> Iterable[Any]:
    """The ``meta`` of every ``tool/result`` in the caller's session log (none without a
    caller)."""
    if execution.caller is None:
        return ()
    metas: list[Any] = []
    for event in execution.caller.session.events:
        if event.type != "tool/result":
            continue
        data = event.data
        if isinstance(data, dict):
            metas.append(data.get("meta"))
    return metas


class Observations:
    """Per session id, the latest `Observation` of each path (see the module docs)."""

    def __init__(self) -> None:
        self._sessions: dict[str, dict[str, Observation]] = {}

    def _files(self, execution: ToolExecution) -> dict[str, Observation]:
        key = execution.session_id or ""
        files = self._sessions.get(key)
        if files is None:
            files = self._sessions[key] = {}
            for meta in _logged_results(execution):
                observation = Observation.from_meta(meta)
                if observation is not None:
                    files[observation.path] = observation
        return files

    def record(self, execution: ToolExecution, observation: Observation) -> None:
        """Remember that ``execution``'s session saw ``observation``."""
        self._files(execution)[observation.path] = observation

    def get(self, execution: ToolExecution, path: str) -> Observation | None:
        """What ``execution``'s session last saw of ``path`` (``None``: never read)."""
        return self._files(execution).get(path)

    def require_current(
        self,
        execution: ToolExecution,
        path: str,
        status: os.stat_result | None,
        content: bytes | None,
        *,
        action: str,
    ) -> None:
        """Refuse ``action`` on ``path`` unless this session saw its current version:
        `FileNotReadError` when it never read it, `FileChangedError` when it changed since.

        ``status`` is ``None`` when the current version was read through a `FileAccess`: then,
        as when the session saw it through one (``content_only``), the whole ``content`` must
        have the SHA-256 the session saw."""
        seen = self.get(execution, path)
        if seen is None:
            raise FileNotReadError(
                f"{path} has not been read in this session; read it before you {action} it",
                path=path,
            )
        if status is None or seen.content_only:
            changed = (
                seen.sha256 is None
                or content is None
                or hashlib.sha256(content).hexdigest() != seen.sha256
            )
        else:
            changed = not seen.same_file_version(status)
            if not changed and seen.sha256 is not None and content is not None:
                changed = hashlib.sha256(content).hexdigest() != seen.sha256
        if changed:
            where = "on disk " if status is not None and not seen.content_only else ""
            raise FileChangedError(
                f"{path} changed {where}since this session read it; read it again before you "
                f"{action} it",
                path=path,
            )
