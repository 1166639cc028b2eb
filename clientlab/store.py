"""The results store: one SQLite file; every trial is committed the moment it completes.

Schema (one row each):
- runs:   a `clientlab run` — when, the machine, the options, its status
          (running / complete / interrupted / failed / killed), and the process that runs it
          (pid, its start time, the boot and host): a `running` run whose process is gone
          (SIGKILL, OOM, power loss) is marked `killed` by the next command that opens the store,
          its finished cells kept and the cell it was in marked failed;
- cells:  one driver × scenario — status (ok / failed / unsupported / not-installed), reason,
          the figures, the driver's versions, the verification outcome;
- trials: one trial of a cell — kind (verify / warmup / timed), wall, CPU, peak RSS, set-up
          time, the server's counters summary, and problems found.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clientlab.errors import LabInputError

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    started_at REAL NOT NULL,
    finished_at REAL,
    status TEXT NOT NULL,
    pid INTEGER,
    machine TEXT NOT NULL,
    config TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS cells (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    driver TEXT NOT NULL,
    scenario TEXT NOT NULL,
    params TEXT NOT NULL,
    status TEXT NOT NULL,
    reason TEXT,
    metric TEXT NOT NULL,
    figures TEXT,
    versions TEXT,
    started_at REAL NOT NULL,
    finished_at REAL
);
CREATE TABLE IF NOT EXISTS trials (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    cell_id INTEGER NOT NULL REFERENCES cells(id),
    kind TEXT NOT NULL,
    idx INTEGER NOT NULL,
    ok INTEGER NOT NULL,
    wall_s REAL,
    user_s REAL,
    sys_s REAL,
    peak_rss_kb INTEGER,
    startup_s REAL,
    setup_s REAL,
    work_requests INTEGER,
    work_bytes INTEGER,
    server TEXT,
    problems TEXT,
    noise TEXT,
    page_faults INTEGER,
    wakeups INTEGER
);
CREATE INDEX IF NOT EXISTS cells_run ON cells(run_id);
CREATE INDEX IF NOT EXISTS trials_cell ON trials(cell_id);
"""


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
    noise: dict | None = None     # steal and other processes' CPU during the trial (clientlab/noise.py)
    page_faults: int | None = None  # minor + major faults of the driver's tree in the timed phase
    wakeups: int | None = None      # voluntary context switches of the tree's threads in the timed phase


