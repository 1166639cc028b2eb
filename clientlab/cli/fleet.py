"""clientlab run --on HOSTS and clientlab experiment … --on HOSTS (the coordinator's side) and
clientlab worker (a lab host's side): the matrix, or the experiments, shared out over lab hosts
(docs/many-machines.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.markup import escape

from clientlab.cli.choice import chosen_drivers, chosen_scenarios
from clientlab.cli.common import (
    EXIT_FAILED,
    chosen_store,
    err,
    exit_if_cells_failed,
    load_drivers,
    main,
    out,
    split_names,
)
from clientlab.drivers import manifest
from clientlab.errors import LabInputError

if TYPE_CHECKING:
    from clientlab.experiment.spec import Experiment

NOT_WITH_ON = {"json_path": "--json", "server_host_name": "--server-host", "runtime_specs": "--runtimes",
               "server_headers": "--server-headers"}


def _refuse_what_a_fleet_run_cannot_do(ctx: click.Context) -> None:
    for name, option in NOT_WITH_ON.items():
        if ctx.params.get(name):
            raise LabInputError(f"{option} cannot go with --on yet: a fleet run's batches run on the lab hosts")


def _matrix(ctx: click.Context, baseline: str) -> tuple[list[str], list[str]]:
    """(driver ids, scenario labels) chosen as `clientlab run` chooses them; the baseline must exist."""
    p = ctx.params
    drivers = [d.id for d in chosen_drivers(p["driver_paths"], p["driver_names"])]
    manifest.select(load_drivers(p["driver_paths"]), [baseline])   # a clear error naming an unknown baseline
    _files, scenarios = chosen_scenarios(p["scenario_names"], p["params"], p["http_versions"], p["concurrency"],
                                          p["keep_alive"], p["client_options"])
    return drivers, [s.label for s in scenarios]


def run_on_hosts(ctx: click.Context, on_hosts: str, hosts_path: Path | None, batch_size: int | None,
                 baseline: str) -> None:
    """The coordinator: the batches measured on the hosts, stored here, and the combined table printed."""
    from clientlab.fleet.launch import run_on_hosts as launch
    from clientlab.output.fleet import comparable_note, fleet_table

    _refuse_what_a_fleet_run_cannot_do(ctx)
    names = split_names((on_hosts,)) or []
    if not names:
        raise LabInputError("--on: name at least one lab host")
    drivers, scenarios = _matrix(ctx, baseline)
    store = chosen_store()

    def say(line: str) -> None:
        err.print(escape(line), highlight=False)
    from clientlab.runner import stop_on_sigterm

    try:
        with stop_on_sigterm():   # SIGTERM as Ctrl-C: the broker and the hosts' workers are stopped
            run_ids = launch(ctx, store, names, hosts_path, drivers, scenarios, baseline, batch_size, say)
    except KeyboardInterrupt:
        err.print("[yellow]interrupted: the batches stored so far are kept; the workers were stopped[/]")
        raise SystemExit(130) from None
    runs = [{**store.run(r), "cells": store.cell_records(r)} for r in run_ids]
    out.print(fleet_table(runs, f"fleet run over {', '.join(names)}: each cell beside its own host's baseline"))
    for line in comparable_note(runs):
        out.print(escape(line), highlight=False)
    failed = [c for run in runs for c in run["cells"] if c.status == "failed"]
    if failed:
        err.print(f"[red]{len(failed)} cell(s) failed:[/]", highlight=False)
        for c in failed:
            err.print(escape(f"  {c.driver} × {c.scenario}: {(c.reason or '')[:200]}"), highlight=False)
        raise SystemExit(EXIT_FAILED)


def _refuse_what_an_experiment_fleet_cannot_do(ctx: click.Context) -> None:
    from clientlab import paths

    if ctx.params.get("server_host_name"):
        raise LabInputError("--server-host cannot go with --on: each lab host serves its experiment from its own "
                            "bench server, on its loopback")
    for name, option in (("driver_paths", "--driver-path"), ("scenario_paths", "--scenario-path")):
        for path in ctx.params.get(name) or ():
            if not path.resolve().is_relative_to(paths.ROOT):
                raise LabInputError(f"{option} {path} cannot go with --on: it is outside the clientlab checkout, "
                                    "so a lab host would not have it (put it in the checkout, committed)")


def experiments_on_hosts(ctx: click.Context, on_hosts: str, chosen: list[Experiment], experiment_path: Path | None,
                         quick: bool, findings_path: Path) -> None:
    """The coordinator of `clientlab experiment … --on`: each experiment measured on one host,
    stored here, its findings section written here and its verdicts printed as it comes back."""
    from clientlab.experiment.spec import source_of
    from clientlab.fleet.experiments import Chosen
    from clientlab.fleet.experiments import experiments_on_hosts as launch
    from clientlab.output.verdicts import print_verdicts
    from clientlab.runner import stop_on_sigterm

    _refuse_what_an_experiment_fleet_cannot_do(ctx)
    names = split_names((on_hosts,)) or []
    if not names:
        raise LabInputError("--on: name at least one lab host")
    store = chosen_store()

    def say(line: str) -> None:
        err.print(escape(line), highlight=False)

    def show_verdicts(e: Experiment, run_id: int, host: str | None) -> None:
        print_verdicts(out, e, store, run_id, host)

    experiments = [Chosen(e, source_of(e.name, experiment_path)) for e in chosen]
    try:
        with stop_on_sigterm():   # SIGTERM as Ctrl-C: the broker and the hosts' workers are stopped
            run_ids = launch(ctx, store, names, ctx.params.get("hosts_path"), experiments, quick, findings_path,
                             say, show_verdicts)
    except KeyboardInterrupt:
        err.print("[yellow]interrupted: the experiments stored so far are kept; the workers were stopped[/]")
        raise SystemExit(130) from None
    exit_if_cells_failed(store, run_ids)


@main.command("worker")
def worker_cmd() -> None:
    """Take the fleet's batches on this lab host, one at a time, until the SSH session ends.

    Started by the coordinator (`clientlab run --on HOSTS`) in this host's SSH session, which
    lends it the coordinator's broker; it reads its settings as one JSON line on stdin."""
    from clientlab.fleet import worker

    worker.serve()
