"""clientlab run: the drivers × scenarios matrix, verified, timed, stored and printed."""

from __future__ import annotations

import os
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.markup import escape

from clientlab import export as exporters
from clientlab import scenario
from clientlab.analysis.stats import StopRule
from clientlab.cli.choice import chosen_drivers, chosen_scenarios
from clientlab.cli.common import (
    MEASURING,
    EXIT_CODES,
    chosen_store,
    counts_given,
    diagnose_and_store,
    driver_path_option,
    err,
    exit_if_cells_failed,
    known_http_versions,
    main,
    no_wait_option,
    print_run,
    runtimes_option,
    scenario_path_option,
    store_option,
    take_lab_lock,
    use_scenario_paths,
)
from clientlab.cli.hosts import chosen_server_host, hosts_option, server_host_option
from clientlab.drivers import build as builder
from clientlab.drivers import manifest, runtimes
from clientlab.netlab.lab import open_server_side
from clientlab.output.progress import ProgressEvents
from clientlab.wrap import print_wrapped
from clientlab.runner import (
    INTERLEAVES,
    PLACEMENTS,
    Placement,
    RunOptions,
    lab_run,
    run_matrix,
    stop_on_sigterm,
)
from clientlab.store import Store

if TYPE_CHECKING:
    from collections.abc import Callable

    from clientlab.hosts.hostsfile import Host
    from clientlab.netlab.profile import Profile
    from clientlab.runner.cellrunner import Profiler
    from clientlab.servers.side import ServerSide


def _job_size_renamed(_ctx: click.Context, _param: click.Parameter, value: int | None) -> int | None:
    """--job-size still works, saying it is --batch-size now: a fleet run's unit of work is a batch,
    and a job is what a driver is given (docs/driver-protocol.md)."""
    if value is not None:
        err.print("[yellow]--job-size is deprecated: it is --batch-size now (a fleet run shares its drivers out in "
                  "batches; a job is what a driver is given)[/]", highlight=False)
    return value


@main.command("run", epilog=EXIT_CODES)
@driver_path_option
@scenario_path_option
@no_wait_option
@click.option("-d", "--drivers", "driver_names", multiple=True,
              help="Drivers to run (comma-separated or repeated; 'all', or a glob such as 'python-*'). "
                   "Default: every installed default driver.")
@click.option("-s", "--scenarios", "scenario_names", multiple=True,
              help="Scenarios to run (comma-separated or repeated). Default: the default scenarios.")
@click.option("-p", "--param", "params", multiple=True, metavar="[SCENARIO.]NAME=VALUE",
              help="Override a scenario parameter, e.g. -p count=500 or -p download-file.size=1GB.")
@click.option("--http", "http_versions", multiple=True, metavar="VERSION[,VERSION…]", callback=known_http_versions,
              help="HTTP version for every scenario: 1.1, 2 (over TLS, https), h2c (cleartext, prior knowledge) "
                   "or 3 (over QUIC: https, the server's UDP port). Several (--http 2,3): each scenario once per "
                   "version, the cells taking turns in one run, so that versions compare like for like.")
@click.option("--concurrency", type=click.IntRange(1), help="Requests in flight at once, for every scenario.")
@click.option("--keep-alive/--no-keep-alive", default=None, help="Reuse connections, or one per request.")
@click.option("-o", "--option", "client_options", multiple=True, metavar="NAME=VALUE",
              help="A driver option for every scenario, e.g. -o tcp_nodelay=false -o max_host_connections=6 "
                   "-o share=dns,tls (docs/driver-protocol.md). Drivers that cannot honour it answer unsupported.")
@click.option("--server-headers", type=click.Choice(["nginx", "minimal"]),
              help="The bench server's answers' heads for every scenario: nginx (Debian's nginx's headers for "
                   "the same resource, the default) or minimal (Content-Length, Content-Type, Date); the cells "
                   "say so in their names (docs/bench-server.md).")
