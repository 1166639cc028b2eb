"""Where a store is: `--store URL` > $CLIENTLAB_STORE > the SQLite file in the lab's home.

Accepted: `postgresql://user[:password]@host[:port]/db` (also `postgres://`, `postgresql+psycopg://`),
`sqlite:///path`, or a plain file path (SQLite).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from clientlab import paths
from clientlab.errors import LabInputError

STORE_ENV = "CLIENTLAB_STORE"
TEAM_STORE_ENV = "CLIENTLAB_TEAM_STORE"
_POSTGRES_SCHEMES = ("postgresql://", "postgres://", "postgresql+psycopg://")


@dataclass(frozen=True)
class StoreUrl:
    """A parsed store location: the back-end, SQLAlchemy's URL, and the file of an SQLite store."""

    backend: str  # "sqlite" or "postgresql"
    url: sa.URL
    path: Path | None = None

    @property
    def shown(self) -> str:
        """What messages name: the file, or the URL with its password hidden."""
        if self.path is not None:
            return str(self.path)
        return self.url.set(drivername="postgresql").render_as_string(hide_password=True)

    @property
    def server(self) -> str:
        """host:port of a PostgreSQL store (a socket directory when the host is one)."""
        host = self.url.host or self.url.query.get("host") or "localhost"
        return f"{host}:{self.url.port or 5432}"


def chosen(explicit: str | Path | None = None) -> str | Path:
    """The store asked for: the option, else $CLIENTLAB_STORE, else the lab's own SQLite file."""
    return explicit or os.environ.get(STORE_ENV) or paths.results_db()


def parse(where: str | Path) -> StoreUrl:
    if isinstance(where, Path):
        return StoreUrl("sqlite", sa.URL.create("sqlite", database=str(where)), where)
    text = where.strip()
    if text.startswith(_POSTGRES_SCHEMES):
        try:
            url = sa.make_url("postgresql+psycopg://" + text.split("://", 1)[1])
        except sa.exc.ArgumentError as e:
            raise LabInputError(f"'{_hidden(text)}' is not a PostgreSQL URL ({e}): "
                                "use postgresql://user[:password]@host[:port]/database") from None
        if not url.database:
            raise LabInputError(f"'{_hidden(text)}' names no database: use postgresql://user@host:port/database")
        return StoreUrl("postgresql", url)
    if text.startswith("sqlite:///"):
        return parse(Path(text.removeprefix("sqlite:///")))  # sqlite:////abs/path, as SQLAlchemy reads it
    if "://" in text:
        raise LabInputError(f"'{_hidden(text)}' is not a store: use postgresql://user@host:port/database, "
                            "sqlite:///path/to/file.sqlite or a file path")
    if not text:
        raise LabInputError("the store is empty: give a postgresql:// URL, an sqlite:/// URL or a file path")
    return parse(Path(text).expanduser())


def _hidden(text: str) -> str:
    """`text` with what looks like a URL's password replaced, for error messages."""
    scheme, sep, rest = text.partition("://")
    userinfo, at, host = rest.rpartition("@")
    if not sep or not at or ":" not in userinfo:
        return text
    return f"{scheme}://{userinfo.split(':', 1)[0]}:***@{host}"
