"""`clientlab experiment NAME… --on HOSTS`: each experiment is one batch, measured whole by one lab
host (an ordinary `clientlab experiment NAME` there, into the batch's own store) and stored here once.

An experiment's claims compare its own cells with each other, so every figure a claim is judged
on comes from one host, in one interleaved run: unlike `run --on`, no baseline driver is added to
bridge hosts. The experiment's file travels with the batch, so the host measures exactly the
experiment that is judged here; the batch's own findings document stays in its folder on the host."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import click

from clientlab.experiment import findings
from clientlab.experiment.plan import PlannedCell, plan
from clientlab.experiment.spec import Experiment
from clientlab.fleet.batches import Batch, experiment_batches
from clientlab.fleet.batchrun import BATCH_DIR
from clientlab.fleet.coordinator import BatchState
from clientlab.fleet.launch import FAILED_BATCH_MACHINE, lab_hosts, measure
from clientlab.fleet.options import COORDINATOR_ONLY, passed_on
from clientlab.store import Store
from clientlab.store.transfer import import_run

# `clientlab experiment`'s own options that the coordinator answers (the batch gets its own)
EXPERIMENT_COORDINATOR_ONLY = COORDINATOR_ONLY | {"findings_path", "experiment_path", "list_only"}


@dataclass(frozen=True)
class Chosen:
    """An experiment to share out: what it is, and the file it was read from (sent with its batch)."""

    experiment: Experiment
    source: Path


def payload(batch: Batch, chosen: Chosen, fleet_uid: str, total: int, common: list[str]) -> dict:
    """The batch as the worker reads it: `clientlab experiment NAME` with the options given here, the
    experiment's file and findings document in the batch's folder on the host."""
    name = chosen.experiment.name
    args = [name, *common, "--experiment-path", f"{BATCH_DIR}/{name}.toml", "--findings", f"{BATCH_DIR}/findings.md"]
    return {"uid": batch.uid, "fleet": fleet_uid, "index": batch.index, "batches": total, "baseline": None,
            "command": batch.command, "args": args, "files": {f"{name}.toml": chosen.source.read_text()}}


def failed_recorder(store: Store, by_name: dict[str, Chosen], plans: dict[str, list[PlannedCell]], quick: bool,
                    fleet_uid: str, total: int) -> Callable[[BatchState], int]:
    """An experiment no host could measure: its last attempt's run where there is one, else its
    planned cells stored as failed, each with every host's reason."""
    def record(state: BatchState) -> int:
        if state.partial is not None:
            return import_run(store, state.partial)[0]
        e = by_name[state.batch.experiment or ""].experiment
        reason = "failed on every host: " + ("; ".join(state.errors) or "no host was left to run it")
        fleet = {"uid": fleet_uid, "batch": state.batch.index, "batches": total, "host": None, "errors": state.errors}
        config = {"experiment": e.name, "quick": quick, "seed": e.seed, "fleet": fleet}
        run_id = store.start_run(FAILED_BATCH_MACHINE, config, uid=state.batch.uid)
        for c in plans[e.name]:
            params = {**c.scenario.params, "client": c.scenario.client.model_dump()}
            cell_id = store.start_cell(run_id, c.driver, c.scenario.label, params, c.scenario.metric)
            store.finish_cell(cell_id, "failed", reason, None, None)
        store.finish_run(run_id, "failed")
        return run_id
    return record


def opening_line(fleet_uid: str, names: list[str], hosts: list[str], store_where: str) -> str:
    """What the fleet run is about to do, saying which hosts will have nothing to measure."""
    idle = len(hosts) - len(names)
    spread = ("one host measures it" if len(names) == 1 else "each measured whole by one host, one at a time a host")
    return (f"experiments over lab hosts {fleet_uid[:12]}: {len(names)} experiment(s) ({', '.join(names)}) on "
            f"{', '.join(hosts)}: {spread}" + (f"; {idle} host(s) stand by, to take over a lost host's batch"
                                                  if idle > 0 else "") + f"; results in {store_where}")


def experiments_on_hosts(ctx: click.Context, store: Store, host_names: list[str], hosts_path: Path | None,
                         chosen: list[Chosen], quick: bool, findings_path: Path, say: Callable[[str], None],
                         show_verdicts: Callable[[Experiment, int, str | None], None]) -> list[int]:
    """Measure the experiments over the hosts; as each one's run is stored here, its section of
    the findings document is written and its verdicts shown (with the host that measured it).
    The stored runs' ids, in the experiments' order."""
    hosts, known_hosts = lab_hosts(host_names, hosts_path)
    fleet_uid = uuid.uuid4().hex
    by_name = {c.experiment.name: c for c in chosen}
    plans = {name: plan(c.experiment, quick) for name, c in by_name.items()}   # one that cannot plan stops here
    batches = experiment_batches(list(by_name))
    common = passed_on(ctx, EXPERIMENT_COORDINATOR_ONLY)
    say(opening_line(fleet_uid, list(by_name), [h.name for h in hosts], store.where))
    states = [BatchState(b, payload(b, by_name[b.experiment or ""], fleet_uid, len(batches), common)) for b in batches]

    def stored(state: BatchState) -> None:
        e, run_id = by_name[state.batch.experiment or ""].experiment, state.run_id
        if run_id is None:
            return
        host = store.run_config(run_id).fleet_host
        findings.update(findings_path, e.name, findings.section(e, store, run_id))
        show_verdicts(e, run_id, host)
        say(f"{e.name}: " + (f"measured on {host}" if host else "no host measured it")
            + f", run {run_id}: findings written to {findings_path}")

    measure(store, hosts, known_hosts, fleet_uid, states, say,
            failed_recorder(store, by_name, plans, quick, fleet_uid, len(batches)), stored)
    return [s.run_id for s in states if s.run_id is not None]
