"""The session store a configuration names: its backend opened at its resolved location."""

from __future__ import annotations

from collections.abc import Mapping

from dsh_agent_core._config import Config
from dsh_agent_core._errors import DshError
from dsh_agent_core._extras import require_extra
from dsh_persistence import SessionPersistence
from dsh_persistence_jsonl import JsonlPersistence

__all__ = ["build_persistence"]


def build_persistence(config: Config, env: Mapping[str, str] | None = None) -> SessionPersistence:
    """The backend the configuration names, at its resolved location (``env``: where the
    PostgreSQL DSN variable is read; default the config's environment, else ``os.environ``)."""
    location = config.persistence_location()
    settings = config.persistence
    if location.backend == "postgres":
        require_extra("postgres", 'persistence backend "postgres"')
        environ = env if env is not None else config.environment()
        dsn = environ.get(location.dsn_env)
        if not dsn:
            raise DshError(
                f"persistence.backend is postgres but the environment variable "
                f"{location.dsn_env} (persistence.dsn_env) that holds its DSN is not set"
            )
        # imported here: psycopg costs a local-only `dsh` start a quarter of a second
        from dsh_persistence_postgres import PostgresPersistence

        return PostgresPersistence(
            dsn, schema=location.schema, compression=settings.sqlite_compression
        )
    if location.backend == "sqlite":
        from dsh_persistence_sqlite import SqlitePersistence  # as postgres: only when configured

        location.path.parent.mkdir(parents=True, exist_ok=True)
        return SqlitePersistence(
            location.path, compression=settings.sqlite_compression, pack_chunks=settings.pack_chunks
        )
    return JsonlPersistence(
        location.root, compression=location.compression, pack_chunks=settings.pack_chunks
    )
