"""The schema stores had before migrations, as that code wrote it (literal SQL): the tests make
old stores with it to check that revision 0001 adopts them. It lacks the columns that code added
later with ALTER TABLE (cells.departures; runs.boot_id, pid_start, host); OLDEST_TRIALS also lacks
trials.noise, page_faults and wakeups, as the earliest stores do."""

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

OLDEST_TRIALS = SCHEMA.replace(",\n    noise TEXT,\n    page_faults INTEGER,\n    wakeups INTEGER\n", "\n")
