"""The results store: every trial is committed the moment it completes (a killed run loses nothing).

One schema (schema.py) on SQLite (the embedded default, WAL) or PostgreSQL (a team store). A
`running` run whose process is gone (SIGKILL, OOM, power loss) is marked `killed` by the next
command that opens the store, its finished cells kept and the cell it was in marked failed.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from clientlab.errors import LabError, LabInputError
from clientlab.record import Cell, CellFigures, Finding, RunConfig
from clientlab.store import engine as engines
from clientlab.store import migrate
from clientlab.store.fingerprint import cell_fingerprint, host_fingerprint
from clientlab.store.process import run_process_gone, this_process
from clientlab.store.schema import JSON_COLUMNS, cells, runs, trials
from clientlab.store.url import StoreUrl, chosen, parse

_INSERT_TRIAL = trials.insert()
KILLED_CELL = "killed: the lab was killed while this cell ran (its finished trials are kept)"


def ended_cell(status: str) -> str:
    """The reason of a cell still `running` when its run ended `status` (interrupted, failed: a
    stop that came between the cell's start and its finish)."""
    return f"{status}: the run ended while this cell ran (its finished trials are kept)"


@dataclass
class Trial:
    """One measured (or failed) trial."""

    kind: str
    idx: int
    ok: bool
    wall_s: float | None = None
    user_s: float | None = None
    sys_s: float | None = None
    peak_rss_kb: int | None = None
    startup_s: float | None = None
    setup_s: float | None = None
    work_requests: int | None = None
    work_bytes: int | None = None
    server: dict | None = None
    problems: list[str] | None = None
    noise: dict | None = None     # steal and other processes' CPU during the trial (clientlab/measuring/noise.py)
    page_faults: int | None = None  # minor + major faults of the driver's tree in the timed phase
    wakeups: int | None = None      # voluntary context switches of the tree's threads in the timed phase
    # which of the cell's driver processes ran it: 0 its first, counted up at every process the cell
    # was given (a fork, a process held in an allocator mode, a fresh process per trial); None: not
    # known (stored before it was recorded)
    process: int | None = None


def encoded(value: Any) -> str | None:
    return json.dumps(value) if value is not None else None


def decoded(table: str, row: sa.RowMapping) -> dict[str, Any]:
    """A row as a dict, its JSON columns read (NULL stays None)."""
    out = dict(row)
    for key in JSON_COLUMNS[table]:
        out[key] = json.loads(out[key]) if out[key] else None
    return out


def open_store(where: str | Path | None = None) -> Store:
    """The store asked for: `--store URL` > $CLIENTLAB_STORE > the lab's SQLite file."""
    return Store(chosen(where))


def upgrade_store(where: str | Path) -> tuple[str, str]:
    """Bring the store's schema to this clientlab's (`clientlab store migrate`): (what it names
    the store, the revision it was at)."""
    location = parse(where)
    engine = engines.create(location)
    try:
        return location.shown, migrate.upgrade(engine, location)
    except sa.exc.OperationalError as e:
        raise engines.unreachable(location, e) from None
    finally:
        engine.dispose()


class Store:
    """Access to a results store (an SQLite file, or a PostgreSQL URL)."""

    def __init__(self, where: Path | str, upgrade_shared: bool = False):
        self.location: StoreUrl = parse(where)
        self.path: Path | None = self.location.path  # the SQLite file; None for a server store
        self.where = self.location.shown             # what messages name (no password)
        self.engine = engines.create(self.location)
        try:
            migrate.ensure(self.engine, self.location, upgrade_shared)
        except sa.exc.OperationalError as e:
            self.engine.dispose()
            raise engines.unreachable(self.location, e) from None
        except LabError:
            self.engine.dispose()
            raise
        self.mark_killed_runs()

    def mark_killed_runs(self) -> list[int]:
        """Mark every `running` run whose process is gone as killed (its finished cells stay as
        they are; the cell it was in is failed, with its trials kept), and fail a cell left
        `running` in a run that ended (a store written before finish_run closed them). Returns
        the killed runs' ids. Statuses and reasons only: no figure or trial changes."""
        with self.engine.begin() as conn:
            ended = conn.execute(sa.select(cells.c.id, runs.c.status, runs.c.finished_at).join(runs).where(
                cells.c.status == "running", runs.c.status != "running")).all()
            for cell_id, status, finished_at in ended:
                conn.execute(cells.update().where(cells.c.id == cell_id, cells.c.status == "running")
                             .values(status="failed", reason=ended_cell(status),
                                     finished_at=sa.func.coalesce(cells.c.finished_at, finished_at)))
            running = conn.execute(sa.select(runs).where(runs.c.status == "running")).mappings().all()
            killed = [row["id"] for row in running if run_process_gone(row)]
            for run_id in killed:
                # the last sign of life: the newest cell start or finish, or the run's own start
                last = conn.execute(sa.select(sa.func.max(sa.func.coalesce(cells.c.finished_at, cells.c.started_at)))
                                    .where(cells.c.run_id == run_id)).scalar()
                conn.execute(cells.update().where(cells.c.run_id == run_id, cells.c.status == "running")
                             .values(status="failed", reason=KILLED_CELL,
                                     finished_at=sa.func.coalesce(cells.c.finished_at, last)))
                conn.execute(runs.update().where(runs.c.id == run_id, runs.c.status == "running")
                             .values(status="killed", finished_at=sa.func.coalesce(last, runs.c.started_at)))
        return killed

    def close(self) -> None:
        self.engine.dispose()

    def _write(self, statement: sa.Executable, values: dict[str, Any] | None = None) -> sa.CursorResult:
        with self.engine.begin() as conn:  # committed at once: a killed run keeps it
            return conn.execute(statement, values)

    def _one(self, statement: sa.Executable) -> sa.RowMapping | None:
        with self.engine.connect() as conn:
            return conn.execute(statement).mappings().first()

    def _all(self, statement: sa.Executable) -> list[sa.RowMapping]:
        with self.engine.connect() as conn:
            return conn.execute(statement).mappings().all()

    # -- writing ------------------------------------------------------------------------

    def start_run(self, machine: dict, config: dict, uid: str | None = None) -> int:
        """A run as started by this process; `uid` (default: a new uuid4 hex) names it in every store."""
        uid = uid or uuid.uuid4().hex
        try:
            return int(self._write(runs.insert().values(
                started_at=time.time(), status="running", machine=json.dumps(machine), config=json.dumps(config),
                uid=uid, host_fingerprint=host_fingerprint(machine), **this_process())).inserted_primary_key[0])
        except sa.exc.IntegrityError:
            raise LabInputError(f"a run with uid {uid} is already stored in {self.where}") from None

    def finish_run(self, run_id: int, status: str) -> None:
        """The run ended `status`; a cell of it still `running` (the stop came between its start
        and its finish) is failed with the reason, its trials kept: no cell of an ended run is
        left running."""
        now = time.time()
        with self.engine.begin() as conn:
            conn.execute(cells.update().where(cells.c.run_id == run_id, cells.c.status == "running")
                         .values(status="failed", reason=ended_cell(status), finished_at=now))
            conn.execute(runs.update().where(runs.c.id == run_id).values(status=status, finished_at=now))

    def start_cell(self, run_id: int, driver: str, scenario: str, params: dict, metric: str,
                   departures: list[str] | None = None) -> int:
        """A cell as started; `departures` are the driver's declared settings of its own."""
        return int(self._write(cells.insert().values(
            run_id=run_id, driver=driver, scenario=scenario, params=json.dumps(params), status="running",
            metric=metric, started_at=time.time(), departures=json.dumps(departures) if departures else None,
        )).inserted_primary_key[0])

    def finish_cell(self, cell_id: int, status: str, reason: str | None, figures: CellFigures | dict | None,
                    versions: dict | None) -> None:
        """A cell's outcome, and its fingerprint (what it measured, with what, where)."""
        if isinstance(figures, CellFigures):
            figures = figures.to_json()
        cell = self._one(sa.select(cells.c.driver, cells.c.scenario, cells.c.params, runs.c.config,
                                   runs.c.host_fingerprint).join(runs).where(cells.c.id == cell_id))
        fingerprint = None
        if cell is not None:
            fingerprint = cell_fingerprint({**cell, "params": json.loads(cell["params"]), "versions": versions},
                                           json.loads(cell["config"]), cell["host_fingerprint"])
        self._write(cells.update().where(cells.c.id == cell_id).values(
            status=status, reason=reason, figures=encoded(figures), versions=encoded(versions),
            finished_at=time.time(), fingerprint=fingerprint))

    def update_config(self, run_id: int, **items: Any) -> None:
        """Add what is only known once the run is under way (e.g. the measured network)."""
        with self.engine.begin() as conn:
            config = json.loads(conn.execute(sa.select(runs.c.config).where(runs.c.id == run_id)).scalar_one())
            conn.execute(runs.update().where(runs.c.id == run_id).values(config=json.dumps({**config, **items})))

    def set_findings(self, cell_id: int, findings: list[Finding] | list[dict]) -> None:
        """Keep a cell's diagnosis with its figures (rewritten when a run is diagnosed again)."""
        self.add_to_figures(cell_id, findings=[f.to_json() if isinstance(f, Finding) else f for f in findings])

    def add_to_figures(self, cell_id: int, **items: object) -> None:
        """Keep what was learnt of a cell after its figures (its diagnosis, its plain loop's ratio)
        with them, each under its own key (rewritten when learnt again)."""
        with self.engine.begin() as conn:
            text = conn.execute(sa.select(cells.c.figures).where(cells.c.id == cell_id)).scalar()
            figures = json.loads(text) if text else {}
            figures.update(items)
            conn.execute(cells.update().where(cells.c.id == cell_id).values(figures=json.dumps(figures)))

    def add_trial(self, cell_id: int, trial: Trial) -> None:
        # parameters apart from the (cached) statement: a trial is stored at the cost of its commit
        self._write(_INSERT_TRIAL, {
            "cell_id": cell_id, "kind": trial.kind, "idx": trial.idx, "ok": int(trial.ok), "wall_s": trial.wall_s,
            "user_s": trial.user_s, "sys_s": trial.sys_s, "peak_rss_kb": trial.peak_rss_kb,
            "startup_s": trial.startup_s, "setup_s": trial.setup_s, "work_requests": trial.work_requests,
            "work_bytes": trial.work_bytes, "server": encoded(trial.server),
            "problems": json.dumps(trial.problems) if trial.problems else None, "noise": encoded(trial.noise),
            "page_faults": trial.page_faults, "wakeups": trial.wakeups, "process": trial.process})

    # -- reading ------------------------------------------------------------------------

    def resolve(self, ref: str) -> int:
        """A run id from 'last' or a number; a clear error when there is no such run."""
        if ref == "last":
            last = self._one(sa.select(sa.func.max(runs.c.id).label("id")))
            if last["id"] is None:
                raise LabInputError(f"no runs stored yet in {self.where}")
            return int(last["id"])
        if not ref.isdigit():
            raise LabInputError(f"'{ref}' is not a run id (a number, or 'last')")
        if self._one(sa.select(runs.c.id).where(runs.c.id == int(ref))) is None:
            raise LabInputError(f"no run {ref} in {self.where}")
        return int(ref)

    def resolve_all(self, refs: tuple[str, ...] | list[str]) -> list[int]:
        """Run ids from numbers, 'last' and ranges such as 3-7, in the order given."""
        ids: list[int] = []
        for ref in refs:
            first, dash, last = ref.partition("-")
            if dash and first.isdigit() and last.isdigit():
                if int(last) < int(first):
                    raise LabInputError(f"'{ref}': a range goes from the lower run id to the higher")
                ids += [self.resolve(str(i)) for i in range(int(first), int(last) + 1)]
            else:
                ids.append(self.resolve(ref))
        return ids

    def run(self, run_id: int) -> dict[str, Any]:
        row = decoded("runs", self._one(sa.select(runs).where(runs.c.id == run_id)))
        if row["status"] == "running" and run_process_gone(row):
            row["status"] = "killed"  # gone since this store was opened (mark_killed_runs marks it)
        return row

    def cells(self, run_id: int) -> list[dict[str, Any]]:
        out = []
        for row in self._all(sa.select(cells).where(cells.c.run_id == run_id).order_by(cells.c.id)):
            cell = decoded("cells", row)
            cell["departures"] = cell["departures"] or []
            out.append(cell)
        return out

    def cell_records(self, run_id: int) -> list[Cell]:
        """The run's cells, typed (clientlab/record.py), in the order they were started."""
        return [Cell.from_json(c) for c in self.cells(run_id)]

    def run_config(self, run_id: int) -> RunConfig:
        """The run's config, typed: what it ran and how, whichever command wrote it."""
        return RunConfig.from_json(self.run(run_id)["config"])

    def trials(self, cell_id: int) -> list[dict[str, Any]]:
        out = []
        for row in self._all(sa.select(trials).where(trials.c.cell_id == cell_id).order_by(trials.c.id)):
            trial = decoded("trials", row)
            trial["ok"] = bool(trial["ok"])
            out.append(trial)
        return out

    def runs(self, limit: int = 20) -> list[dict[str, Any]]:
        ids = [r["id"] for r in self._all(sa.select(runs.c.id).order_by(runs.c.id.desc()).limit(limit))]
        return [self.run(i) for i in ids]

    def run_ids(self) -> list[int]:
        """Every run's id, oldest first."""
        return [r["id"] for r in self._all(sa.select(runs.c.id).order_by(runs.c.id))]

    def count_runs(self) -> int:
        return int(self._one(sa.select(sa.func.count().label("n")).select_from(runs))["n"])

    def revision(self) -> str:
        with self.engine.connect() as conn:
            return migrate.revision(conn)
