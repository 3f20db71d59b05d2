"""Session status rows (``running``, ``idle``, ``cold``, ``missing``): persisted sessions merged
with live agents."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["SessionStatus", "SessionStatusRow", "iso_time"]

SessionStatus = Literal["running", "idle", "cold", "missing"]
"""``running``: a live agent is in a turn; ``idle``: live, not in a turn; ``cold``: stored,
no live agent; ``missing``: neither (exact lookups only)."""


def iso_time(epoch_ms: int | None) -> str | None:
    """Epoch milliseconds as an ISO 8601 UTC timestamp (``None`` stays ``None``)."""
    if epoch_ms is None:
        return None
    moment = datetime.datetime.fromtimestamp(epoch_ms / 1000, tz=datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class SessionStatusRow:
    """One row of ``session_status``; absent fields are ``None`` (and left out of the JSON)."""

    session_id: str
    status: SessionStatus
    title: str | None = None
    updated_at: str | None = None
    session_path: str | None = None

    def to_json(self) -> dict[str, Any]:
        """``{session_id, title?, status, updated_at?, session_path?}``."""
        row: dict[str, Any] = {"session_id": self.session_id}
        if self.title is not None:
            row["title"] = self.title
        row["status"] = self.status
        if self.updated_at is not None:
            row["updated_at"] = self.updated_at
        if self.session_path is not None:
            row["session_path"] = self.session_path
        return row
