"""Migrations: an SQLite store of the code before them is adopted with its rows; a new store and a
migrated one have the same schema; a store that is newer, or a team store that is behind, is refused."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory

from clientlab.errors import LabError
from clientlab.record import Finding, RunConfig
from clientlab.store import Store, migrate, schema
from clientlab.store.core import upgrade_store
from tests.store import legacy
from tests.store.testruns import MACHINE


def _old_store(path, sql: str = legacy.OLDEST_TRIALS) -> None:
    """A store as the code before migrations left it: a finished run, a cell, a trial."""
    with sqlite3.connect(path) as conn:
        conn.executescript(sql)
        conn.execute("INSERT INTO runs (started_at, finished_at, status, pid, machine, config) "
                     "VALUES (1, 2, 'complete', 1, ?, '{\"net\": {\"profile\": \"loopback\"}}')", (json.dumps(MACHINE),))
        conn.execute("INSERT INTO runs (started_at, status, pid, machine, config) VALUES (3, 'complete', 1, '{}', '{}')")
        conn.execute("INSERT INTO cells (run_id, driver, scenario, params, status, metric, figures, versions, "
                     "started_at, finished_at) VALUES (1, 'd', 'get-small', '{}', 'ok', 'requests', "
                     "'{\"throughput\": 7.5}', '{\"lib\": \"1\"}', 1, 2)")
        conn.execute("INSERT INTO trials (cell_id, kind, idx, ok, wall_s) VALUES (1, 'timed', 0, 1, 0.25)")


def test_an_old_sqlite_store_opens_keeps_its_rows_and_gains_the_new_columns(tmp_path):
    _old_store(tmp_path / "old.sqlite")
    store = Store(tmp_path / "old.sqlite")
    assert store.revision() == schema.HEAD and store.count_runs() == 2
    run, other = store.run(1), store.run(2)
    assert (run["status"], run["machine"], run["host"]) == ("complete", MACHINE, None)
    assert len(run["uid"]) == 32 and run["uid"] != other["uid"] and run["host_fingerprint"]
    cell = store.cells(1)[0]
    assert (cell["figures"], cell["departures"], len(cell["fingerprint"])) == ({"throughput": 7.5}, [], 64)
    trial = store.trials(cell["id"])[0]
    assert (trial["wall_s"], trial["noise"], trial["page_faults"], trial["wakeups"]) == (0.25, None, None, None)
    new_run = store.start_run(MACHINE, {})
    assert new_run == 3 and store.run(new_run)["uid"] not in (run["uid"], other["uid"])


def test_several_processes_opening_an_old_store_at_once_migrate_it_once(tmp_path):
    _old_store(tmp_path / "old.sqlite", legacy.SCHEMA)
    code = "import sys; from clientlab.store import Store; print(Store(sys.argv[1]).run(1)['uid'])"
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "old.sqlite")], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    answers = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e for _, e in answers]
    assert len({out for out, _ in answers}) == 1  # the uid was given once, and every process reads it


def test_migrations_end_at_exactly_the_tables_of_schema_py(store_url):
    engine = Store(store_url).engine  # made by create_all; now the same by migrations, on an empty store
    with engine.begin() as conn:
        schema.metadata.drop_all(conn)
        schema.alembic_version.drop(conn)
    with engine.begin() as conn:
        migrate._alembic_upgrade(conn)
    with engine.connect() as conn:
        differences = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), schema.metadata)
        assert differences == [] and migrate.revision(conn) == schema.HEAD


def test_the_head_revision_the_store_checks_is_alembics_head():
    scripts = ScriptDirectory(str(migrate.MIGRATIONS))
    assert scripts.get_heads() == [schema.HEAD]
    assert sorted(r.revision for r in scripts.walk_revisions()) == list(schema.REVISIONS)


def test_a_store_newer_than_this_clientlab_is_refused(store_url):
    store = Store(store_url)
    with store.engine.begin() as conn:
        conn.execute(schema.alembic_version.update().values(version_num="0099"))
    with pytest.raises(LabError, match="revision 0099, newer than this clientlab knows .*update clientlab"):
        Store(store_url)


@pytest.mark.xdist_group("postgres")
def test_a_team_store_that_is_behind_is_upgraded_only_by_store_migrate(pg_url):
    engine = sa.create_engine(pg_url.replace("postgresql://", "postgresql+psycopg://"))
    with engine.begin() as conn:
        from alembic import command
        from alembic.config import Config

        config = Config()
        config.set_main_option("script_location", str(migrate.MIGRATIONS))
        config.attributes["connection"] = conn
        command.upgrade(config, "0001")
        conn.execute(sa.text("INSERT INTO runs (started_at, status, machine, config) VALUES (1, 'complete', '{}', '{}')"))
    engine.dispose()
    with pytest.raises(LabError, match="revision 0001; this clientlab needs " + schema.HEAD + ": run `clientlab store migrate"):
        Store(pg_url)
    assert upgrade_store(pg_url)[1] == "0001" and upgrade_store(pg_url)[1] == schema.HEAD
    assert len(Store(pg_url).run(1)["uid"]) == 32


def test_an_old_stores_cells_and_config_read_as_typed_records(tmp_path):
    _old_store(tmp_path / "old.sqlite")
    store = Store(tmp_path / "old.sqlite")
    cell = store.cell_records(1)[0]
    assert cell.measured and (cell.figures.throughput, cell.figures.modes, cell.departures) == (7.5, None, ())
    assert cell.to_json() == store.cells(1)[0]
    assert store.run_config(1).net_profile == "loopback" and store.run_config(2) == RunConfig()
    store.set_findings(cell.id, [Finding("r", "warn", "t", "e", "f")])
    assert store.cell_records(1)[0].figures.findings == (Finding("r", "warn", "t", "e", "f"),)
    assert store.cells(1)[0]["figures"] == {"throughput": 7.5, "findings": [
        {"rule": "r", "severity": "warn", "title": "t", "evidence": "e", "fix": "f"}]}