RUN_PROCESS_COLUMNS = {"boot_id": "TEXT", "pid_start": "INTEGER", "host": "TEXT"}
TRIAL_COLUMNS = {"noise": "TEXT", "page_faults": "INTEGER", "wakeups": "INTEGER"}
CELL_COLUMNS = {"departures": "TEXT"}
KILLED_CELL = "killed: the lab was killed while this cell ran (its finished trials are kept)"


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def _process_start(pid: int) -> int | None:
    """When process `pid` started (clock ticks since boot): with the boot id, it tells a process
    from a later one that got the same pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat[stat.rindex(")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _run_process_gone(row: sqlite3.Row | dict) -> bool:
    """True when the process that ran a `running` run is certainly gone: another boot of this
    machine, no such pid, or a pid that now belongs to a process started later. A run of another
    host (a store on a shared disk) is never taken for gone."""
    keys = row.keys()
    host = row["host"] if "host" in keys else None
    boot = row["boot_id"] if "boot_id" in keys else None
    start = row["pid_start"] if "pid_start" in keys else None
    if host is not None and host != socket.gethostname():
        return False
    if boot is not None and boot != _boot_id():
        return True
    if not _pid_alive(row["pid"]):
        return True
    now = _process_start(row["pid"])
    return start is not None and now is not None and now != start


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Store:
    """Access to the results database."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.db = sqlite3.connect(path, timeout=30)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.executescript(SCHEMA)
        # stores made before a column existed get it added (older rows read it as NULL)
        have = {row["name"] for row in self.db.execute("PRAGMA table_info(trials)")}
        for column, kind in TRIAL_COLUMNS.items():
            if column not in have:
                self.db.execute(f"ALTER TABLE trials ADD COLUMN {column} {kind}")
        have = {row["name"] for row in self.db.execute("PRAGMA table_info(cells)")}
        for column, kind in CELL_COLUMNS.items():
            if column not in have:
                self.db.execute(f"ALTER TABLE cells ADD COLUMN {column} {kind}")
        have = {row["name"] for row in self.db.execute("PRAGMA table_info(runs)")}
        for column, kind in RUN_PROCESS_COLUMNS.items():
            if column not in have:
                self.db.execute(f"ALTER TABLE runs ADD COLUMN {column} {kind}")
        self.db.commit()
        self.mark_killed_runs()

    def mark_killed_runs(self) -> list[int]:
        """Mark every `running` run whose process is gone as killed (its finished cells stay as
        they are; the cell it was in is failed, with its trials kept). Returns their ids."""
        killed = [row["id"] for row in self.db.execute("SELECT * FROM runs WHERE status = 'running'")
                  if _run_process_gone(row)]
        for run_id in killed:
            # the last sign of life: the newest cell start or finish, or the run's own start
            last = self.db.execute(
                "SELECT MAX(COALESCE(finished_at, started_at)) AS t FROM cells WHERE run_id = ?", (run_id,)
            ).fetchone()["t"]
            self.db.execute("UPDATE cells SET status = 'failed', reason = ?, finished_at = COALESCE(finished_at, ?) "
                            "WHERE run_id = ? AND status = 'running'", (KILLED_CELL, last, run_id))
            self.db.execute("UPDATE runs SET status = 'killed', finished_at = COALESCE(?, started_at) "
                            "WHERE id = ? AND status = 'running'", (last, run_id))
        if killed:
            self.db.commit()
        return killed

    def close(self) -> None:
        self.db.close()

    # -- writing ------------------------------------------------------------------------

    def start_run(self, machine: dict, config: dict) -> int:
        cur = self.db.execute(
            "INSERT INTO runs (started_at, status, pid, boot_id, pid_start, host, machine, config) "
            "VALUES (?, 'running', ?, ?, ?, ?, ?, ?)",
            (time.time(), os.getpid(), _boot_id(), _process_start(os.getpid()), socket.gethostname(),
             json.dumps(machine), json.dumps(config)),
        )
        self.db.commit()
        return int(cur.lastrowid)

    def finish_run(self, run_id: int, status: str) -> None:
        self.db.execute("UPDATE runs SET status = ?, finished_at = ? WHERE id = ?", (status, time.time(), run_id))
        self.db.commit()

    def start_cell(self, run_id: int, driver: str, scenario: str, params: dict, metric: str,
                   departures: list[str] | None = None) -> int:
        """A cell as started; `departures` are the driver's declared settings of its own."""
        cur = self.db.execute(
            "INSERT INTO cells (run_id, driver, scenario, params, status, metric, started_at, departures) "
            "VALUES (?, ?, ?, ?, 'running', ?, ?, ?)",
            (run_id, driver, scenario, json.dumps(params), metric, time.time(),
             json.dumps(departures) if departures else None),
        )
        self.db.commit()
        return int(cur.lastrowid)

    def finish_cell(self, cell_id: int, status: str, reason: str | None, figures: dict | None,
                    versions: dict | None) -> None:
        self.db.execute(
            "UPDATE cells SET status = ?, reason = ?, figures = ?, versions = ?, finished_at = ? WHERE id = ?",
            (status, reason, json.dumps(figures) if figures is not None else None,
             json.dumps(versions) if versions is not None else None, time.time(), cell_id),
        )
        self.db.commit()

    def update_config(self, run_id: int, **items: Any) -> None:
        """Add what is only known once the run is under way (e.g. the measured network)."""
        row = self.db.execute("SELECT config FROM runs WHERE id = ?", (run_id,)).fetchone()
        config = {**json.loads(row["config"]), **items}
        self.db.execute("UPDATE runs SET config = ? WHERE id = ?", (json.dumps(config), run_id))
        self.db.commit()

    def set_findings(self, cell_id: int, findings: list[dict]) -> None:
        """Keep a cell's diagnosis with its figures (rewritten when a run is diagnosed again)."""
        row = self.db.execute("SELECT figures FROM cells WHERE id = ?", (cell_id,)).fetchone()
        figures = json.loads(row["figures"]) if row and row["figures"] else {}
        figures["findings"] = findings
        self.db.execute("UPDATE cells SET figures = ? WHERE id = ?", (json.dumps(figures), cell_id))
        self.db.commit()

    def add_trial(self, cell_id: int, trial: Trial) -> None:
        self.db.execute(
            "INSERT INTO trials (cell_id, kind, idx, ok, wall_s, user_s, sys_s, peak_rss_kb, startup_s, "
            "setup_s, work_requests, work_bytes, server, problems, noise, page_faults, wakeups) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (cell_id, trial.kind, trial.idx, int(trial.ok), trial.wall_s, trial.user_s, trial.sys_s,
             trial.peak_rss_kb, trial.startup_s, trial.setup_s, trial.work_requests, trial.work_bytes,
             json.dumps(trial.server) if trial.server is not None else None,
             json.dumps(trial.problems) if trial.problems else None,
             json.dumps(trial.noise) if trial.noise is not None else None, trial.page_faults,
             trial.wakeups),
        )
        self.db.commit()

    # -- reading ------------------------------------------------------------------------

    def resolve(self, ref: str) -> int:
        """A run id from 'last' or a number; a clear error when there is no such run."""
        if ref == "last":
            row = self.db.execute("SELECT MAX(id) AS id FROM runs").fetchone()
            if row["id"] is None:
                raise LabInputError(f"no runs stored yet in {self.path}")
            return int(row["id"])
        if not ref.isdigit():
            raise LabInputError(f"'{ref}' is not a run id (a number, or 'last')")
        if self.db.execute("SELECT 1 FROM runs WHERE id = ?", (int(ref),)).fetchone() is None:
            raise LabInputError(f"no run {ref} in {self.path}")
        return int(ref)

    def run(self, run_id: int) -> dict[str, Any]:
        row = dict(self.db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone())
        if row["status"] == "running" and _run_process_gone(row):
            row["status"] = "killed"  # gone since this store was opened (mark_killed_runs marks it)
        row["machine"] = json.loads(row["machine"])
        row["config"] = json.loads(row["config"])
        return row

    def cells(self, run_id: int) -> list[dict[str, Any]]:
        out = []
        for row in self.db.execute("SELECT * FROM cells WHERE run_id = ? ORDER BY id", (run_id,)):
            cell = dict(row)
            for key in ("params", "figures", "versions"):
                cell[key] = json.loads(cell[key]) if cell[key] else None
            cell["departures"] = json.loads(cell["departures"]) if cell["departures"] else []
            out.append(cell)
        return out

    def trials(self, cell_id: int) -> list[dict[str, Any]]:
        out = []
        for row in self.db.execute("SELECT * FROM trials WHERE cell_id = ? ORDER BY id", (cell_id,)):
            trial = dict(row)
            trial["ok"] = bool(trial["ok"])
            for key in ("server", "problems", "noise"):
                trial[key] = json.loads(trial[key]) if trial[key] else None
            out.append(trial)
        return out

    def runs(self, limit: int = 20) -> list[dict[str, Any]]:
        ids = [r["id"] for r in self.db.execute("SELECT id FROM runs ORDER BY id DESC LIMIT ?", (limit,))]
        return [self.run(i) for i in ids]
