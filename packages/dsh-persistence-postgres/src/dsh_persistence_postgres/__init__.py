"""DSH session persistence in PostgreSQL (psycopg 3, async).

``PostgresPersistence(dsn, *, schema="dsh")`` implements the ``dsh_persistence.SessionPersistence``
seam: the store lives in its own schema (created and versioned by the backend), one transaction
per append with ``synchronous_commit = on``, and a single writer per session across hosts through
a session-level advisory lock held on the write handle's own connection.
"""

from dsh_persistence_postgres._backend import PostgresPersistence
from dsh_persistence_postgres._errors import PostgresUnavailableError
from dsh_persistence_postgres._handle import PostgresSessionHandle
from dsh_persistence_postgres._sql import SCHEMA_VERSION

__all__ = [
    "SCHEMA_VERSION",
    "PostgresPersistence",
    "PostgresSessionHandle",
    "PostgresUnavailableError",
]