@click.option("--trials", type=click.IntRange(1), help="Exactly this many timed trials per cell.")
@click.option("--min-trials", default=MEASURING.stop.min_trials, show_default=True, type=click.IntRange(1))
@click.option("--max-trials", default=MEASURING.stop.max_trials, show_default=True, type=click.IntRange(1))
@click.option("--precision", default=MEASURING.stop.target_precision, show_default=True,
              type=click.FloatRange(0.0001, 1),
              help="Stop adding trials once half the median's 95% CI is this fraction of the median.")
@click.option("--max-cell-seconds", default=MEASURING.stop.max_seconds, show_default=True,
              help="After --min-trials, stop a cell's trials once they took this long.")
@click.option("--warmup", default=MEASURING.warmup, show_default=True, type=click.IntRange(0),
              help="Untimed trials first (a driver's manifest may ask for more: JIT runtimes).")
@click.option("--fresh-process", is_flag=True, help="Start a new driver process for every trial (cold cost).")
@click.option("--trial-seconds", default=MEASURING.trial_seconds, show_default=True, type=click.FloatRange(0),
              help="Time budget of one trial: request counts are scaled down so that a trial lasts about this "
                   "long (the table says the count used). 0: the counts as the scenarios write them. "
                   "Counts you set with -p are never scaled.")
@click.option("--trial-timeout", type=click.FloatRange(0.1), metavar="SECONDS",
              help="A timed trial that has not finished after this long fails its cell. "
                   "Default: 10× what the verification pass predicts, at least 10 s.")
@click.option("--placement", type=click.Choice(PLACEMENTS), default=MEASURING.placement, show_default=True,
              help="split: driver and server on different cores; shared: both on one core; free: the "
                   "scheduler decides (docs/measurement.md says what each measures).")
@click.option("--retries", default=MEASURING.retries, show_default=True, type=click.IntRange(0),
              help="Run a trial again when steal, other processes or a slow phase of the host disturbed it, "
                   "at most this many times per cell.")
@click.option("--interleave", type=click.Choice(INTERLEAVES), default=MEASURING.interleave, show_default=True,
              help="Which cells take turns trial by trial: the drivers of one scenario (scenarios one after "
                   "another), or every cell of the run (each cell's trials spread over the whole run).")
@click.option("--time-budget", default=MEASURING.run_budget_s, show_default=True, type=click.FloatRange(0),
              metavar="SECONDS",
              help="The run's time: the cells' rounds of trials go on until it is spent (with --interleave "
                   "scenario, each scenario gets an equal share of what is left); then a cell with --min-trials "
                   "timed trials stops there (flagged 'cut by time budget'; its ± says how precise it is). On a "
                   "noisy host this keeps the run to minutes; 0: no limit.")
@click.option("--forks", default=MEASURING.forks, show_default=True, type=click.IntRange(1, 100),
              help="Spread each cell's timed trials over this many driver processes, each warmed up, so that "
                   "one process's own state (its heap's place, its allocator) is not the cell's figure. "
                   "JIT drivers (Java, Node.js) keep one process: it takes them a minute to settle.")
@click.option("--format", "fmt", type=click.Choice(["auto", "table", "long", "markdown", "json"]), default="auto", show_default=True,
              help="How the result is printed: long (per scenario, fastest first; a cell takes two lines "
                   "at 80 columns, one on wider terminals), table (drivers × scenarios), markdown (a table "
                   "per scenario), json; auto: long.")
@click.option("--net", "net_name", default="loopback", show_default=True, metavar="PROFILE",
              help="Network profile (networks/*.toml, see `clientlab net list`): e.g. lan-1g, lan-100m, wan-50ms, "
                   "dns-slow. Anything but loopback runs client and server in their own namespaces (needs root).")
@server_host_option
@hosts_option
@runtimes_option
@store_option
@click.option("--on", "on_hosts", metavar="HOST[,HOST…]",
              help="Share the matrix out over these lab hosts of the hosts file (--hosts): batches of drivers × "
                   "every scenario, each with the baseline driver, one at a time a host (docs/many-machines.md).")
