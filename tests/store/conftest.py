"""PostgreSQL for the store's tests: one scratch cluster per test worker, a fresh database per test.
Tests using it belong in @pytest.mark.xdist_group("postgres") (one worker, one cluster)."""

from __future__ import annotations

import itertools

import pytest

from clientlab.store.pgcluster import ScratchCluster, binaries

_databases = itertools.count()


@pytest.fixture(scope="session")
def pg_cluster():
    if binaries() is None:
        pytest.skip("PostgreSQL is not installed (/usr/lib/postgresql/*/bin/initdb): ./setup.sh installs it")
    cluster = ScratchCluster().start()
    yield cluster
    cluster.stop()


@pytest.fixture
def pg_url(pg_cluster) -> str:
    """The URL of a new, empty database (password in it)."""
    return pg_cluster.create_database(f"t{next(_databases)}")


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.xdist_group("postgres"))])
def store_url(request, tmp_path) -> str:
    """A new store's location, on each back-end."""
    if request.param == "sqlite":
        return str(tmp_path / "results.sqlite")
    return request.getfixturevalue("pg_url")
