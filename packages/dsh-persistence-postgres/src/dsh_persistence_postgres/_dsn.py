"""Connection settings from a DSN, and how they are shown: never with the password."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from psycopg.conninfo import conninfo_to_dict, make_conninfo

CONNECT_TIMEOUT_S = 5
"""``connect_timeout`` given to libpq unless the DSN sets its own: a database that is away is
reported within about this long (at once when the port refuses)."""


@dataclass(frozen=True, slots=True)
class Target:
    """A parsed DSN: the conninfo to connect with and its password-free display forms."""

    conninfo: str
    display: str
    host_port: str
    _secret: str | None

    @classmethod
    def parse(cls, dsn: str) -> Target:
        """Parse a URI or ``key=value`` DSN (``ValueError`` when it is not one, not naming the
        password); ``connect_timeout`` defaults to ``CONNECT_TIMEOUT_S``."""
        if not isinstance(dsn, str) or not dsn.strip():
            raise ValueError("dsn must be a non-empty PostgreSQL connection string")
        try:
            params: dict[str, Any] = conninfo_to_dict(dsn)
        except Exception as error:
            secret = _password_in(dsn)
            raise ValueError(
                f"dsn is not a PostgreSQL connection string: {_scrub(str(error), secret)}"
            ) from None
        params.setdefault("connect_timeout", CONNECT_TIMEOUT_S)
        secret = params.get("password")
        host = str(params.get("host") or params.get("hostaddr") or "localhost")
        port = str(params.get("port") or "5432")
        user = params.get("user")
        dbname = params.get("dbname")
        credentials = f"{user}{':***' if secret else ''}@" if user else ("***@" if secret else "")
        display = f"postgresql://{credentials}{host}:{port}/{dbname or ''}"
        return cls(
            conninfo=make_conninfo("", **params),
            display=display,
            host_port=f"{host}:{port}",
            _secret=None if secret is None else str(secret),
        )

    def scrub(self, text: str) -> str:
        """``text`` with every occurrence of the password replaced by ``***``."""
        return _scrub(text, self._secret)

    def __repr__(self) -> str:
        return f"Target({self.display!r})"


def _scrub(text: str, secret: str | None) -> str:
    if secret:
        return text.replace(secret, "***")
    return text


def _password_in(dsn: str) -> str | None:
    """A best-effort guess at the password of a DSN that does not parse (to keep it out of the
    error message)."""
    if "://" in dsn and "@" in dsn:
        userinfo = dsn.split("://", 1)[1].rsplit("@", 1)[0]
        if ":" in userinfo:
            return userinfo.split(":", 1)[1] or None
    for part in dsn.split():
        if part.startswith("password="):
            return part[len("password=") :] or None
    return None