@click.option("--batch-size", type=click.IntRange(1), metavar="DRIVERS",
              help="With --on: drivers a batch (besides the baseline). Default: one batch a host.")
@click.option("--job-size", type=click.IntRange(1), hidden=True, callback=_job_size_renamed,
              help="The old name of --batch-size.")
@click.option("--baseline", default="c-libcurl", show_default=True, metavar="DRIVER",
              help="With --on: the driver every batch measures too; each cell is read as a ratio to it.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the run as JSON here (rewritten after every cell).")
@click.option("--allocator-modes/--no-allocator-modes", default=True, show_default=True,
              help="A cell whose bodies can sit on the heap or be mapped anew also runs a few trials in each "
                   "mode on purpose (glibc's tunables), shown beside its figure (docs/measurement.md).")
@click.option("--profile", "profile_cells", is_flag=True,
              help="Also profile every measured cell (extra trials with a sampling profiler, never in the "
                   "figures): where its CPU went, in layers (docs/profiles.md).")
def run_cmd(driver_paths, scenario_paths, no_wait, driver_names, scenario_names, params, http_versions, concurrency,
            keep_alive, client_options, server_headers,
            trials, min_trials, max_trials, precision, max_cell_seconds, warmup, fresh_process,
            trial_seconds, trial_timeout, placement, retries, interleave, time_budget, forks, fmt, net_name,
            server_host_name, hosts_path, runtime_specs, json_path, on_hosts, batch_size, job_size, baseline,
            allocator_modes=True, profile_cells=False) -> None:
    """Verify, then time every selected driver on every selected scenario.

    Every cell is verified and warmed up, then the cells take turns trial by trial (round-robin,
    over the whole run; --interleave scenario: scenario by scenario), each trial on a fresh server
    port; a trial disturbed by steal, other processes or a slow phase of the host (read by a probe
    on the driver's core before and after it) is run again. With no arguments: every
    installed default driver on the default scenarios, trials of about --trial-seconds each,
    within --time-budget (a noisy host gets fewer trials per cell, not a longer run).
    One measuring run per machine: a second one waits for the first (or exits 75 with --no-wait)."""
    use_scenario_paths(scenario_paths)
    if on_hosts:  # this machine coordinates the lab hosts: it measures nothing and takes no lab lock
        from clientlab.cli.fleet import run_on_hosts
        run_on_hosts(click.get_current_context(), on_hosts, hosts_path, batch_size or job_size, baseline)
        return
    readiness = builder.Readiness()   # the run's: each driver's build inputs read once
    chosen = _on_runtimes(chosen_drivers(driver_paths, driver_names, readiness), runtime_specs, readiness)
    builder.on_first_use(chosen, lambda line: err.print(line, highlight=False), readiness)
    files, scenarios = chosen_scenarios(scenario_names, params, http_versions, concurrency, keep_alive,
                                         client_options, server_headers)
    stop = StopRule(min_trials=trials or min_trials, max_trials=trials or max(max_trials, min_trials),
                    target_precision=precision, max_seconds=max_cell_seconds)
    fixed = frozenset(s.label for s in scenarios if counts_given(files, s.name, params))
    options = RunOptions(warmup=warmup, stop=stop, fresh_process=fresh_process, placement=placement,
                         trial_seconds=trial_seconds or None, fixed_counts=fixed, trial_timeout_s=trial_timeout,
                         retries=retries, interleave=interleave, run_budget_s=time_budget or None, forks=forks,
                         jit_warm_s=MEASURING.jit_warm_s, profiler=_cell_profiler() if profile_cells else None,
                         allocator_modes=allocator_modes)
    profile = _network_profile(net_name, scenarios)
    config = _run_config(chosen, scenarios, options, profile.name, net_name, runtime_specs)
    if profile_cells:
        config["profile"] = True
    server_host = chosen_server_host(server_host_name, hosts_path, net_name)
    if server_host is not None:
        config["server_host"] = server_host_name
    take_lab_lock(no_wait)
    store = chosen_store()
    run_id, interrupted = _measured(store, config, chosen, scenarios, options,
                                    _Network(profile, net_name, server_host), json_path, readiness)
    print_run(store, run_id, fmt)
    if interrupted:
        raise SystemExit(130)
    exit_if_cells_failed(store, [run_id])


