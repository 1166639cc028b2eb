"""`clientlab run --on HOSTS`: the fleet run from start to end. The broker and every host's worker
are started first (a host that cannot be reached stops the run before anything is measured), the
batches are measured, each batch's run is stored here once, and the combined table is printed."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import click

from clientlab.errors import LabInputError
from clientlab.fleet import sessions
from clientlab.fleet.broker import Broker
from clientlab.fleet.batches import Batch, split
from clientlab.fleet.coordinator import BatchState, Coordinator
from clientlab.fleet.options import batch_args, passed_on
from clientlab.fleet.queue import make_app
from clientlab.hosts import hostsfile
from clientlab.store import Store
from clientlab.store.transfer import import_run

FAILED_BATCH_MACHINE = {"note": "no host measured this batch"}


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


def payload(batch: Batch, fleet_uid: str, total: int, common: list[str]) -> dict:
    return {"uid": batch.uid, "fleet": fleet_uid, "index": batch.index, "batches": total, "baseline": batch.baseline,
            "command": batch.command, "args": batch_args(common, batch.driver_ids())}


def failed_batch_recorder(store: Store, scenarios: list[str], fleet_uid: str,
                          total: int) -> Callable[[BatchState], int]:
    """How a batch no host could measure is stored: its last attempt's run where there is one,
    else a run of failed cells, each with every host's reason."""
    def record(state: BatchState) -> int:
        if state.partial is not None:
            return import_run(store, state.partial)[0]
        reason = "failed on every host: " + ("; ".join(state.errors) or "no host was left to run it")
        fleet = {"uid": fleet_uid, "batch": state.batch.index, "batches": total, "host": None,
                 "baseline": state.batch.baseline, "errors": state.errors}
        run_id = store.start_run(FAILED_BATCH_MACHINE, {"drivers": state.batch.driver_ids(), "scenarios": scenarios,
                                                      "fleet": fleet}, uid=state.batch.uid)
        for driver in state.batch.driver_ids():
            for scenario in scenarios:
                cell_id = store.start_cell(run_id, driver, scenario, {}, "throughput")
                store.finish_cell(cell_id, "failed", reason, None, None)
        store.finish_run(run_id, "failed")
        return run_id
    return record


def run_on_hosts(ctx: click.Context, store: Store, names: list[str], hosts_path: Path | None, drivers: list[str],
                 scenarios: list[str], baseline: str, batch_size: int | None, say: Callable[[str], None]) -> list[int]:
    """Measure the matrix over the hosts; the stored batch runs' ids, in batch order."""
    hosts, known_hosts = lab_hosts(names, hosts_path)
    fleet_uid = uuid.uuid4().hex
    batches = split(drivers, baseline, batch_size, len(hosts))
    common = passed_on(ctx)
    most = max(len(b.drivers) for b in batches)
    say(f"fleet run {fleet_uid[:12]}: {len(batches)} batch(es) of ≤{most} driver(s) + "
        f"baseline {baseline} × {len(scenarios)} scenario(s) on {', '.join(h.name for h in hosts)}; "
        f"results in {store.where}")
    states = [BatchState(b, payload(b, fleet_uid, len(batches), common)) for b in batches]
    measure(store, hosts, known_hosts, fleet_uid, states, say,
            failed_batch_recorder(store, scenarios, fleet_uid, len(batches)))
    return [s.run_id for s in states if s.run_id is not None]


def measure(store: Store, hosts: list[hostsfile.Host], known_hosts: Path, fleet_uid: str, states: list[BatchState],
            say: Callable[[str], None], record_failed: Callable[[BatchState], int],
            on_stored: Callable[[BatchState], None] | None = None) -> None:
    """The batches measured over the hosts: the broker and every host's worker started first, then
    each batch's run stored here once (`on_stored` told of each, done or failed)."""
    with Broker() as broker:
        workers = sessions.start_all(hosts, known_hosts, broker, fleet_uid)
        try:
            say(f"workers ready on {', '.join(h.name for h in hosts)}")
            app = make_app(broker.local_url())
            Coordinator(store, app, workers, states, say, record_failed, on_stored).run()
        finally:
            for worker in workers:
                worker.stop()
