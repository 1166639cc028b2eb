"""The lab checked against others: crosscheck (nginx, or a plain loop of the same client) and selfbench."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from clientlab import scenario
from clientlab.analysis.stats import StopRule
from clientlab.cli.common import (
    EXIT_FAILED,
    MEASURING,
    HTTP_VERSIONS,
    chosen_store,
    counts_given,
    driver_path_option,
    err,
    load_drivers,
    main,
    out,
    split_names,
    store_option,
    take_lab_lock,
)
from clientlab.cli.hosts import chosen_server_host, hosts_option, server_host_option
from clientlab.drivers import build as builder
from clientlab.drivers import manifest
from clientlab.errors import LabInputError
from clientlab.output.crosscheck import crosscheck_report
from clientlab.output.progress import ProgressEvents
from clientlab.runner import PLACEMENTS, RunOptions, stop_on_sigterm
from clientlab.store import Store

if TYPE_CHECKING:
    from clientlab.hosts.hostsfile import Host

# the check's answer as an exit code (selfcheck/calibrate.py Verdicts.overall): within 0, a cell
# off 1, else a cell not decided 4 (never with --bare, which judges its cells by the median)
EXIT_OFF, EXIT_NOT_DECIDED = EXIT_FAILED, 4
CROSSCHECK_EXIT_CODES = """\b
Exit codes:
  0    every ratio agrees (--bare: its median within 10 %; --plain: every cell within, its
       ratio's CI at 90 % coverage or more inside 0.90–1.10)
  1    a ratio does not (--plain: a cell off, its CI wholly outside 0.90–1.10)
  2    bad usage or input
  3    the lab itself broke
  4    --plain: no cell off, but one not decided (its CI straddles a bound or covers less than
       90 %: too few pairs; or it has no ratio: its loop or its cell failed)
  130  interrupted (Ctrl-C or SIGTERM)"""


@main.command("crosscheck", epilog=CROSSCHECK_EXIT_CODES)
@driver_path_option
@click.option("-d", "--drivers", "driver_names", multiple=True,
              help="Drivers to check (comma-separated). Default: every installed default driver.")
@click.option("-s", "--scenarios", "scenario_names", multiple=True,
              help="Static scenarios (default: get-small, get-json-335k, download-memory, download-file).")
@click.option("-p", "--param", "params", multiple=True, metavar="[SCENARIO.]NAME=VALUE",
              help="Override a scenario parameter, e.g. -p count=500.")
@click.option("--trials", type=click.IntRange(1), help="Exactly this many timed trials per cell.")
@click.option("--placement", type=click.Choice(PLACEMENTS), default=MEASURING.placement, show_default=True)
@click.option("--retries", default=MEASURING.retries, show_default=True, type=click.IntRange(0),
              help="Run a disturbed trial again, at most this many times per cell.")
@click.option("--bare", is_flag=True,
              help="Instead of nginx, check the lab against the same client in a plain loop: each cell's "
                   "timed trials beside the driver's calibration loop (default scenarios: "
                   "get-small, get-json-335k).")
@click.option("--plain", is_flag=True,
              help="Check each driver against its library's own plain loop (plain.<ext> in the driver's "
                   "folder: the library's documented idiom, no lab code), a fresh process after each timed "
                   "trial (default scenarios: get-small, get-json-335k).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path),
              help="With --bare or --plain: also write every pair of lab trial and loop round here.")
@click.option("--http", type=click.Choice(HTTP_VERSIONS),
              help="HTTP version for every scenario, as for `clientlab run` (3: HTTP/3 over QUIC).")
@click.option("--client-timeout", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
              help="Give every client this time limit a request (the job's timeout_s; default: none, each "
                   "library keeps its own). A plain loop keeps its library's default: with --plain this "
                   "measures what the timeout costs.")
@click.option("--time-budget", type=click.FloatRange(0), default=0, metavar="SECONDS",
              help="With --plain: the check's time. Each cell takes pairs until lab ÷ plain is decided (its CI "
                   "wholly inside 0.90–1.10 or wholly outside), the undecided ones in turns until this is spent; "
                   "a cell still short of its minimum then stops with the pairs it has. 0: no limit (at most "
                   "20 pairs a cell).")
@server_host_option
@hosts_option
@store_option
def crosscheck_cmd(driver_paths, driver_names, scenario_names, params, trials, placement, retries, bare,  # noqa: ANN001
                   plain, json_path, http, client_timeout, time_budget, server_host_name, hosts_path) -> None:
    """Is the bench server part of the answer? Each driver on static workloads against the bench
    server and against Debian's nginx (one worker, the same core), in one run, the two servers'
    trials of a scenario taking turns: each driver's
    throughput as a ratio to the fastest, under both servers. They must agree within 10 %.
    The bench ÷ nginx column says which server gave a driver more: where ratios disagree, the
    server that is slower for the fastest drivers is the one in the answer.

    With --bare: is the lab part of the answer? The cells run as `clientlab run` runs them (trials
    of about 0.3 s, interleaved over the run, three processes a cell, its JIT warm-up), and right
    after each timed trial of a cell the same driver program, started as a plain program (same
    core, outside the cell's control group, a new client each round), runs the same requests in a plain
    loop timed by its own clock; lab ÷ bare is the cell's time per request over the loop's, trial
    by trial. It must be within 10 %.

    With --plain: is the driver part of the answer? As --bare, but beside each cell runs its
    library's own plain loop (plain.<ext> in the driver's folder, a few lines in the library's
    documented idiom, no lab code; docs/driver-protocol.md §9), a fresh process after each timed
    trial, as a user's program starts; a JIT runtime's loop warms up first, as the lab's
    processes do. lab ÷ plain must be within 10 %. Unless --trials fixes the count, a cell stops
    once its ratio is decided (within or off), the undecided ones taking more pairs in turns; a
    large answer's cell is also checked in each allocator mode, both sides held in it.

    With --bare or --plain and --server-host NAME, the cells and their loops both reach the bench
    server on that host, across the network. Against nginx, both servers run here."""
    from clientlab.selfcheck import calibrate, crosscheck

    if bare and plain:
        raise LabInputError("--bare and --plain are two references for the same cells: choose one")
    if time_budget and not plain:
        raise LabInputError("--time-budget is the plain-loop check's (--plain): its cells take pairs until "
                            "decided; the other checks run their cells' own trials")
    if server_host_name and not (bare or plain):
        raise LabInputError("crosscheck against nginx runs both servers on this machine: --server-host goes with "
                            "--bare or --plain (the lab against a loop of the same client, both across the network)")
    server_host = chosen_server_host(server_host_name, hosts_path)

    chosen = manifest.select(load_drivers(driver_paths), split_names(driver_names))
    readiness = builder.Readiness()   # each driver's build inputs read once here
    builder.on_first_use(chosen, lambda line: err.print(line, highlight=False), readiness)
    missing = [f"{d.id} ({why})" for d in chosen if (why := readiness.missing(d)) is not None]
    if missing and driver_names:  # named ones must be there; of the defaults, the installed ones run
        raise LabInputError(f"not installed: {'; '.join(missing)}")
    drivers = [d for d in chosen if readiness.missing(d) is None]
    take_lab_lock(False)
    if not drivers:
        raise LabInputError("no installed driver to check (see: clientlab drivers)")
    files, _ = scenario.discover()
    names = split_names(scenario_names) or list(calibrate.SCENARIOS if bare or plain else crosscheck.STATIC_SCENARIOS)
    scenarios = scenario.select(files, names, scenario.parse_overrides(list(params)))
    if http or client_timeout:
        scenarios = [s.with_client(http=http, timeout_s=client_timeout) for s in scenarios]
    stop = StopRule(min_trials=trials or MEASURING.stop.min_trials, max_trials=trials or MEASURING.stop.max_trials)
    options = RunOptions(warmup=1, stop=stop, placement=placement, retries=retries)
    store = chosen_store()
    if plain:
        no_loop = [d.id for d in drivers if d.plain_argv is None]
        if no_loop and driver_names:
            raise LabInputError(f"no plain loop (no `plain` in the manifest): {', '.join(no_loop)}")
        drivers = [d for d in drivers if d.plain_argv is not None]
        if not drivers:
            raise LabInputError("no installed driver has a plain loop (a manifest's `plain`, "
                                "docs/driver-protocol.md §9)")
    if bare or plain:
        # the cells as `clientlab run` measures them (its trial budget, its interleaving, its
        # processes and JIT warm-up), with no time budget: the figures calibrated are the run's
        fixed = frozenset(s.label for s in scenarios if counts_given(files, s.name, params))
        options = dataclasses.replace(options, trial_seconds=MEASURING.trial_seconds, fixed_counts=fixed,
                                      interleave=MEASURING.interleave, forks=MEASURING.forks,
                                      jit_warm_s=MEASURING.jit_warm_s, run_budget_s=time_budget or None)
        if plain:
            from clientlab.selfcheck.plainloop import check_options

            options = check_options(options)
        _calibrate(store, drivers, scenarios, options, json_path, server_host, "plain" if plain else "bare",
                   decide=plain and not trials)
        return
    cells = len(drivers) * len(scenarios) * 2
    with stop_on_sigterm(), ProgressEvents(cells, err, len(drivers)) as events:
        run_id, rows, patterns = crosscheck.run(store, drivers, scenarios, options, events)
    table, lines, failing = crosscheck_report(run_id, rows, patterns)
    out.print(table)
    for line in lines:
        out.print(line, highlight=False)
    if failing:
        raise SystemExit(1)


def _calibrate(store: Store, drivers: list, scenarios: list, options: RunOptions, json_path: Path | None,
               server_host: tuple[Host, Path] | None, reference: str, decide: bool = False) -> None:
    """crosscheck --bare or --plain: the cells beside their loops, a table, exit 1 past the target."""
    from clientlab.selfcheck import calibrate, plainloop
    from clientlab.output.calibration import calibration_table, verdicts_line

    with stop_on_sigterm(), ProgressEvents(len(drivers) * len(scenarios), err, len(drivers)) as events:
        if reference == "plain":
            run_id, cells = plainloop.run(store, drivers, scenarios, options, events, server_host, decide=decide,
                                          on_note=lambda note: err.print(note, highlight=False))
        else:
            run_id, cells = calibrate.run(store, drivers, scenarios, options, events, server_host)
    where = f", server on host {server_host[0].name}" if server_host else ""
    beside = ("its library's own plain loop" if reference == "plain"
              else "the same client in a plain loop of its own request path")
    table, notes = calibration_table(cells, f"crosscheck --{reference}, run {run_id}, placement "
                                            f"{options.placement}{where}: the lab beside {beside}")
    out.print(table)
    for note in notes:
        out.print(note)
    if json_path:
        json_path.write_text(json.dumps([c.to_dict() for c in cells], indent=1))
    out.print(verdicts_line(cells), highlight=False)
    if code := check_exit_code(cells):
        raise SystemExit(code)


def check_exit_code(cells: list) -> int:
    """crosscheck --bare's or --plain's exit code: the check's answer over its cells (calibrate's
    Verdicts, which the summary line says too)."""
    from clientlab.selfcheck import calibrate

    answer = calibrate.Verdicts.of(cells).overall
    return {calibrate.OFF: EXIT_OFF, calibrate.NOT_DECIDED: EXIT_NOT_DECIDED}.get(answer or calibrate.WITHIN, 0)


@main.command("selfbench")
@driver_path_option
@click.option("-d", "--drivers", "driver_names", multiple=True, help="Drivers to compare with (default: all installed).")
@click.option("--seconds", default=5, show_default=True, help="Length of the wrk measurement.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), help="Also write the figures here.")
def selfbench_cmd(driver_paths, driver_names, seconds, json_path) -> None:  # noqa: ANN001
    """The lab's own figures, each with its target (met / missed):

    \b
    - the bench server against Debian's nginx (one worker each, the same core): req/s, MB/s and
      CPU per request at 1 to 10,000 connections (wrk, HTTP/1.1) and over HTTP/2 (h2load);
    - the server's rate against the fastest sequential and parallel drivers, and its CPU per
      request against the cheapest driver's;
    - the lab's overhead on a 1-second trial, the spread of such trials, and the machine's noise
      floor (fixed CPU work timed ten times);
    - placements (split / shared / free): per-request time and spread of one driver under each."""
    from clientlab.selfcheck import selfbench
    from clientlab.output.selfbench import figures_report, nginx_report

    drivers = manifest.select(load_drivers(driver_paths), split_names(driver_names))
    take_lab_lock(False)
    result = selfbench.measure(drivers, seconds, err)
    for table, notes in (nginx_report(result), figures_report(result)):
        out.print(table)
        for note in notes:
            err.print(note, highlight=False)
    if json_path:
        json_path.write_text(json.dumps(result, indent=2) + "\n")
