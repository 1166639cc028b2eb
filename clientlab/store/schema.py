"""The store's tables, one definition for SQLite and PostgreSQL (SQLAlchemy Core).

- runs:   a `clientlab run` — when, the machine, the options, its status (running / complete /
          interrupted / failed / killed), the process that runs it (pid, its start time, the boot and
          host), `uid` (the same in every store the run is copied to) and the host's fingerprint;
- cells:  one driver × scenario — status (ok / failed / unsupported / not-installed), reason, the
          figures, the driver's versions, the verification outcome, and its fingerprint once finished;
- trials: one trial of a cell — kind (verify / warmup / timed / profiled / disturbed / fault),
          wall, CPU, peak RSS, set-up time, the server's counters summary, problems found, and
          which of the cell's driver processes ran it (`process`; NULL in trials stored before);
- profiles: a profiler's folded stacks of a cell's profiled trials (clientlab/profile).

Documents (machine, config, params, figures, ...) are JSON text. Times are seconds since the
epoch. Migrations (clientlab/store/migrations) must end at exactly these tables: a test compares.
"""

from __future__ import annotations

import sqlalchemy as sa

HEAD = "0004"  # the newest migration; opening a store at it needs no Alembic at all
REVISIONS = ("0001", "0002", "0003", "0004")

metadata = sa.MetaData()

runs = sa.Table(
    "runs", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("started_at", sa.Double, nullable=False),
    sa.Column("finished_at", sa.Double),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("pid", sa.Integer),
    sa.Column("machine", sa.Text, nullable=False),
    sa.Column("config", sa.Text, nullable=False),
    sa.Column("boot_id", sa.Text),
    sa.Column("pid_start", sa.BigInteger),
    sa.Column("host", sa.Text),
    sa.Column("uid", sa.Text),
    sa.Column("host_fingerprint", sa.Text),
    sa.Index("runs_uid", "uid", unique=True),
    sqlite_autoincrement=True,  # run ids are shown to people: never reuse one
)

cells = sa.Table(
    "cells", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False),
    sa.Column("driver", sa.Text, nullable=False),
    sa.Column("scenario", sa.Text, nullable=False),
    sa.Column("params", sa.Text, nullable=False),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("reason", sa.Text),
    sa.Column("metric", sa.Text, nullable=False),
    sa.Column("figures", sa.Text),
    sa.Column("versions", sa.Text),
    sa.Column("started_at", sa.Double, nullable=False),
    sa.Column("finished_at", sa.Double),
    sa.Column("departures", sa.Text),
    sa.Column("fingerprint", sa.Text),
    sa.Index("cells_run", "run_id"),
    sa.Index("cells_fingerprint", "fingerprint"),
    sqlite_autoincrement=True,
)

trials = sa.Table(
    "trials", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("cell_id", sa.Integer, sa.ForeignKey("cells.id"), nullable=False),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("idx", sa.Integer, nullable=False),
    sa.Column("ok", sa.Integer, nullable=False),
    sa.Column("wall_s", sa.Double),
    sa.Column("user_s", sa.Double),
    sa.Column("sys_s", sa.Double),
    sa.Column("peak_rss_kb", sa.BigInteger),
    sa.Column("startup_s", sa.Double),
    sa.Column("setup_s", sa.Double),
    sa.Column("work_requests", sa.BigInteger),
    sa.Column("work_bytes", sa.BigInteger),
    sa.Column("server", sa.Text),
    sa.Column("problems", sa.Text),
    sa.Column("noise", sa.Text),
    sa.Column("page_faults", sa.BigInteger),
    sa.Column("wakeups", sa.BigInteger),
    sa.Column("process", sa.Integer),   # which of the cell's driver processes ran it: 0 its first
    sa.Index("trials_cell", "cell_id"),
    sqlite_autoincrement=True,
)

profiles = sa.Table(
    "profiles", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("cell_id", sa.Integer, sa.ForeignKey("cells.id"), nullable=False),
    sa.Column("profiler", sa.Text, nullable=False),
    sa.Column("samples", sa.BigInteger, nullable=False),
    sa.Column("folded", sa.Text, nullable=False),   # folded stacks, one `stack count` a line
    sa.Column("meta", sa.Text),                     # its trials, requests, CPU, wall times, blind spots
    sa.Index("profiles_cell", "cell_id"),
    sqlite_autoincrement=True,
)

# the columns holding JSON text, per table
JSON_COLUMNS = {
    "runs": ("machine", "config"),
    "cells": ("params", "figures", "versions", "departures"),
    "trials": ("server", "problems", "noise"),
    "profiles": ("meta",),
}

# Alembic's own bookkeeping table, as Alembic makes it: a new store is stamped without loading Alembic
alembic_version = sa.Table(
    "alembic_version", sa.MetaData(),
    sa.Column("version_num", sa.String(32), nullable=False),
    sa.PrimaryKeyConstraint("version_num", name="alembic_version_pkc"),
)
