"""`clientlab worker`: a lab host's Celery worker, started by the coordinator in the host's SSH
session. It reads its broker (password included, never on a command line) from the session's
first line, takes one batch at a time from its host's queue, and ends with the session: when the
coordinator goes, so does the worker, and the batch it was measuring is stopped."""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import BinaryIO, TextIO

from celery.signals import worker_ready

from clientlab.errors import LabInputError
from clientlab.fleet import batchrun
from clientlab.fleet.queue import RUN_BATCH, make_app

SETTINGS = ("broker", "queue", "host", "fleet")


def read_settings(stdin: BinaryIO) -> dict:
    line = stdin.readline()
    try:
        settings = json.loads(line)
    except ValueError:
        settings = None
    if not isinstance(settings, dict) or not all(isinstance(settings.get(k), str) for k in SETTINGS):
        raise LabInputError("clientlab worker reads its settings as one JSON line on stdin "
                            f"({', '.join(SETTINGS)}); the coordinator (`clientlab run --on`) sends them")
    return settings


def _end_with_session(stdin: BinaryIO) -> None:
    """Wait for the session's end (stdin closed), then stop the batch and leave at once."""
    while stdin.read(65536):
        pass
    batchrun.stop_current()
    os._exit(0)


def serve(stdin: BinaryIO = sys.stdin.buffer, stdout: TextIO = sys.stdout) -> None:
    """Run the worker until the session ends."""
    settings = read_settings(stdin)
    batchrun.remove_stale_batch_dirs()
    app = make_app(settings["broker"])
    host = settings["host"]

    @app.task(name=RUN_BATCH)
    def run_batch(batch: dict) -> dict:
        return batchrun.run(batch, host)

    def ready(**_: object) -> None:
        stdout.write(json.dumps({"ready": True, "host": host, "pid": os.getpid()}) + "\n")
        stdout.flush()

    worker_ready.connect(ready, weak=False)
    threading.Thread(target=_end_with_session, args=(stdin,), daemon=True, name="session").start()
    worker = app.Worker(hostname=f"{host}@{settings['fleet']}", pool="solo", concurrency=1, prefetch_multiplier=1,
                        without_heartbeat=True, without_gossip=True, without_mingle=True,
                        queues=[settings["queue"]], loglevel="WARNING", quiet=True)
    worker.start()
