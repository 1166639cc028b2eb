"""One job on a lab host: an ordinary `clientlab run` (or `clientlab experiment`) there (its own
bench server on the host's loopback, its placement, the host's run lock), into a store of its own
that lives as long as the job, its run brought back as a document with the job's uid and the fleet
run's record in its config."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from clientlab import paths
from clientlab.store import Store

RUN_EXITS_WITH_A_RUN = (0, 1)   # done; done with failed cells: either way the run is the job's result
COMMANDS = ("run", "experiment")   # what a job may run: nothing else, whatever the queue says
JOB_DIR = "{job_dir}"   # in a job's arguments: its folder on the host (where its `files` are written)
LOG_TAIL_LINES = 8
STORE_ENV = "CLIENTLAB_STORE"
JOB_DIR_PREFIX = "clientlab-job-"   # then the worker's pid: a folder whose worker is gone is stale
_current: subprocess.Popen | None = None
_current_lock = threading.Lock()


# the job's `clientlab run` gets SIGTERM when the worker dies, even by SIGKILL, so that a job whose
# worker was lost stops measuring (and frees the host's run lock) at once (util-linux's setpriv)
DIE_WITH_WORKER = ["setpriv", "--pdeathsig", "TERM", "--"]


def remove_stale_job_dirs() -> None:
    """Job folders of workers that are gone (killed mid-job: their TemporaryDirectory stayed)."""
    for folder in Path(tempfile.gettempdir()).glob(f"{JOB_DIR_PREFIX}*-*"):
        pid = folder.name[len(JOB_DIR_PREFIX):].split("-")[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(folder, ignore_errors=True)


def _job_home(folder: Path) -> Path:
    """A lab data folder for the job: the host's own (its bench server, certificates, builds)
    seen through links, with a results store of the job's own."""
    home = folder / "lab"
    home.mkdir()
    lab = paths.lab_home()
    if lab.is_dir():
        for entry in lab.iterdir():
            if not entry.name.startswith("results.sqlite") and entry.name != "scratch":
                (home / entry.name).symlink_to(entry)
    return home


def _tail(log: Path) -> str:
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    return " | ".join(lines[-LOG_TAIL_LINES:]) or "no output"


def _document(home: Path, job: dict, host: str) -> dict | None:
    """The job's run as a document, with the job's uid and the fleet's record; None when the run
    never started."""
    from clientlab.store.transfer import run_document

    db = home / "results.sqlite"
    if not db.exists():
        return None
    store = Store(db)
    try:
        runs = store.runs(limit=1)
        if not runs:
            return None
        doc = run_document(store, int(runs[0]["id"]))
    finally:
        store.close()
    return with_fleet_record(doc, job, host)


def with_fleet_record(doc: dict, job: dict, host: str) -> dict:
    """The document as the job's: its uid, and in its config which fleet run, job and host it is."""
    run = doc["run"]
    run["uid"] = job["uid"]
    run["config"] = {**run["config"], "fleet": {"uid": job["fleet"], "job": job["index"], "jobs": job["jobs"],
                                                  "host": host, "baseline": job["baseline"]}}
    return doc


def job_argv(job: dict, folder: Path) -> list[str]:
    """The job's `clientlab` command line, its files written into its folder first (by their bare
    names: nothing lands outside it)."""
    command = job.get("command", "run")
    if command not in COMMANDS:
        raise ValueError(f"a job runs `clientlab {' or '.join(COMMANDS)}`, not {command!r}")
    for name, text in (job.get("files") or {}).items():
        (folder / Path(name).name).write_text(text)
    args = [arg.replace(JOB_DIR, str(folder)) for arg in job["args"]]
    return [*DIE_WITH_WORKER, sys.executable, "-m", "clientlab", command, *args]


def run(job: dict, host: str) -> dict:
    """Measure one job here; never raises: what happened is in the answer (`ok`, `error`)."""
    global _current
    started = time.monotonic()
    command = job.get("command", "run")
    with tempfile.TemporaryDirectory(prefix=f"{JOB_DIR_PREFIX}{os.getpid()}-") as tmp:
        home = _job_home(Path(tmp))
        log = Path(tmp) / "run.log"
        try:
            argv = job_argv(job, Path(tmp))
        except (ValueError, OSError) as exc:
            return {"ok": False, "exit": None, "error": f"{host}: {exc}", "doc": None, "host": host,
                    "seconds": time.monotonic() - started}
        # the job's run goes to the job's own store, whatever store the host names for its own runs
        env = {**{k: v for k, v in os.environ.items() if k != STORE_ENV}, "CLIENTLAB_HOME": str(home), "COLUMNS": "200"}
        with open(log, "wb") as out, _current_lock:
            _current = subprocess.Popen(argv, cwd=paths.ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                        stderr=out)
        code = _current.wait()
        try:
            doc, why = _document(home, job, host), _tail(log)
        except Exception as exc:  # noqa: BLE001 - the coordinator must hear why, not a traceback
            doc, why = None, f"its run could not be read back: {exc}"
        ok = code in RUN_EXITS_WITH_A_RUN and doc is not None
        error = None if ok else f"`clientlab {command}` on {host} exited {code}: {why}"
    return {"ok": ok, "exit": code, "error": error, "doc": doc, "host": host,
            "seconds": time.monotonic() - started}


def stop_current(timeout_s: float = 30) -> None:
    """Stop the job's run (it keeps what it measured in its store, which goes with the job)."""
    proc = _current
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
