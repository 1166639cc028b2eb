"""Bringing a store's schema to this clientlab's: cheap when it is there already (one query, no
Alembic), Alembic's migrations when it is behind, a clear refusal when it is newer.

A new store is made from schema.py and stamped; an SQLite store of the code before migrations
(tables, no alembic_version) is adopted by revision 0001. One process migrates at a time: an
advisory lock on PostgreSQL, a lock on the SQLite file's folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import sqlalchemy as sa

from clientlab.errors import LabError
from clientlab.store import schema
from clientlab.store.url import StoreUrl

EMPTY, UNVERSIONED = "empty", "unversioned"  # no tables; tables of the code before migrations
_PG_LOCK_KEY = 0x636C6C62  # any constant shared by every clientlab: "cllb"
MIGRATIONS = Path(__file__).parent / "migrations"


def revision(conn: sa.Connection) -> str:
    """The store's schema revision, EMPTY or UNVERSIONED (catalog queries: safe in a transaction)."""
    seen = sa.inspect(conn)
    if seen.has_table("alembic_version"):
        found = conn.execute(sa.select(schema.alembic_version.c.version_num)).scalar()
        if found:
            return found
    return UNVERSIONED if seen.has_table("runs") else EMPTY


def _quick_revision(engine: sa.Engine) -> str | None:
    """The revision in one query, or None when there is no version table (yet)."""
    with engine.connect() as conn:  # a store that cannot be reached fails here, not below
        try:
            return conn.execute(sa.select(schema.alembic_version.c.version_num)).scalar()
        except sa.exc.ProgrammingError:
            return None
        except sa.exc.OperationalError as e:
            if "no such table" in str(e):  # SQLite says so this way
                return None
            raise


def check_known(where: StoreUrl, found: str) -> None:
    if found not in (EMPTY, UNVERSIONED, *schema.REVISIONS):
        raise LabError(f"the store {where.shown} has schema revision {found}, newer than this clientlab "
                       f"knows (up to {schema.HEAD}): update clientlab on this host to use it")


def ensure(engine: sa.Engine, where: StoreUrl, upgrade_shared: bool = False) -> None:
    """Make the store's schema this clientlab's. A PostgreSQL store that is behind is upgraded only
    with `upgrade_shared` (`clientlab store migrate`): other hosts may use it with their clientlab."""
    if _quick_revision(engine) == schema.HEAD:
        return
    with engine.connect() as conn:
        found = revision(conn)
    check_known(where, found)
    if found == schema.HEAD:
        return
    if where.backend == "postgresql" and found != EMPTY and not upgrade_shared:
        raise LabError(f"the team store {where.shown} has schema revision {found}; this clientlab needs "
                       f"{schema.HEAD}: run `clientlab store migrate --store URL` once (hosts using it "
                       "with an older clientlab must then update)")
    upgrade(engine, where)


def upgrade(engine: sa.Engine, where: StoreUrl) -> str:
    """Run what migrations the store lacks, one process at a time; returns the revision it was at."""
    with _one_migrator(engine, where) as conn:
        found = revision(conn)  # again: another process may have done it meanwhile
        check_known(where, found)
        if found == EMPTY:
            schema.metadata.create_all(conn)
            schema.alembic_version.create(conn)
            conn.execute(schema.alembic_version.insert().values(version_num=schema.HEAD))
        elif found != schema.HEAD:
            _alembic_upgrade(conn)
    return found


def _alembic_upgrade(conn: sa.Connection) -> None:
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = conn
    command.upgrade(config, "head")


@contextlib.contextmanager
def _one_migrator(engine: sa.Engine, where: StoreUrl) -> Iterator[sa.Connection]:
    """A connection in a transaction that no other clientlab migrates beside; committed at the end."""
    if where.backend == "postgresql":
        with engine.begin() as conn:
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK_KEY})
            yield conn
        return
    # the folder, not the file: closing any descriptor of the database file would drop this
    # process's POSIX locks on it, SQLite's own, and another process could then reset the WAL
    folder = os.open(where.path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        with engine.begin() as conn:
            yield conn
    finally:
        os.close(folder)
