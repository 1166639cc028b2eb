"""A SQLAlchemy engine for a store, and what its connection errors mean to a user."""

from __future__ import annotations

import sqlalchemy as sa

from clientlab.errors import LabError
from clientlab.store.url import StoreUrl

SQLITE_BUSY_S = 30    # a writer waits this long for another (another command, another run)
CONNECT_TIMEOUT_S = 5  # an unreachable team store is said so within seconds


def create(where: StoreUrl) -> sa.Engine:
    if where.backend == "sqlite":
        where.path.parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(where.url, connect_args={"timeout": SQLITE_BUSY_S})
        sa.event.listen(engine, "connect", _sqlite_wal)
        return engine
    return sa.create_engine(where.url, connect_args={"connect_timeout": CONNECT_TIMEOUT_S},
                            pool_pre_ping=True)


def _sqlite_wal(dbapi_connection, _record) -> None:
    # WAL: readers never block the writer, and a killed writer leaves the file intact
    dbapi_connection.execute("PRAGMA journal_mode=WAL")


def unreachable(where: StoreUrl, error: sa.exc.OperationalError) -> LabError:
    """The error to show when a store cannot be opened: the server, and why, in words."""
    detail = str(getattr(error, "orig", error)).strip().splitlines()
    reason = detail[0] if detail else type(error).__name__
    if where.backend == "sqlite":
        return LabError(f"cannot open the store {where.shown}: {reason}")
    lowered = " ".join(detail).lower()
    if "password authentication failed" in lowered or "authentication" in lowered or "no pg_hba.conf entry" in lowered:
        return LabError(f"PostgreSQL at {where.server} refused user '{where.url.username}': {reason} "
                        "(check the user and password in the store URL, and the server's pg_hba.conf)")
    if "does not exist" in lowered and "database" in lowered:
        return LabError(f"PostgreSQL at {where.server} has no database '{where.url.database}': {reason} "
                        f"(create it: createdb -h {where.url.host} -p {where.url.port or 5432} {where.url.database})")
    return LabError(f"cannot reach PostgreSQL at {where.server}: {reason} "
                    "(is the server running, and does it listen there?)")
