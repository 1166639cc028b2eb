"""`clientlab run --on HOSTS`: the fleet run from start to end. The broker and every host's worker
are started first (a host that cannot be reached stops the run before anything is measured), the
jobs are measured, each job's run is stored here once, and the combined table is printed."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import click

from clientlab.errors import LabInputError
from clientlab.fleet import sessions
from clientlab.fleet.broker import Broker
from clientlab.fleet.coordinator import Coordinator, JobState
from clientlab.fleet.jobs import Job, split
from clientlab.fleet.options import job_args, passed_on
from clientlab.fleet.queue import make_app
from clientlab.hosts import hostsfile
from clientlab.store import Store
from clientlab.store.transfer import import_run

FAILED_JOB_MACHINE = {"note": "no host measured this job"}


def lab_hosts(names: list[str], hosts_path: Path | None) -> tuple[list[hostsfile.Host], Path]:
    """The hosts named (each with the `lab` role) and the lab's known_hosts."""
    hosts = hostsfile.load(hostsfile.chosen_path(hosts_path))
    chosen = hosts.select(names)
    not_lab = [h.name for h in chosen if "lab" not in h.roles]
    if not_lab:
        raise LabInputError(f"--on: {', '.join(not_lab)} lack the `lab` role in {hosts.path}: they do not run drivers")
    if len({h.name for h in chosen}) != len(chosen):
        raise LabInputError("--on: a host is named twice")
    return chosen, hosts.known_hosts_path()


def payload(job: Job, fleet_uid: str, total: int, common: list[str]) -> dict:
    return {"uid": job.uid, "fleet": fleet_uid, "index": job.index, "jobs": total, "baseline": job.baseline,
            "command": job.command, "args": job_args(common, job.driver_ids())}


def failed_job_recorder(store: Store, scenarios: list[str], fleet_uid: str, total: int) -> Callable[[JobState], int]:
    """How a job no host could measure is stored: its last attempt's run where there is one,
    else a run of failed cells, each with every host's reason."""
    def record(state: JobState) -> int:
        if state.partial is not None:
            return import_run(store, state.partial)[0]
        reason = "failed on every host: " + ("; ".join(state.errors) or "no host was left to run it")
        fleet = {"uid": fleet_uid, "job": state.job.index, "jobs": total, "host": None,
                 "baseline": state.job.baseline, "errors": state.errors}
        run_id = store.start_run(FAILED_JOB_MACHINE, {"drivers": state.job.driver_ids(), "scenarios": scenarios,
                                                      "fleet": fleet}, uid=state.job.uid)
        for driver in state.job.driver_ids():
            for scenario in scenarios:
                cell_id = store.start_cell(run_id, driver, scenario, {}, "throughput")
                store.finish_cell(cell_id, "failed", reason, None, None)
        store.finish_run(run_id, "failed")
        return run_id
    return record


def run_on_hosts(ctx: click.Context, store: Store, names: list[str], hosts_path: Path | None, drivers: list[str],
                 scenarios: list[str], baseline: str, job_size: int | None, say: Callable[[str], None]) -> list[int]:
    """Measure the matrix over the hosts; the stored job runs' ids, in job order."""
    hosts, known_hosts = lab_hosts(names, hosts_path)
    fleet_uid = uuid.uuid4().hex
    jobs = split(drivers, baseline, job_size, len(hosts))
    common = passed_on(ctx)
    say(f"fleet run {fleet_uid[:12]}: {len(jobs)} job(s) of ≤{max(len(j.drivers) for j in jobs)} driver(s) + "
        f"baseline {baseline} × {len(scenarios)} scenario(s) on {', '.join(h.name for h in hosts)}; "
        f"results in {store.where}")
    states = [JobState(j, payload(j, fleet_uid, len(jobs), common)) for j in jobs]
    measure(store, hosts, known_hosts, fleet_uid, states, say, failed_job_recorder(store, scenarios, fleet_uid,
                                                                                   len(jobs)))
    return [s.run_id for s in states if s.run_id is not None]


def measure(store: Store, hosts: list[hostsfile.Host], known_hosts: Path, fleet_uid: str, states: list[JobState],
            say: Callable[[str], None], record_failed: Callable[[JobState], int],
            on_stored: Callable[[JobState], None] | None = None) -> None:
    """The jobs measured over the hosts: the broker and every host's worker started first, then
    each job's run stored here once (`on_stored` told of each, done or failed)."""
    with Broker() as broker:
        workers = sessions.start_all(hosts, known_hosts, broker, fleet_uid)
        try:
            say(f"workers ready on {', '.join(h.name for h in hosts)}")
            app = make_app(broker.local_url())
            Coordinator(store, app, workers, states, say, record_failed, on_stored).run()
        finally:
            for worker in workers:
                worker.stop()
