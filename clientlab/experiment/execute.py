"""Running an experiment: its cells, network by network, into one stored run; on each network the
cells of every part take turns trial by trial (or, with interleave = scenario, one workload after another)."""

from __future__ import annotations

import dataclasses
import itertools
import time
from dataclasses import dataclass

from clientlab import build as builder
from clientlab import manifest
from clientlab.experiment.plan import PlannedCell, plan
from clientlab.experiment.spec import Experiment, Part
from clientlab.netlab import hosts
from clientlab.netlab import profile as netprofile
from clientlab.netlab.lab import open_server_side
from clientlab.runner import (
    CellGroup,
    CellResult,
    CellRunner,
    Events,
    Placement,
    RunOptions,
    SilentEvents,
    share,
    stored_run,
)
from clientlab.stats import StopRule
from clientlab.store import Store

QUICK_PART_TRIALS = 5


@dataclass
class ExperimentRun:
    run_id: int
    status: str


def run_experiment(store: Store, experiment: Experiment, quick: bool, options: RunOptions,
                   events: Events | None = None, extra_drivers: list[manifest.Driver] | None = None,
                   on_note=print) -> ExperimentRun:  # noqa: ANN001 - on_note: callable(str)
    cells = plan(experiment, quick)
    if experiment.trial_seconds:
        options = dataclasses.replace(options, trial_budget_s=experiment.trial_seconds)
    # the experiment's time budget (the caller's, else its file's), shared out by cells below
    budget = options.time_budget_s if options.time_budget_s is not None else experiment.budget_for(quick)
    options = dataclasses.replace(options, time_budget_s=budget or None)
    end = time.monotonic() + budget if budget else None
    drivers = {d.id: d for d in manifest.discover()[0] + (extra_drivers or [])}
    for driver_id in dict.fromkeys(c.driver for c in cells):  # runtime lines: built on first use
        found = manifest.variant(drivers, driver_id) if driver_id not in drivers else None
        if found is not None:
            drivers[driver_id] = found
            if not builder.is_built(found):
                on_note(f"building {found.id} (on {found.runtime.kind} {found.runtime.version}) …")
                on_note(f"{found.id}: {builder.build(found)[1]}")
    config = {"experiment": experiment.name, "quick": quick, "seed": experiment.seed,
              "net": {"profiles": sorted({c.net for c in cells})}, "cells_planned": len(cells),
              "retries": options.retries, "interleave": options.interleave, "time_budget_s": options.time_budget_s}
    events = events or SilentEvents()
    networks: dict[str, dict] = {}
    by_net = [(net, list(group)) for net, group in
              itertools.groupby(sorted(cells, key=lambda c: c.net != "loopback"), key=lambda c: c.net)]
    available = {net: None if not netprofile.get(net).namespaces else hosts.why_unavailable() for net, _ in by_net}
    cells_left = sum(len(group) for net, group in by_net if not available[net])
    with stored_run(store, config, options.placement) as (run_id, placement):
        try:
            _run_networks(store, run_id, placement, experiment, quick, options, by_net, available, cells_left,
                          drivers, networks, events, end, on_note)
        finally:
            store.update_config(run_id, networks=networks)
    return ExperimentRun(run_id, "complete")


def _run_networks(store: Store, run_id: int, placement: Placement, experiment: Experiment, quick: bool,
                  options: RunOptions, by_net: list, available: dict, cells_left: int, drivers: dict,
                  networks: dict, events: Events, end: float | None, on_note) -> None:  # noqa: ANN001
    """Each network's cells, with its share of the time left; `networks` gathers what each was."""
    for net, group in by_net:
        profile = netprofile.get(net)
        reason = available[net]
        if reason:
            for c in group:
                _record_unrun(store, run_id, c, "unsupported", f"needs network profile '{net}': {reason}", events)
            networks[net] = {"profile": net, "unavailable": reason}
            continue
        net_end = share(end, len(group), cells_left)  # this network's share of the time left
        cells_left -= len(group)
        with (open_server_side(profile, placement.server) as server,
              CellRunner(server, store, run_id, options, events, placement.driver) as runner):
            if (described := server.describe()) is not None:
                networks[net] = described
                on_note(f"network '{net}' ({networks[net]['summary']}): measured RTT "
                        f"{networks[net]['measured_rtt_ms']:.2f} ms")
            store.update_config(run_id, networks=networks)
            parts = {p.name: p for p in experiment.parts}
            # the cells of one workload and settings are a group; one runner per network keeps
            # JIT drivers warm from part to part
            groups = []
            for (part, sc), same in itertools.groupby(group, key=lambda c: (c.part, c.scenario)):
                same = list(same)
                for c in same:
                    if c.driver not in drivers:
                        _record_unrun(store, run_id, c, "not-installed", f"no driver '{c.driver}' in this lab", events)
                groups.append(CellGroup([drivers[c.driver] for c in same if c.driver in drivers], sc,
                                    options=part_options(options, parts[part], quick)))
            groups = [g for g in groups if g.drivers]
            for _ in runner.run_in_turns(groups, net_end):
                pass  # each cell is stored as it ends


def part_options(options: RunOptions, part: Part, quick: bool) -> RunOptions:
    """The run's options with what a part asks for: a fresh process per trial, its own trial count
    (in the quick form at most QUICK_PART_TRIALS), its own warm-up."""
    changes: dict = {}
    if part.fresh_process:
        changes["fresh_process"] = True
    if part.warmup is not None:
        changes["warmup"] = part.warmup
    if part.trials:
        n = min(part.trials, QUICK_PART_TRIALS) if quick else part.trials
        changes["stop"] = StopRule(min_trials=n, max_trials=n)
    return dataclasses.replace(options, **changes) if changes else options


def _record_unrun(store: Store, run_id: int, c: PlannedCell, status: str, reason: str, events: Events) -> None:
    params = {**c.scenario.params, "client": c.scenario.client.model_dump()}
    cell_id = store.start_cell(run_id, c.driver, c.scenario.label, params, c.scenario.metric)
    store.finish_cell(cell_id, status, reason, None, None)
    events.cell_started(c.driver, c.scenario.label)
    events.cell_done(CellResult(c.driver, c.scenario.label, status, reason))


def count_cells(experiment: Experiment, quick: bool) -> int:
    return len(plan(experiment, quick))