def _cell_profiler() -> Callable[[Store], Profiler]:
    from clientlab.profile import CellProfiler

    return CellProfiler


def _run_config(chosen: list[manifest.Driver], scenarios: list[scenario.Scenario], options: RunOptions,
                profile_name: str, net_name: str, runtime_specs: tuple[str, ...]) -> dict:
    """What the run stores about itself: what it ran, and how."""
    return {"command": "clientlab " + shlex.join(sys.argv[1:]),
            "drivers": [d.id for d in chosen], "scenarios": [s.label for s in scenarios],
            "params": {s.label: s.params for s in scenarios},
            "client": {s.label: s.client.model_dump() for s in scenarios},
            "server": {s.label: s.server.model_dump() for s in scenarios}, "warmup": options.warmup,
            "fresh_process": options.fresh_process, "stop": vars(options.stop),
            "net": {"profile": profile_name, "asked": net_name}, "lab_version": _lab_version(),
            "placement": Placement.of(options.placement).name, "trial_seconds": options.trial_seconds,
            "retries": options.retries, "interleave": options.interleave, "time_budget_s": options.run_budget_s,
            "forks": options.forks, "runtimes": list(runtime_specs)}


@dataclass(frozen=True)
class _Network:
    """Where the run's server side is: a profile of this machine, or a server host's path."""

    profile: Profile
    asked: str
    server_host: tuple[Host, Path] | None = None   # the host and the lab's known_hosts

    def name(self) -> str:
        return f"server-host:{self.server_host[0].name}" if self.server_host else self.profile.name

    def open(self, cpu: int | None) -> ServerSide:
        if self.server_host is not None:
            from clientlab.hosts.benchserver import ServerHost

            err.print(f"starting the bench server on host {self.server_host[0].name} …", highlight=False)
            return ServerHost(*self.server_host)
        return open_server_side(self.profile, cpu)


def _measured(store: Store, config: dict, chosen: list[manifest.Driver], scenarios: list[scenario.Scenario],
              options: RunOptions, network: _Network, json_path: Path | None,
              readiness: builder.Readiness) -> tuple[int, bool]:
    """(the stored run, whether it was interrupted): the run measured, its cells diagnosed and its
    JSON written, however it ended; everything measured is kept."""
    run_id, interrupted = None, False
    try:
        with lab_run(store, config, options, readiness=readiness) as lab:
            run_id = lab.run_id
            print_wrapped(err, f"run {run_id}: {len(chosen)} driver(s) × {len(scenarios)} scenario(s) on network "
                               f"'{network.name()}', results in {store.where}")
            with stop_on_sigterm(), ProgressEvents(len(chosen) * len(scenarios), err, len(chosen)) as events:
                lab.events = events
                run_matrix(lab, chosen, scenarios,
                           lambda _result: json_path and exporters.write(store, run_id, "json", json_path),
                           lambda cpu: _open_network(store, run_id, network, cpu))
    except KeyboardInterrupt:
        interrupted = True
        err.print("[yellow]interrupted: everything measured so far is kept[/]")
    finally:
        if run_id is not None:
            diagnose_and_store(store, run_id)
            if json_path:
                exporters.write(store, run_id, "json", json_path)
    assert run_id is not None
    return run_id, interrupted


