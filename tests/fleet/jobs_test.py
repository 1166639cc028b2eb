"""How a fleet run's drivers are shared out into jobs, and what a job passes on to `clientlab run`."""

from __future__ import annotations

import click
import click.testing
import pytest

from clientlab.errors import LabInputError
from clientlab.fleet.jobrun import with_fleet_record
from clientlab.fleet.jobs import split
from clientlab.fleet.options import passed_on


def test_jobs_default_to_one_a_host_each_with_the_baseline_first():
    jobs = split(["a", "b", "c-libcurl", "c", "d", "e"], "c-libcurl", None, hosts=2)
    assert [j.driver_ids() for j in jobs] == [["c-libcurl", "a", "b", "c"], ["c-libcurl", "d", "e"]]
    assert [j.index for j in jobs] == [1, 2] and len({j.uid for j in jobs}) == 2


def test_job_size_sets_the_drivers_a_job_and_a_baseline_alone_is_one_job():
    assert [j.drivers for j in split(["a", "b", "c"], "base", 1, hosts=2)] == [("a",), ("b",), ("c",)]
    (only,) = split(["base"], "base", None, hosts=3)
    assert only.driver_ids() == ["base"]
    with pytest.raises(LabInputError, match="at least one driver"):
        split(["a"], "base", 0, hosts=1)


def test_a_job_passes_on_the_options_given_but_not_the_coordinators_own(tmp_path):
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


def test_a_job_run_comes_back_with_the_job_uid_and_the_fleet_record():
    doc = {"run": {"uid": "made-there", "config": {"drivers": ["x"]}}, "cells": []}
    job = {"uid": "job-uid", "fleet": "f", "index": 2, "jobs": 3, "baseline": "base"}
    back = with_fleet_record(doc, job, "lab2")
    assert back["run"]["uid"] == "job-uid"
    assert back["run"]["config"] == {"drivers": ["x"], "fleet": {"uid": "f", "job": 2, "jobs": 3, "host": "lab2",
                                                                 "baseline": "base"}}
