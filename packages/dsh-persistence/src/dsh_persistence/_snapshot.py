"""``SessionSnapshot``: what ``stat``/``list`` know about a session without reading its body."""

from __future__ import annotations

from dataclasses import dataclass

from dsh_session import SessionHeader


@dataclass(frozen=True, slots=True)
class SessionSnapshot:
    """Metadata of one stored session, read without parsing the log body.

    - ``revision``: opaque; two snapshots of the same id from the same instance are equal iff
      the log did not change in between (ownership churn never changes it);
    - ``event_count``: the logical number of events when cheap (from the last physical row),
      else ``None``;
    - ``size_bytes``: the artifact size when the backend has one, else ``None``;
    - ``updated_at``: last change, epoch milliseconds (like ``SessionHeader.created_at``), or
      ``None`` when unknown;
    - ``plain_path``: the absolute path of a per-session plain UTF-8 JSONL file that *is* the
      complete log, when the backend keeps one (what an agent greps); ``None`` otherwise. Line 1
      is the header line and the rows decode to exactly the logical events; a log written with
      packed chunk rows keeps them packed there, so its bytes then differ from the export.
    """

    header: SessionHeader
    revision: str
    event_count: int | None = None
    size_bytes: int | None = None
    updated_at: int | None = None
    plain_path: str | None = None

    @property
    def id(self) -> str:
        """The session id (``header.id``)."""
        return self.header.id
