"""One batch on a lab host: an ordinary `clientlab run` (or `clientlab experiment`) there (its own
bench server on the host's loopback, its placement, the host's run lock), into a store of its own
that lives as long as the batch, its run brought back as a document with the batch's uid and the fleet
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

RUN_EXITS_WITH_A_RUN = (0, 1)   # done; done with failed cells: either way the run is the batch's result
COMMANDS = ("run", "experiment")   # what a batch may run: nothing else, whatever the queue says
BATCH_DIR = "{batch_dir}"   # in a batch's arguments: its folder on the host (where its `files` are written)
LOG_TAIL_LINES = 8
STORE_ENV = "CLIENTLAB_STORE"
BATCH_DIR_PREFIX = "clientlab-batch-"   # then the worker's pid: a folder whose worker is gone is stale
_current: subprocess.Popen | None = None
_current_lock = threading.Lock()


# the batch's `clientlab run` gets SIGTERM when the worker dies, even by SIGKILL, so that a batch whose
# worker was lost stops measuring (and frees the host's run lock) at once (util-linux's setpriv)
DIE_WITH_WORKER = ["setpriv", "--pdeathsig", "TERM", "--"]


def remove_stale_batch_dirs() -> None:
    """Batch folders of workers that are gone (killed mid-batch: their TemporaryDirectory stayed),
    those of a worker of an older clientlab too (named clientlab-job-…)."""
    for prefix in (BATCH_DIR_PREFIX, "clientlab-job-"):
        for folder in Path(tempfile.gettempdir()).glob(f"{prefix}*-*"):
            pid = folder.name[len(prefix):].split("-")[0]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                shutil.rmtree(folder, ignore_errors=True)


def _batch_home(folder: Path) -> Path:
    """A lab data folder for the batch: the host's own (its bench server, certificates, builds)
    seen through links, with a results store of the batch's own."""
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


def _document(home: Path, batch: dict, host: str) -> dict | None:
    """The batch's run as a document, with the batch's uid and the fleet's record; None when the run
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
    return with_fleet_record(doc, batch, host)


def with_fleet_record(doc: dict, batch: dict, host: str) -> dict:
    """The document as the batch's: its uid, and in its config which fleet run, batch and host it is."""
    run = doc["run"]
    run["uid"] = batch["uid"]
    run["config"] = {**run["config"], "fleet": {"uid": batch["fleet"], "batch": batch["index"],
                                                  "batches": batch["batches"], "host": host,
                                                  "baseline": batch["baseline"]}}
    return doc


def batch_argv(batch: dict, folder: Path) -> list[str]:
    """The batch's `clientlab` command line, its files written into its folder first (by their bare
    names: nothing lands outside it)."""
    command = batch.get("command", "run")
    if command not in COMMANDS:
        raise ValueError(f"a batch runs `clientlab {' or '.join(COMMANDS)}`, not {command!r}")
    for name, text in (batch.get("files") or {}).items():
        (folder / Path(name).name).write_text(text)
    args = [arg.replace(BATCH_DIR, str(folder)) for arg in batch["args"]]
    return [*DIE_WITH_WORKER, sys.executable, "-m", "clientlab", command, *args]


def run(batch: dict, host: str) -> dict:
    """Measure one batch here; never raises: what happened is in the answer (`ok`, `error`)."""
    global _current
    started = time.monotonic()
    command = batch.get("command", "run")
    with tempfile.TemporaryDirectory(prefix=f"{BATCH_DIR_PREFIX}{os.getpid()}-") as tmp:
        home = _batch_home(Path(tmp))
        log = Path(tmp) / "run.log"
        try:
            argv = batch_argv(batch, Path(tmp))
        except (ValueError, OSError) as exc:
            return {"ok": False, "exit": None, "error": f"{host}: {exc}", "doc": None, "host": host,
                    "seconds": time.monotonic() - started}
        # the batch's run goes to the batch's own store, whatever store the host names for its own runs
        env = {**{k: v for k, v in os.environ.items() if k != STORE_ENV}, "CLIENTLAB_HOME": str(home), "COLUMNS": "200"}
        with open(log, "wb") as out, _current_lock:
            _current = subprocess.Popen(argv, cwd=paths.ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                        stderr=out)
        code = _current.wait()
        try:
            doc, why = _document(home, batch, host), _tail(log)
        except Exception as exc:  # noqa: BLE001 - the coordinator must hear why, not a traceback
            doc, why = None, f"its run could not be read back: {exc}"
        ok = code in RUN_EXITS_WITH_A_RUN and doc is not None
        error = None if ok else f"`clientlab {command}` on {host} exited {code}: {why}"
    return {"ok": ok, "exit": code, "error": error, "doc": doc, "host": host,
            "seconds": time.monotonic() - started}


def stop_current(timeout_s: float = 30) -> None:
    """Stop the batch's run (it keeps what it measured in its store, which goes with the batch)."""
    proc = _current
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
