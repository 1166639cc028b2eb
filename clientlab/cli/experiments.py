"""clientlab experiment and findings: the seed articles' claims judged with the lab's numbers."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.markup import escape
from rich.table import Table

from clientlab import paths
from clientlab.analysis.stats import StopRule
from clientlab.cli.common import (
    MEASURING,
    EXIT_CODES,
    chosen_store,
    diagnose_and_store,
    driver_path_option,
    err,
    exit_if_cells_failed,
    load_drivers,
    main,
    no_wait_option,
    out,
    scenario_path_option,
    store_option,
    take_lab_lock,
    use_scenario_paths,
)
from clientlab.cli.hosts import chosen_server_host, hosts_option, server_host_option
from clientlab.drivers import manifest
from clientlab.errors import LabInputError
from clientlab.output.progress import ProgressEvents
from clientlab.runner import INTERLEAVES, PLACEMENTS, RunOptions, stop_on_sigterm
from clientlab.store import Store

if TYPE_CHECKING:
    from clientlab.experiment.spec import Experiment
    from clientlab.hosts.hostsfile import Host

# an experiment has hundreds of cells: a cell stops adding trials sooner than a run's
EXPERIMENT_CELL_S = 30.0


@main.command("experiment", epilog=EXIT_CODES)
@click.argument("names", nargs=-1, metavar="NAME... | all")
@click.option("--quick", is_flag=True, help="The quick form: fewer sizes and repeats, one trial per cell (minutes).")
@click.option("--list", "list_only", is_flag=True, help="List the experiments and what they run.")
@click.option("--trials", type=click.IntRange(1), help="Exactly this many timed trials per cell.")
@click.option("--findings", "findings_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write each experiment's section of the findings document here.  [default: findings.md in "
                   "the lab's data folder (.lab/); --write-docs: the project's docs/findings.md]")
@click.option("--write-docs", is_flag=True,
              help="Write the findings into the project's docs/findings.md (the published answers), not .lab/.")
@click.option("--placement", type=click.Choice(PLACEMENTS), default=MEASURING.placement, show_default=True,
              help="Where driver and server run, as for `clientlab run`.")
@click.option("--retries", default=MEASURING.retries, show_default=True, type=click.IntRange(0),
              help="Run a disturbed trial again, at most this many times per cell (as for `clientlab run`).")
@click.option("--interleave", type=click.Choice(INTERLEAVES), default=None,
              help="Which cells take turns trial by trial: the drivers of one workload (workloads one after "
                   "another), or every cell on a network (so that a claim comparing two parts is not a "
                   "comparison of two minutes of the host).  [default: the experiment's own `interleave`, "
                   f"else {MEASURING.interleave}]")
@click.option("--time-budget", type=click.FloatRange(0), metavar="SECONDS",
              help="Each experiment's time: once it is spent, cells stop at their minimum of trials, disturbed "
                   "trials are kept (flagged) and no trial waits for a slow phase of the host; each network and "
                   "workload gets a share of the time left by its cells. 0: no limit.  [default: the "
                   "experiment's own `time_budget` (`quick_time_budget` with --quick), listed by --list]")
@click.option("--experiment-path", type=click.Path(exists=True, path_type=Path), metavar="FILE|FOLDER",
              help="Take the experiments from this file, or folder of experiment files, instead of experiments/.")
@server_host_option
@hosts_option
@click.option("--on", "on_hosts", metavar="HOST[,HOST…]",
              help="Share the experiments out over these lab hosts of the hosts file (--hosts): each one measured "
                   "whole by one host, one at a time a host; runs and findings kept here (docs/many-machines.md).")
@driver_path_option
@scenario_path_option
@no_wait_option
@store_option
def experiment_cmd(names: tuple[str, ...], quick: bool, list_only: bool, trials: int | None,
                   findings_path: Path | None, write_docs: bool, placement: str, retries: int, interleave: str | None,
                   time_budget: float | None, experiment_path: Path | None, server_host_name: str | None,
                   hosts_path: Path | None, on_hosts: str | None, driver_paths: tuple[Path, ...],
                   scenario_paths: tuple[Path, ...], no_wait: bool) -> None:
    """Run seed experiments (experiments/*.toml) and judge each article's claims with the numbers.

    Each experiment runs its parts (drivers × scenarios × settings, on the part's network) into
    one stored run, then writes its section of the findings document: the article's claims, the
    lab's numbers, and a verdict. `clientlab experiment all` runs every one. One measuring run per
    machine: it waits for another one (or exits 75 with --no-wait)."""
    from clientlab.experiment import spec

    use_scenario_paths(scenario_paths)
    if list_only or not names:
        _list_experiments(hint=not names)
        return
    chosen = spec.get_from(list(names), experiment_path)
    findings_path = findings_target(findings_path, write_docs)
    if on_hosts:  # this machine coordinates the lab hosts: it measures nothing and takes no lab lock
        from clientlab.cli.fleet import experiments_on_hosts
        experiments_on_hosts(click.get_current_context(), on_hosts, chosen, experiment_path, quick, findings_path)
        return
    extra = [d for d in load_drivers(driver_paths) if driver_paths]
    options = _run_options(quick, trials, placement, retries)
    server_host = chosen_server_host(server_host_name, hosts_path)
    take_lab_lock(no_wait)
    store = chosen_store()
    run_ids = []
    for e in chosen:
        own = dataclasses.replace(options, interleave=interleave or e.interleave or MEASURING.interleave,
                                  run_budget_s=e.budget_for(quick, time_budget))
        run_ids.append(_run_one(store, e, quick, own, extra, findings_path, server_host))
    exit_if_cells_failed(store, run_ids)


def _list_experiments(hint: bool) -> None:
    """The experiments, what each runs and how long it may take; the invalid ones named."""
    from clientlab.experiment import spec
    from clientlab.experiment.execute import count_cells

    table = Table(title="experiments")
    for column, wraps in (("name", False), ("seed", False), ("parts", True), ("cells", False),
                          ("minutes full / quick", True), ("title", True)):
        table.add_column(column, overflow="fold", no_wrap=not wraps)  # names stay whole
    known, broken = spec.scan()
    for e in known.values():
        try:
            cells = f"{count_cells(e, False)} ({count_cells(e, True)} quick)"
        except LabInputError as exc:
            cells = f"[red]cannot plan:[/] {escape(str(exc))}"
        table.add_row(escape(e.name), escape(e.seed), escape(", ".join(p.name for p in e.parts)), cells,
                      f"{_minutes(e.time_budget)} / {_minutes(e.quick_time_budget)}", escape(e.title))
    out.print(table)
    for problem in broken.values():
        err.print(f"[red]invalid experiment:[/] {escape(problem)}", highlight=False)
    if hint:
        err.print("run one with: clientlab experiment NAME [--quick], or all", highlight=False)


def _run_options(quick: bool, trials: int | None, placement: str, retries: int) -> RunOptions:
    """The quick form: one trial a cell (or --trials), no warm-up; else the stop rule's defaults,
    with a cell's trials cut sooner than a run's."""
    if quick:
        stop, warmup = StopRule(min_trials=trials or 1, max_trials=trials or 1), 0
    else:
        stop = StopRule(min_trials=trials or MEASURING.stop.min_trials, max_trials=trials or MEASURING.stop.max_trials,
                        max_seconds=EXPERIMENT_CELL_S)
        warmup = 1
    return RunOptions(warmup=warmup, stop=stop, placement=placement, retries=retries)


def _run_one(store: Store, e: Experiment, quick: bool, options: RunOptions, extra: list[manifest.Driver],
             findings_path: Path, server_host: tuple[Host, Path] | None = None) -> int:
    """One experiment into one stored run, its findings section written even when interrupted."""
    from clientlab.experiment import findings
    from clientlab.experiment.execute import count_cells, run_experiment
    from clientlab.output.verdicts import print_verdicts

    total = count_cells(e, quick)
    err.print(f"experiment {e.name} ({'quick' if quick else 'full'}): {total} cells, "
              f"time budget {_budget(options.run_budget_s or None)}", highlight=False)
    try:
        with stop_on_sigterm(), ProgressEvents(total, err) as events:
            result = run_experiment(store, e, quick, options, events, extra,
                                    on_note=lambda note: err.print(note, highlight=False), server_host=server_host)
    except KeyboardInterrupt:
        err.print("[yellow]interrupted: everything measured so far is kept[/]")
        run_id = store.runs(limit=1)[0]["id"]
        diagnose_and_store(store, run_id)
        findings.update(findings_path, e.name, findings.section(e, store, run_id))
        raise SystemExit(130)
    diagnose_and_store(store, result.run_id)
    findings.update(findings_path, e.name, findings.section(e, store, result.run_id))
    print_verdicts(out, e, store, result.run_id)
    err.print(f"run {result.run_id}: findings written to {findings_path}", highlight=False)
    return result.run_id


def _budget(seconds: float | None) -> str:
    return "none" if seconds is None else f"{seconds / 60:g} min" if seconds % 60 == 0 else f"{seconds:g} s"


def _minutes(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 60:.3g}"


def findings_target(given: Path | None, write_docs: bool) -> Path:
    """Where findings go: the path given, else the project's docs/findings.md with --write-docs,
    else the lab's data folder, so that a user's run never rewrites a tracked file unasked."""
    if given is not None:
        return given
    return paths.ROOT / "docs" / "findings.md" if write_docs else paths.lab_home() / "findings.md"


@main.command("findings")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path),
              help="The document to write.  [default: findings.md in the lab's data folder (.lab/)]")
@click.option("--write-docs", is_flag=True, help="Write the project's docs/findings.md instead.")
@click.option("--quick-ok", is_flag=True, help="Also use quick-form runs when no full run exists.")
@store_option
def findings_cmd(output: Path | None, write_docs: bool, quick_ok: bool) -> None:
    """Write the findings document again from the newest stored run of each experiment."""
    from clientlab.experiment import findings, spec

    output = findings_target(output, write_docs)
    store = chosen_store()
    runs = findings.latest_runs(store, quick_ok)
    for e in spec.discover().found:
        name = e.name
        if name in runs:
            findings.update(output, name, findings.section(e, store, runs[name]))
            err.print(f"{name}: run {runs[name]}", highlight=False)
        else:
            err.print(f"[yellow]{name}: no finished run (clientlab experiment {name})[/]", highlight=False)