def _open_network(store: Store, run_id: int, network: _Network, cpu: int | None) -> ServerSide:
    """The run's server side; a network's description (measured RTT) goes with the run."""
    server = network.open(cpu)
    if (described := server.describe()) is not None:
        net = {**described, "asked": network.asked}
        store.update_config(run_id, net=net)
        rates = "".join(f", {what} {net[key]:,.0f} Mbit/s" for what, key in
                        (("down", "measured_download_mbit"), ("up", "measured_upload_mbit")) if key in net)
        err.print(f"network '{network.name()}' ({net['summary']}): measured RTT {net['measured_rtt_ms']:.2f} ms"
                  + rates + "".join(f"; {n}" for n in net["notes"]), highlight=False)
    return server


def _on_runtimes(chosen: list, specs: tuple[str, ...], readiness: builder.Readiness) -> list:
    """The drivers on the runtime lines asked for, each line's build made first (with progress)."""
    if not specs:
        return chosen
    variants = manifest.on_runtimes(chosen, runtimes.parse(list(specs)))
    for d in variants:
        if d.variant is not None and not readiness.is_built(d):
            err.print(f"building {d.id} (on {d.variant.kind} {d.variant.version}) …", highlight=False)
            ok, what = builder.build(d)
            readiness.forget(d)
            err.print(f"[{'green' if ok else 'red'}]{d.id}[/]: {escape(what)}", highlight=False)
    return variants




def _network_profile(name: str, scenarios: list) -> Profile:
    """The asked profile, or loopback (with what that cannot do, per scenario) when the network lab
    cannot run here."""
    from clientlab.netlab import namespaces
    from clientlab.netlab import profile as netprofile

    asked = netprofile.get(name)
    reason = namespaces.why_unavailable() if asked.namespaces else None
    if reason is None:
        return asked
    err.print(f"[yellow]network profile '{name}' needs the network lab, which cannot run here: {reason}. "
              "Running on loopback instead.[/]", highlight=False)
    for s in scenarios:
        err.print(f"  {s.label}: on loopback, without {asked.summary()} (no lab DNS, no shaped link)", highlight=False)
    return netprofile.get("loopback")


def _lab_version() -> str:
    from clientlab import __version__
    return __version__


def _profile(**kwargs) -> None:
    """Verify, time and profile the chosen cells (the options of `run`), then print where each
    cell's CPU went: its layers and top paths (docs/profiles.md).

    Each measured cell gets extra trials after its timed ones, with a sampling profiler attached
    to the driver's process tree (perf for every language, beside py-spy for Python, rbspy for
    Ruby, excimer for PHP, NYTProf for Perl, JFR for Java); they are stored as `profiled` trials
    and never enter the figures. The profilers install on first use."""
    from clientlab.profile.text import render

    ctx = click.get_current_context()
    began = time.time()
    try:
        ctx.invoke(run_cmd, **kwargs, profile_cells=True, on_hosts=None, batch_size=None, job_size=None,
                   baseline="c-libcurl")
    finally:
        # the profiles of the run just made, however it ended (none when it never started)
        store = chosen_store()
        run_id = own_run(store, os.getpid(), began)
        if run_id is not None and store.run(run_id)["config"].get("profile"):
            views = [render(store, c) for c in store.cells(run_id) if c["status"] == "ok"]
            if views:
                click.echo("\n" + "\n\n".join(views))


def own_run(store: Store, pid: int, since: float) -> int | None:
    """The newest run process `pid` started since `since` (Unix seconds), None if none: the
    store's newest run may be another session's, started on the same store meanwhile."""
    for run_id in reversed(store.run_ids()):
        row = store.run(run_id)
        if row["started_at"] < since:
            return None
        if row.get("pid") == pid:
            return run_id
    return None


profile_cmd = click.Command(
    "profile", callback=_profile, help=_profile.__doc__, epilog=EXIT_CODES,
    params=[p for p in run_cmd.params
            if p.name not in ("profile_cells", "on_hosts", "batch_size", "job_size", "baseline")])
main.add_command(profile_cmd)
