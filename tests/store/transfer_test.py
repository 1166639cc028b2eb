"""Runs as documents between stores: the same run (uid, times, cells, trials) arrives once, whole."""

from __future__ import annotations

import json
import multiprocessing

import pytest

from clientlab.errors import LabInputError
from clientlab.store import Store
from clientlab.store.transfer import import_run, run_document
from tests.store.testruns import MACHINE, finished_run


def _without_ids(doc: dict) -> dict:
    """The document with the ids only one store knows set aside."""
    return {**doc, "run": {**doc["run"], "id": None},
            "cells": [{**c, "id": None, "run_id": None, "trials": [{**t, "id": None, "cell_id": None} for t in c["trials"]]}
                      for c in doc["cells"]]}


def test_a_run_travels_to_another_store_as_it_was_and_only_once(store_url, tmp_path):
    local = Store(tmp_path / "local.sqlite")
    doc = run_document(local, finished_run(local))
    assert json.loads(json.dumps(doc)) == doc  # JSON as it is
    team = Store(store_url)
    finished_run(team)  # ids there differ from the local ones
    new_id, added = import_run(team, doc)
    assert added and new_id == 2
    assert _without_ids(run_document(team, new_id)) == _without_ids(doc)
    assert import_run(team, doc) == (new_id, False) and team.count_runs() == 2
    back = Store(tmp_path / "back.sqlite")
    assert _without_ids(run_document(back, import_run(back, run_document(team, new_id))[0])) == _without_ids(doc)


def test_a_run_still_running_is_refused(tmp_path):
    store = Store(tmp_path / "r.sqlite")
    doc = run_document(store, store.start_run(MACHINE, {}))
    with pytest.raises(LabInputError, match="is running: only a finished run"):
        import_run(Store(tmp_path / "other.sqlite"), doc)


def _import_when_all_are_ready(url: str, doc: dict, barrier, answers) -> None:
    store = Store(url)
    barrier.wait(60)
    answers.put(import_run(store, doc))


def test_two_processes_importing_the_same_run_at_once_store_it_once(store_url, tmp_path):
    racers = 2
    local = Store(tmp_path / "local.sqlite")
    docs = [run_document(local, finished_run(local, cells=3, trials=20)) for _ in range(3)]
    Store(store_url).close()  # made before the race: the race is about the run
    forked = multiprocessing.get_context("fork")
    for doc in docs:
        barrier, answers = forked.Barrier(racers), forked.Queue()
        procs = [forked.Process(target=_import_when_all_are_ready, args=(store_url, doc, barrier, answers))
                 for _ in range(racers)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(120)
        results = sorted((answers.get(timeout=10) for _ in procs), key=lambda r: not r[1])
        assert [p.exitcode for p in procs] == [0] * racers
        assert [added for _, added in results] == [True, False] and results[0][0] == results[1][0]
    team = Store(store_url)
    assert team.count_runs() == 3
    assert sum(len(team.trials(c["id"])) for r in team.run_ids() for c in team.cells(r)) == 3 * 3 * 20


def test_a_runs_cpu_profiles_travel_with_it(store_url, tmp_path):
    from clientlab.store.profiles import add_profile, cell_profiles

    local = Store(tmp_path / "local.sqlite")
    run_id = finished_run(local, status="running")
    first = local.cells(run_id)[0]["id"]
    add_profile(local, first, "perf", "main (driver);work (driver) 7\n", 7, {"requests": 10, "cpu_s": 0.01})
    local.finish_run(run_id, "complete")
    doc = run_document(local, run_id)
    assert [len(c.get("profiles", [])) for c in doc["cells"]] == [1, 0]
    team = Store(store_url)
    new_id, added = import_run(team, doc)
    there = team.cells(new_id)
    assert added and [(p["profiler"], p["samples"], p["folded"], p["meta"]) for p in cell_profiles(team, there[0]["id"])] \
        == [("perf", 7, "main (driver);work (driver) 7\n", {"requests": 10, "cpu_s": 0.01})]
    assert cell_profiles(team, there[1]["id"]) == []
