"""Running an experiment: its cells, network by network, into one stored run; on each network the
cells of every part take turns trial by trial (or, with interleave = scenario, one workload after another)."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from clientlab.analysis.stats import StopRule
from clientlab.drivers import build as builder
from clientlab.drivers import manifest
from clientlab.experiment.plan import PlannedCell, plan
from clientlab.experiment.spec import Experiment, Part
from clientlab.netlab import namespaces
from clientlab.netlab import profile as netprofile
from clientlab.netlab.lab import open_server_side
from clientlab.runner import JIT_WARM_S, CellGroup, CellResult, Deadline, Events, LabRun, RunOptions, lab_run
from clientlab.store import Store

if TYPE_CHECKING:
    from clientlab.hosts.hostsfile import Host
    from clientlab.servers.side import ServerSide

QUICK_PART_TRIALS = 5


@dataclass
class ExperimentRun:
    run_id: int
    status: str


def run_experiment(store: Store, experiment: Experiment, quick: bool, options: RunOptions,
                   events: Events | None = None, extra_drivers: list[manifest.Driver] | None = None,
                   on_note: Callable[[str], object] = print, check_links: bool = True,
                   server_host: tuple[Host, Path] | None = None) -> ExperimentRun:
    """The experiment's cells into one stored run. check_links off: a network lab whose measured
    RTT is off its profile's is used all the same (the experiment tests: the links are tested alone).
    server_host (the host, the lab's known_hosts): the loopback parts' server runs there, across the
    network; parts on this machine's network lab are not run."""
    cells = plan(experiment, quick)
    # the trial and time budgets: the caller's, else the experiment's own
    budget = experiment.budget_for(quick, options.run_budget_s)
    options = dataclasses.replace(options, trial_seconds=options.trial_seconds or experiment.trial_seconds,
                                  run_budget_s=budget or None)
    if experiment.beside == "plain":
        from clientlab.selfcheck.plainloop import check_options

        options = check_options(options)
    readiness = builder.Readiness()   # the run's: each driver's build inputs read once
    drivers = _drivers(cells, extra_drivers or [], on_note, readiness)
    config = {"experiment": experiment.name, "quick": quick, "seed": experiment.seed,
              "net": {"profiles": sorted({c.net for c in cells})}, "cells_planned": len(cells),
              "retries": options.retries, "interleave": options.interleave, "time_budget_s": options.run_budget_s}
    with lab_run(store, config, options, events, readiness=readiness) as lab:
        networks = _Networks(lab, experiment, quick, drivers, on_note, check_links, server_host)
        try:
            networks.run(cells, Deadline.after(budget))
        finally:
            store.update_config(lab.run_id, networks=networks.described)
    return ExperimentRun(lab.run_id, "complete")


def _drivers(cells: list[PlannedCell], extra: list[manifest.Driver], on_note: Callable[[str], object],
             readiness: builder.Readiness) -> dict[str, manifest.Driver]:
    """The lab's drivers by id, with the runtime lines the cells name; the ones the cells name
    are built on first use."""
    drivers = {d.id: d for d in manifest.discover()[0] + extra}
    named = []
    for driver_id in dict.fromkeys(c.driver for c in cells):
        found = manifest.variant(drivers, driver_id) if driver_id not in drivers else drivers.get(driver_id)
        if found is not None:
            drivers[driver_id] = found
            named.append(found)
    builder.on_first_use(named, on_note, readiness)
    return drivers


@dataclass
class _Networks:
    """An experiment's cells network by network, each with its share of the time left;
    `described` gathers what each network was (or why it was not there)."""

    lab: LabRun
    experiment: Experiment
    quick: bool
    drivers: dict[str, manifest.Driver]
    on_note: Callable[[str], object]
    check_links: bool = True
    server_host: tuple[Host, Path] | None = None
    described: dict[str, dict] = field(default_factory=dict)

    def run(self, cells: list[PlannedCell], deadline: Deadline) -> None:
        by_net = [(net, list(group)) for net, group in
                  itertools.groupby(sorted(cells, key=lambda c: c.net != "loopback"), key=lambda c: c.net)]
        missing = {net: self._why_not(net) for net, _ in by_net}
        cells_left = sum(len(group) for net, group in by_net if not missing[net])
        for net, group in by_net:
            if reason := missing[net]:
                for c in group:
                    self._unrun(c, "unsupported", f"needs network profile '{net}': {reason}")
                self.described[net] = {"profile": net, "unavailable": reason}
                continue
            self._run_on(net, group, deadline.share(len(group), cells_left))
            cells_left -= len(group)

    def _why_not(self, net: str) -> str | None:
        if not netprofile.get(net).namespaces:
            return None
        if self.server_host is not None:
            return f"the bench server is on host {self.server_host[0].name} (--server-host): its path is the network"
        return namespaces.why_unavailable()

    def _run_on(self, net: str, cells: list[PlannedCell], deadline: Deadline) -> None:
        lab = self.lab
        if self.server_host is not None:
            from clientlab.hosts.benchserver import ServerHost

            side: ServerSide = ServerHost(*self.server_host)
        else:
            side = open_server_side(netprofile.get(net), lab.placement.server, check_rtt=self.check_links)
        with side as server, lab.runner(server) as runner:
            if self.experiment.beside == "plain":
                from clientlab.selfcheck.plainloop import PlainBeside

                # the check paces the cells: each stops once lab ÷ plain is decided, within the budget
                runner.beside = beside = PlainBeside(lab.placement.driver, lab.options.jit_warm_s or JIT_WARM_S,
                                                     runner.trials.probe, lab.options.retries, decide=True,
                                                     on_note=self.on_note)
            if (described := server.describe()) is not None:
                self.described[net] = described
                self.on_note(f"network '{net}' ({described['summary']}): measured RTT "
                             f"{described['measured_rtt_ms']:.2f} ms")
            lab.store.update_config(lab.run_id, networks=self.described)
            # one runner per network keeps JIT drivers warm from part to part
            try:
                for _ in runner.run_in_turns(self._groups(cells), deadline):
                    pass  # each cell is stored as it ends
            finally:
                if self.experiment.beside == "plain":
                    beside.keep(lab.store, lab.run_id)

    def _groups(self, cells: list[PlannedCell]) -> list[CellGroup]:
        """The cells of one workload and settings as a group (drivers not in this lab recorded so)."""
        parts = {p.name: p for p in self.experiment.parts}
        groups = []
        for (part, sc), same in itertools.groupby(cells, key=lambda c: (c.part, c.scenario)):
            same = list(same)
            for c in same:
                if c.driver not in self.drivers:
                    self._unrun(c, "not-installed", f"no driver '{c.driver}' in this lab")
            drivers = [self.drivers[c.driver] for c in same if c.driver in self.drivers]
            if drivers:
                groups.append(CellGroup(drivers, sc, options=part_options(self.lab.options, parts[part], self.quick)))
        return groups

    def _unrun(self, c: PlannedCell, status: str, reason: str) -> None:
        lab = self.lab
        params = {**c.scenario.params, "client": c.scenario.client.model_dump()}
        cell_id = lab.store.start_cell(lab.run_id, c.driver, c.scenario.label, params, c.scenario.metric)
        lab.store.finish_cell(cell_id, status, reason, None, None)
        lab.events.cell_started(c.driver, c.scenario.label)
        lab.events.cell_done(CellResult(c.driver, c.scenario.label, status, reason))


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


def count_cells(experiment: Experiment, quick: bool) -> int:
    return len(plan(experiment, quick))


