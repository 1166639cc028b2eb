"""How a fleet run's drivers are shared out into batches, and what a batch passes on to `clientlab run`."""

from __future__ import annotations

import click
import click.testing
import pytest

from clientlab.errors import LabInputError
from clientlab.fleet.batches import split
from clientlab.fleet.batchrun import with_fleet_record
from clientlab.fleet.options import passed_on
from tests.support.cli import lab  # noqa: F401 - the fixture


def test_batches_default_to_one_a_host_each_with_the_baseline_first():
    batches = split(["a", "b", "c-libcurl", "c", "d", "e"], "c-libcurl", None, hosts=2)
    assert [b.driver_ids() for b in batches] == [["c-libcurl", "a", "b", "c"], ["c-libcurl", "d", "e"]]
    assert [b.index for b in batches] == [1, 2] and len({b.uid for b in batches}) == 2


def test_batch_size_sets_the_drivers_a_batch_and_a_baseline_alone_is_one_batch():
    assert [b.drivers for b in split(["a", "b", "c"], "base", 1, hosts=2)] == [("a",), ("b",), ("c",)]
    (only,) = split(["base"], "base", None, hosts=3)
    assert only.driver_ids() == ["base"]
    with pytest.raises(LabInputError, match="at least one driver"):
        split(["a"], "base", 0, hosts=1)


def test_a_batch_passes_on_the_options_given_but_not_the_coordinators_own(tmp_path):
    @click.command()
    @click.option("--trials", type=int)
    @click.option("--warmup", default=1)
    @click.option("--keep-alive/--no-keep-alive", default=None)
    @click.option("-p", "--param", "params", multiple=True)
    @click.option("--on", "on_hosts")
    @click.option("--fresh-process", is_flag=True)
    def cmd(**_kw):
        ctx = click.get_current_context()
        print("ARGS", passed_on(ctx))

    runner = click.testing.CliRunner()
    done = runner.invoke(cmd, ["--trials", "3", "--no-keep-alive", "-p", "count=20", "-p", "size=1",
                               "--on", "lab1,lab2"])
    assert done.exit_code == 0, done.output
    assert done.output.strip() == ("ARGS ['--trials', '3', '--no-keep-alive', '--param', 'count=20', "
                                   "'--param', 'size=1']"), "defaults (--warmup, the flag) left to the host"


def test_a_batch_run_comes_back_with_the_batch_uid_and_the_fleet_record():
    doc = {"run": {"uid": "made-there", "config": {"drivers": ["x"]}}, "cells": []}
    batch = {"uid": "batch-uid", "fleet": "f", "index": 2, "batches": 3, "baseline": "base"}
    back = with_fleet_record(doc, batch, "lab2")
    assert back["run"]["uid"] == "batch-uid"
    assert back["run"]["config"] == {"drivers": ["x"], "fleet": {"uid": "f", "batch": 2, "batches": 3,
                                                                 "host": "lab2", "baseline": "base"}}


def test_a_run_stored_with_the_fleets_old_job_numbers_loads_with_its_batch(tmp_path):
    from clientlab.store import Store

    store = Store(tmp_path / "results.sqlite")
    try:
        run_id = store.start_run({}, {"drivers": ["x"], "fleet": {"uid": "f", "job": 2, "jobs": 3, "host": "lab2",
                                                                  "baseline": "base"}})
        fleet = store.run_config(run_id).fleet
    finally:
        store.close()
    assert fleet is not None and (fleet.batch, fleet.batches, fleet.host) == (2, 3, "lab2")


def test_job_size_is_the_deprecated_name_of_batch_size_and_says_so(lab):
    hosts = lab.home / "hosts.toml"   # never read: the coordinator stops at the missing file
    done = lab.run("run", "--on", "lab1", "--hosts", str(hosts), "--job-size", "2")
    assert "--job-size is deprecated: it is --batch-size now" in done.stderr
    assert done.returncode != 0 and "hosts" in done.stderr
    shown = lab.run("run", "--help").stdout
    assert "--batch-size" in shown and "--job-size" not in shown
