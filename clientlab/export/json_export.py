"""The run as JSON: one object per driver × scenario cell, with its figures and its trials.

Schema (version 1):
  run:   id, status, started_at, finished_at (Unix seconds), machine, config (record.RunConfig)
  cells: driver, scenario, params, status (ok / failed / unsupported / not-installed / running),
         reason, metric, versions (client and runtime versions from the driver),
         figures (throughput + unit, wall_s statistics, cpu_user_s, cpu_sys_s, peak_rss_kb,
         startup_s, setup_s, noisy, precision, server summary of the median trial, findings, …:
         clientlab/record.py's CellFigures names every key and what it means),
         trials (kind, idx, ok, wall_s, user_s, sys_s, peak_rss_kb, startup_s, setup_s, server, problems)
"""

from __future__ import annotations

import json

from clientlab.store import Store

SCHEMA_VERSION = 1


def document(store: Store, run_id: int) -> dict:
    cells = []
    for cell in store.cell_records(run_id):
        trials = store.trials(cell.id)
        for trial in trials:
            trial.pop("cell_id", None)
            trial.pop("id", None)
        cells.append({
            "driver": cell.driver, "scenario": cell.scenario, "params": cell.params,
            "status": cell.status, "reason": cell.reason, "metric": cell.metric, "versions": cell.versions,
            "figures": cell.figures.to_json() if cell.figures is not None else None,
            "fingerprint": cell.fingerprint, "trials": trials,
        })
    run = store.run(run_id)
    run.pop("pid", None)
    return {"schema": SCHEMA_VERSION, "run": run, "cells": cells}


def render(store: Store, run_id: int) -> str:
    return json.dumps(document(store, run_id), indent=2) + "\n"
