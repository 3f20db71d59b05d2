"""``[persistence]``: the settings that say where session logs go, and that place resolved.

The default places (``<DSH_HOME>/sessions-plain``, ``<DSH_HOME>/sessions``,
``<DSH_HOME>/sessions.sqlite3``) are written here and nowhere else: the harness builds its
backend from `PersistenceConfig.location`, the sandbox keeps that place read-only, an export
refuses to write into it, and ``dsh config --dump`` shows it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "JsonlLocation",
    "PersistenceConfig",
    "PersistenceLocation",
    "PostgresLocation",
    "SqliteLocation",
    "default_jsonl_root",
    "default_sqlite_path",
]

JsonlCompression = Literal["none", "zstd"]


def default_jsonl_root(home: Path, compression: JsonlCompression) -> Path:
    """Where a JSONL backend keeps its logs when ``root`` is not set: ``<home>/sessions-plain``
    for plain logs, ``<home>/sessions`` for zstd (one root holds one encoding)."""
    return home / ("sessions-plain" if compression == "none" else "sessions")


def default_sqlite_path(home: Path) -> Path:
    """Where the SQLite backend keeps its database when ``path`` is not set."""
    return home / "sessions.sqlite3"


def _resolved(path: str) -> Path:
    """A configured path as the backends open it: ``~`` expanded, made absolute against the
    current directory."""
    return Path(os.path.abspath(os.path.expanduser(path)))


@dataclass(frozen=True, slots=True)
class JsonlLocation:
    """Session logs as one JSONL file per session under ``root`` (absolute), plain or zstd."""

    root: Path
    compression: JsonlCompression
    backend: Literal["jsonl"] = "jsonl"

    def describe(self) -> str:
        """``the plain JSONL root /home/u/.dsh/sessions-plain``."""
        kind = "plain" if self.compression == "none" else "zstd"
        return f"the {kind} JSONL root {self.root}"


@dataclass(frozen=True, slots=True)
class SqliteLocation:
    """Session logs in one SQLite database at ``path`` (absolute); beside it its ``-wal``,
    ``-shm`` and ``-journal`` files and its ``-locks`` folder."""

    path: Path
    backend: Literal["sqlite"] = "sqlite"

    def files(self) -> tuple[Path, ...]:
        """The database and its journal files."""
        return (self.path, *(self.path.with_name(self.path.name + end) for end in _JOURNALS))

    def describe(self) -> str:
        """``the SQLite database /home/u/.dsh/sessions.sqlite3``."""
        return f"the SQLite database {self.path}"


_JOURNALS = ("-wal", "-shm", "-journal")


@dataclass(frozen=True, slots=True)
class PostgresLocation:
    """Session logs in a PostgreSQL database: its DSN is read from the environment variable
    ``dsn_env`` (never written in the configuration), the tables are in ``schema``. No file
    on this host holds them."""

    dsn_env: str
    schema: str
    backend: Literal["postgres"] = "postgres"

    def describe(self) -> str:
        """``the PostgreSQL schema dsh (DSN in $DSH_POSTGRES_DSN)``."""
        return f"the PostgreSQL schema {self.schema} (DSN in ${self.dsn_env})"


PersistenceLocation = JsonlLocation | SqliteLocation | PostgresLocation
"""Where a configuration puts session logs, resolved: tell the kinds apart by ``backend``."""


class PersistenceConfig(BaseModel):
    """Where session logs go. ``backend = "jsonl"`` (default) keeps one file per session under
    ``root`` (default ``<DSH_HOME>/sessions-plain`` for plain logs, ``<DSH_HOME>/sessions`` for
    zstd); ``backend = "sqlite"`` keeps one database at ``path`` (default
    ``<DSH_HOME>/sessions.sqlite3``); ``backend = "postgres"`` keeps them in a PostgreSQL
    database whose DSN is in the environment variable ``dsn_env`` (the DSN, which may hold a
    password, is never in the config), in the schema ``postgres_schema``. `location` resolves
    them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: Literal["jsonl", "sqlite", "postgres"] = "jsonl"
    root: str | None = None
    compression: JsonlCompression = "none"
    pack_chunks: bool = False
    path: str | None = None
    sqlite_compression: bool = True
    dsn_env: str = Field(default="DSH_POSTGRES_DSN", min_length=1)
    postgres_schema: str = Field(default="dsh", pattern=r"^[a-z_][a-z0-9_]{0,62}$")

    def location(self, home: Path) -> PersistenceLocation:
        """Where these settings put session logs for the DSH home ``home``: the configured
        ``root`` or ``path`` (``~`` expanded, made absolute) or the default place under
        ``home``; for PostgreSQL the variable that holds the DSN and the schema."""
        if self.backend == "postgres":
            return PostgresLocation(dsn_env=self.dsn_env, schema=self.postgres_schema)
        if self.backend == "sqlite":
            path = _resolved(self.path) if self.path is not None else default_sqlite_path(home)
            return SqliteLocation(path=path)
        root = (
            _resolved(self.root)
            if self.root is not None
            else default_jsonl_root(home, self.compression)
        )
        return JsonlLocation(root=root, compression=self.compression)
