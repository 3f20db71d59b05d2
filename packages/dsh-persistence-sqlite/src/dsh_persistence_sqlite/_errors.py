"""Errors about the database file itself (not about one session): each names the path."""

from __future__ import annotations


class SqliteStoreError(Exception):
    """The database at ``path`` cannot be used as a session store; ``reason`` says why."""

    path: str
    reason: str

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"session database {path}: {reason}")
        self.path = path
        self.reason = reason

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.path, self.reason))


class UnsafeDatabasePathError(SqliteStoreError):
    """The path is a symbolic link or not a regular file (refused, never followed)."""


class ForeignDatabaseError(SqliteStoreError):
    """The file is an SQLite database that is not a dsh session store (another
    ``application_id``, or a non-empty database without one)."""


class UnsupportedSchemaError(SqliteStoreError):
    """A dsh session store whose ``user_version`` this build does not know (newer: upgrade)."""

    user_version: int

    def __init__(self, path: str, reason: str, *, user_version: int = 0) -> None:
        super().__init__(path, reason)
        self.user_version = user_version

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_schema, (self.path, self.reason, self.user_version))


def _rebuild_schema(path: str, reason: str, user_version: int) -> UnsupportedSchemaError:
    return UnsupportedSchemaError(path, reason, user_version=user_version)


class SchemaMismatchError(SqliteStoreError):
    """A table of the store was changed, dropped, or is not ``STRICT``."""


class PragmaMismatchError(SqliteStoreError):
    """A connection setting read back differently from what was set (``journal_mode``,
    ``synchronous``, ``foreign_keys``, ...): durability would not be what it promises."""
