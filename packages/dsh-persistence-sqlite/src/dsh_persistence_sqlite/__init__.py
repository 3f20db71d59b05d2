"""DSH session persistence in one SQLite database file (stdlib ``sqlite3``).

``SqlitePersistence(path, compression=True, pack_chunks=False)`` implements the
``dsh_persistence.SessionPersistence`` seam: STRICT tables, WAL with ``synchronous=FULL`` (an
append is durable when it returns), zstd for rows of 4 KiB and more when that is smaller, and a
single writer per session across processes (``flock`` on ``<path>-locks/<hash>.lock``).
"""

from dsh_persistence_sqlite._backend import SqlitePersistence
from dsh_persistence_sqlite._errors import (
    ForeignDatabaseError,
    PragmaMismatchError,
    SchemaMismatchError,
    SqliteStoreError,
    UnsafeDatabasePathError,
    UnsupportedSchemaError,
)
from dsh_persistence_sqlite._handle import SqliteSessionHandle
from dsh_persistence_sqlite._sql import APPLICATION_ID, SCHEMA_VERSION

__all__ = [
    "APPLICATION_ID",
    "SCHEMA_VERSION",
    "ForeignDatabaseError",
    "PragmaMismatchError",
    "SchemaMismatchError",
    "SqlitePersistence",
    "SqliteSessionHandle",
    "SqliteStoreError",
    "UnsafeDatabasePathError",
    "UnsupportedSchemaError",
]
