"""The `clientlab` command: parse, load, run, store, print."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from clientlab import build as builder
from clientlab import export as exporters
from clientlab import machine, manifest, paths, runtimes, scenario
from clientlab.errors import LabError, LabInputError
from clientlab.output.diagnosis import print_findings
from clientlab.output.progress import ProgressEvents
from clientlab.output.long import long_lines
from clientlab.output.table import CAPTION, results_table, width_needed
from clientlab.output.cellfigures import DEPARTED, said_once_line
from clientlab.output.whatran import print_what_ran
from clientlab.netlab.lab import open_server_side
from clientlab.runner import INTERLEAVES, JIT_WARM_S, PLACEMENTS, Placement, RunOptions, run_matrix, stop_on_sigterm
from clientlab.stats import StopRule
from clientlab.store import Store

# a pipe has no width: rich would lay tables out in 80 columns and cut theirs to a letter or two
PIPE_WIDTH = 240
out = Console(width=None if sys.stdout.isatty() or os.environ.get("COLUMNS") else PIPE_WIDTH)
err = Console(stderr=True, soft_wrap=True)  # messages stay one line each in logs and pipes

DEFAULT_TRIAL_S = 0.3         # a plain `clientlab run` of the default drivers answers in minutes
DEFAULT_PLACEMENT = "shared"   # the most repeatable here (clientlab selfbench, docs/measurement.md)
DEFAULT_INTERLEAVE = "run"       # the host's drift over minutes hits every cell alike (docs/measurement.md)
DEFAULT_TIME_BUDGET_S = 240.0  # with start-up and set-up, a plain run ends within 5 minutes
DEFAULT_FORKS = 3  # a cell's figure is not one process's state (docs/measurement.md, "Forks")

runtimes_option = click.option(
    "--runtimes", "runtime_specs", multiple=True, metavar="KIND=LINE[,LINE…]",
    help="Run each chosen driver of this runtime on these lines, each its own cell (node-fetch@node22), "
         "e.g. --runtimes node=20,22,24,26 --runtimes go=1.24,1.26 --runtimes python=3.12; the lines "
         "pinned in setup/runtimes.toml. A line's build is made on first use.")

driver_path_option = click.option(
    "--driver-path", "driver_paths", multiple=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Also load drivers from this folder (a driver folder, or a folder of them). Repeatable.",
)


def _drivers(driver_paths: tuple[Path, ...]) -> list[manifest.Driver]:
    drivers, problems = manifest.discover(list(driver_paths))
    for problem in problems:
        err.print(f"[yellow]warning:[/] {escape(problem)}", highlight=False)
    return drivers


def _split(values: tuple[str, ...]) -> list[str] | None:
    names = [n.strip() for v in values for n in v.split(",") if n.strip()]
    return names or None


# -- input and machine guards (issue 10): user scenario folders, the run lock, exit codes ----------

EXIT_FAILED, EXIT_USAGE, EXIT_LAB, EXIT_BUSY, EXIT_INTERRUPTED = 1, 2, 3, 75, 130
EXIT_CODES = """\b
Exit codes:
  0    done; every cell ok, unsupported or not installed
  1    some cells failed (the summary at the end names them)
  2    bad usage or input: an option, a -p/-o value, a scenario or other lab file
  3    the lab itself broke (the bench server died, the store cannot be written)
  75   --no-wait, and another measuring run holds the lab (it names it)
  130  interrupted (Ctrl-C or SIGTERM); everything measured so far is kept"""

scenario_path_option = click.option(
    "--scenario-path", "scenario_paths", multiple=True, type=click.Path(path_type=Path),
    help="Also load scenarios from this folder (its *.toml files, validated as the shipped ones). Repeatable.",
)
no_wait_option = click.option(
    "--no-wait", is_flag=True,
    help="When another measuring run holds the lab (one per machine), exit with code 75 instead of waiting.",
)


def _use_scenario_paths(scenario_paths: tuple[Path, ...]) -> None:
    scenario.use_paths(scenario_paths)


def _take_lab_lock(no_wait: bool) -> None:
    """One measuring run per machine: wait for the lab (saying who holds it), or exit 75 with
    --no-wait. Held until the command ends."""
    from clientlab.runlock import LabBusy, RunLock

    lock = RunLock()
    try:
        lock.acquire(wait=not no_wait, on_wait=lambda message: err.print(escape(message), highlight=False))
    except LabBusy as exc:
        err.print(f"[red]busy:[/] {escape(str(exc))}", highlight=False)
        raise SystemExit(EXIT_BUSY) from None
    click.get_current_context().call_on_close(lock.release)


def _exit_if_cells_failed(store: Store, run_ids: list[int]) -> None:
    """Exit 1 when a cell of these runs failed, naming them (unsupported and not installed are fine)."""
    failed = [c for run_id in run_ids for c in store.cells(run_id) if c["status"] == "failed"]
    if not failed:
        return
    err.print(f"[red]{len(failed)} cell(s) failed:[/]", highlight=False)
    for c in failed:
        reason = (c["reason"] or "").splitlines()[0][:200] if c["reason"] else "no reason given"
        err.print(escape(f"  {c['driver']} × {c['scenario']}: {reason}"), highlight=False)
    raise SystemExit(EXIT_FAILED)


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, epilog=EXIT_CODES)
def main() -> None:
    """clientlab — the HTTP client lab.

    Benchmarks HTTP client libraries (drivers) on workloads (scenarios) against an
    instrumented bench server it starts itself. Every cell is verified before it is timed;
    wall time, CPU and peak memory are measured by the lab, never taken from the driver.

    \b
    Typical use:
      clientlab drivers                 what clients exist and which are installed
      clientlab scenarios               the workloads
      clientlab run                     every installed driver on the default scenarios
      clientlab run -d python-requests -s get-small -p count=500
      clientlab show last               the table of the last run again
    """


@main.command("drivers")
@driver_path_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def drivers_cmd(driver_paths: tuple[Path, ...], as_json: bool) -> None:
    """List drivers, whether they are installed, and why not."""
    drivers = _drivers(driver_paths)
    rows = [{
        "id": d.id, "language": d.manifest.language, "library": d.manifest.library,
        "description": d.manifest.description, "capabilities": d.manifest.capabilities,
        "default": d.manifest.default, "folder": str(d.folder), "departures": d.manifest.departures,
        "runtime": f"{d.runtime.kind} {d.runtime.version}" if d.runtime else None,
        "installed": (missing := d.missing()) is None, "why_not": missing,
    } for d in drivers]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    table = Table(title="drivers")
    for column in ("id", "library", "installed", "capabilities", "how it is used"):
        table.add_column(column, overflow="fold")
    for r in rows:
        installed = "[green]yes[/]" if r["installed"] else f"[red]no[/]: {escape(r['why_not'])}"
        how = escape(r["description"]) + "".join(f"\n[magenta]{DEPARTED} {escape(x)}[/]" for x in r["departures"])
        library = escape(r["library"]) + (f"\n[dim]on {escape(r['runtime'])}[/]" if r["runtime"] else "")
        table.add_row(r["id"], library, installed, ", ".join(r["capabilities"]), how)
    out.print(table)


@main.command("scenarios")
@scenario_path_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def scenarios_cmd(scenario_paths: tuple[Path, ...], as_json: bool) -> None:
    """List scenarios, their parameters and what they need from a driver."""
    _use_scenario_paths(scenario_paths)
    files, problems = scenario.discover()
    rows = []
    for f in files:
        s = f.expand()
        rows.append({"name": s.name, "description": s.description, "default": s.default, "metric": s.metric,
                     "params": f.params, "requests": s.total_requests, "file": str(f.path)})
    if as_json:
        click.echo(json.dumps({"scenarios": rows, "invalid": problems}, indent=2))
        return
    table = Table(title="scenarios")
    for column in ("name", "default", "requests", "params", "description"):
        table.add_column(column, overflow="fold")
    for r in rows:
        params = " ".join(f"{k}={v}" for k, v in r["params"].items())
        table.add_row(r["name"], "yes" if r["default"] else "no", str(r["requests"]), escape(params),
                      escape(r["description"]))
    out.print(table)
    for problem in problems:
        err.print(f"[red]invalid scenario:[/] {escape(problem)}", highlight=False)


@main.command("build")
@driver_path_option
@click.option("-d", "--drivers", "driver_names", multiple=True, help="Only these drivers (comma-separated).")
@click.option("--force", is_flag=True, help="Rebuild even when the build inputs did not change.")
@runtimes_option
def build_cmd(driver_paths: tuple[Path, ...], driver_names: tuple[str, ...], force: bool,
              runtime_specs: tuple[str, ...]) -> None:
    """Build drivers (venvs, compiled programs, the runtime builds they run on); skips the ones
    that are up to date."""
    drivers = _drivers(driver_paths)
    wanted = _split(driver_names)
    chosen = manifest.select(drivers, wanted) if wanted else drivers
    chosen = manifest.on_runtimes(chosen, runtimes.parse(list(runtime_specs)))
    failed = 0
    for d in chosen:
        ok, what = builder.build(d, force=force)
        failed += not ok
        style = "green" if ok else "red"
        err.print(f"[{style}]{d.id}[/]: {what}", highlight=False)
    if failed:
        raise SystemExit(1)


@main.command("run", epilog=EXIT_CODES)
@driver_path_option
@scenario_path_option
@no_wait_option
@click.option("-d", "--drivers", "driver_names", multiple=True,
              help="Drivers to run (comma-separated or repeated). Default: every installed default driver.")
@click.option("-s", "--scenarios", "scenario_names", multiple=True,
              help="Scenarios to run (comma-separated or repeated). Default: the default scenarios.")
@click.option("-p", "--param", "params", multiple=True, metavar="[SCENARIO.]NAME=VALUE",
              help="Override a scenario parameter, e.g. -p count=500 or -p download-file.size=1GB.")
@click.option("--http", type=click.Choice(["1.1", "2", "h2c"]),
              help="HTTP version for every scenario: 2 is over TLS (https), h2c is cleartext with prior knowledge.")
@click.option("--concurrency", type=click.IntRange(1), help="Requests in flight at once, for every scenario.")
@click.option("--keep-alive/--no-keep-alive", default=None, help="Reuse connections, or one per request.")
@click.option("-o", "--option", "client_options", multiple=True, metavar="NAME=VALUE",
              help="A driver option for every scenario, e.g. -o tcp_nodelay=false -o max_host_connections=6 "
                   "-o share=dns,tls (docs/driver-protocol.md). Drivers that cannot honour it answer unsupported.")
@click.option("--trials", type=click.IntRange(1), help="Exactly this many timed trials per cell.")
@click.option("--min-trials", default=3, show_default=True, type=click.IntRange(1))
@click.option("--max-trials", default=10, show_default=True, type=click.IntRange(1))
@click.option("--precision", default=0.02, show_default=True, type=click.FloatRange(0.0001, 1),
              help="Stop adding trials once half the median's 95% CI is this fraction of the median.")
@click.option("--max-cell-seconds", default=60.0, show_default=True,
              help="After --min-trials, stop a cell's trials once they took this long.")
@click.option("--warmup", default=1, show_default=True, type=click.IntRange(0),
              help="Untimed trials first (a driver's manifest may ask for more: JIT runtimes).")
@click.option("--fresh-process", is_flag=True, help="Start a new driver process for every trial (cold cost).")
@click.option("--trial-seconds", default=DEFAULT_TRIAL_S, show_default=True, type=click.FloatRange(0),
              help="Time budget of one trial: request counts are scaled down so that a trial lasts about this "
                   "long (the table says the count used). 0: the counts as the scenarios write them. "
                   "Counts you set with -p are never scaled.")
@click.option("--trial-timeout", type=click.FloatRange(0.1), metavar="SECONDS",
              help="A timed trial that has not finished after this long fails its cell. "
                   "Default: 10× what the verification pass predicts, at least 10 s.")
@click.option("--placement", type=click.Choice(PLACEMENTS), default=DEFAULT_PLACEMENT, show_default=True,
              help="split: driver and server on different cores; shared: both on one core; free: the "
                   "scheduler decides (docs/measurement.md says what each measures).")
@click.option("--retries", default=3, show_default=True, type=click.IntRange(0),
              help="Run a trial again when steal, other processes or a slow phase of the host disturbed it, "
                   "at most this many times per cell.")
@click.option("--interleave", type=click.Choice(INTERLEAVES), default=DEFAULT_INTERLEAVE, show_default=True,
              help="Which cells take turns trial by trial: the drivers of one scenario (scenarios one after "
                   "another), or every cell of the run (each cell's trials spread over the whole run).")
@click.option("--time-budget", default=DEFAULT_TIME_BUDGET_S, show_default=True, type=click.FloatRange(0),
              metavar="SECONDS",
              help="The run's time: the cells' rounds of trials go on until it is spent (with --interleave "
                   "scenario, each scenario gets an equal share of what is left); then a cell with --min-trials "
                   "timed trials stops there (flagged 'cut by time budget'; its ± says how precise it is). On a "
                   "noisy host this keeps the run to minutes; 0: no limit.")
@click.option("--forks", default=DEFAULT_FORKS, show_default=True, type=click.IntRange(1, 100),
              help="Spread each cell's timed trials over this many driver processes, each warmed up, so that "
                   "one process's own state (its heap's place, its allocator) is not the cell's figure. "
                   "JIT drivers (Java, Node.js) keep one process: it takes them a minute to settle.")
@click.option("--format", "fmt", type=click.Choice(["auto", "table", "long", "json"]), default="auto", show_default=True,
              help="How the result is printed: a table (drivers × scenarios), long (one line per cell), "
                   "json; auto: the table when the terminal is wide enough, else long.")
@click.option("--net", "net_name", default="loopback", show_default=True, metavar="PROFILE",
              help="Network profile (networks/*.toml, see `clientlab net list`): e.g. lan-1g, lan-100m, wan-50ms, "
                   "dns-slow. Anything but loopback runs client and server in their own namespaces (needs root).")
@runtimes_option
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the run as JSON here (rewritten after every cell).")
def run_cmd(driver_paths, scenario_paths, no_wait, driver_names, scenario_names, params, http, concurrency,
            keep_alive, client_options,
            trials, min_trials, max_trials, precision, max_cell_seconds, warmup, fresh_process,
            trial_seconds, trial_timeout, placement, retries, interleave, time_budget, forks, fmt, net_name,
            runtime_specs, json_path) -> None:  # noqa: ANN001
    """Verify, then time every selected driver on every selected scenario.

    Every cell is verified and warmed up, then the cells take turns trial by trial (round-robin,
    over the whole run; --interleave scenario: scenario by scenario), each trial on a fresh server
    port; a trial disturbed by steal, other processes or a slow phase of the host (read by a probe
    on the driver's core before and after it) is run again. With no arguments: every
    installed default driver on the default scenarios, trials of about --trial-seconds each,
    within --time-budget (a noisy host gets fewer trials per cell, not a longer run).
    One measuring run per machine: a second one waits for the first (or exits 75 with --no-wait)."""
    _use_scenario_paths(scenario_paths)
    drivers = _drivers(driver_paths)
    wanted = _split(driver_names)
    every = wanted == ["all"]
    chosen = [d for d in drivers] if every else manifest.select(drivers, wanted)
    if every:
        wanted = None
    if not wanted:
        skipped = [d for d in chosen if d.missing()]
        for d in skipped:
            err.print(f"[dim]not installed, skipped: {d.id} ({escape(d.missing() or '')})[/]", highlight=False)
        chosen = [d for d in chosen if d not in skipped]
    if not chosen:
        raise LabInputError("no installed driver to run (see: clientlab drivers)")
    chosen = _on_runtimes(chosen, runtime_specs)
    files, problems = scenario.discover()
    for problem in problems:
        err.print(f"[red]invalid scenario, skipped:[/] {escape(problem)}", highlight=False)
    scenarios = scenario.select(files, _split(scenario_names), scenario.parse_overrides(list(params)))
    if not scenarios:
        raise LabInputError("no scenario selected")
    options_given = scenario.parse_options(list(client_options))
    changed = []
    for s in scenarios:
        try:
            changed.append(s.with_client(http=http, concurrency=concurrency, keep_alive=keep_alive, options=options_given))
        except LabInputError as exc:
            if scenario_names:  # asked for by name: the user must hear that it cannot be run so
                raise
            err.print(f"[yellow]skipped:[/] {escape(str(exc))}", highlight=False)
    scenarios = changed
    if not scenarios:
        raise LabInputError("no scenario can run with these settings")
    stop = StopRule(min_trials=trials or min_trials, max_trials=trials or max(max_trials, min_trials),
                    target_precision=precision, max_seconds=max_cell_seconds)
    fixed = frozenset(s.label for s in scenarios if _counts_given(files, s.name, params))
    options = RunOptions(warmup=warmup, stop=stop, fresh_process=fresh_process, placement=placement,
                         trial_budget_s=trial_seconds or None, fixed_counts=fixed, trial_timeout_s=trial_timeout,
                         retries=retries, interleave=interleave, time_budget_s=time_budget or None, forks=forks,
                         jit_warm_s=JIT_WARM_S)
    profile = _network_profile(net_name, scenarios)
    config = {"drivers": [d.id for d in chosen], "scenarios": [s.label for s in scenarios],
              "params": {s.label: s.params for s in scenarios},
              "client": {s.label: s.client.model_dump() for s in scenarios}, "warmup": warmup, "fresh_process": fresh_process,
              "stop": vars(stop), "net": {"profile": profile.name, "asked": net_name}, "lab_version": _lab_version(),
              "placement": Placement.of(placement).name, "trial_seconds": trial_seconds or None,
              "retries": retries, "interleave": interleave, "time_budget_s": time_budget or None, "forks": forks,
              "runtimes": list(runtime_specs)}
    _take_lab_lock(no_wait)
    store = Store(paths.results_db())
    run_id = store.start_run(machine.describe(), config)
    err.print(f"run {run_id}: {len(chosen)} driver(s) × {len(scenarios)} scenario(s) on network '{profile.name}', "
              f"results in {store.path}", highlight=False)

    def after_cell(_result) -> None:  # noqa: ANN001
        if json_path:
            exporters.write(store, run_id, "json", json_path)

    def open_network(cpu):  # noqa: ANN001, ANN202
        server = open_server_side(profile, cpu)
        if hasattr(server, "describe"):
            net = {**server.describe(), "asked": net_name}
            store.update_config(run_id, net=net)
            err.print(f"network '{profile.name}' ({net['summary']}): measured RTT {net['measured_rtt_ms']:.2f} ms"
                      + "".join(f"; {n}" for n in net["notes"]), highlight=False)
        return server

    status = "failed"
    try:
        with stop_on_sigterm(), ProgressEvents(len(chosen) * len(scenarios), err, len(chosen)) as events:
            run_matrix(store, run_id, chosen, scenarios, options, events, after_cell, open_network)
        status = "complete"
    except KeyboardInterrupt:
        status = "interrupted"
        err.print("[yellow]interrupted: everything measured so far is kept[/]")
    finally:
        store.finish_run(run_id, status)
        _diagnose(store, run_id)
        if json_path:
            exporters.write(store, run_id, "json", json_path)
    _print_run(store, run_id, fmt)
    if status == "interrupted":
        raise SystemExit(130)
    _exit_if_cells_failed(store, [run_id])


def _on_runtimes(chosen: list, specs: tuple[str, ...]) -> list:
    """The drivers on the runtime lines asked for, each line's build made first (with progress)."""
    if not specs:
        return chosen
    variants = manifest.on_runtimes(chosen, runtimes.parse(list(specs)))
    for d in variants:
        if d.variant is not None and not builder.is_built(d):
            err.print(f"building {d.id} (on {d.variant.kind} {d.variant.version}) …", highlight=False)
            ok, what = builder.build(d)
            err.print(f"[{'green' if ok else 'red'}]{d.id}[/]: {escape(what)}", highlight=False)
    return variants


def _counts_given(files: list, name: str, params: tuple[str, ...]) -> bool:
    """True when -p set a parameter that decides how often a request of scenario `name` repeats."""
    f = next((f for f in files if f.name == name), None)
    if f is None:
        return False
    repeats = " ".join(str(r.get("repeat", "")) for r in f.raw.get("requests", []) if isinstance(r, dict))
    given = scenario.parse_overrides(list(params))
    keys = {*given.get(None, {}), *given.get(name, {})}
    return any("{" + key + "}" in repeats or "{" + key + ":" in repeats for key in keys)


def _network_profile(name: str, scenarios: list) -> "netprofile.Profile":  # noqa: F821
    """The asked profile, or loopback (with what that cannot do, per scenario) when the network lab
    cannot run here."""
    from clientlab.netlab import hosts
    from clientlab.netlab import profile as netprofile

    asked = netprofile.get(name)
    reason = hosts.why_unavailable() if asked.namespaces else None
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


def _diagnose(store: Store, run_id: int) -> None:
    from clientlab.diagnose import diagnose_run

    for cell_id, findings in diagnose_run(store.cells(run_id)).items():
        store.set_findings(cell_id, [f.to_dict() for f in findings])


def _network_line(net: dict | str | None) -> str:
    """'wan-50ms (100 Mbit/s, 50 ms RTT; measured RTT 51.5 ms)' from a run's stored network."""
    if not isinstance(net, dict):
        return net or "loopback"
    details = [d for d in (net.get("summary"), net.get("measured_rtt_ms") is not None
                           and f"measured RTT {net['measured_rtt_ms']:.3g} ms") if d]
    return f"{net.get('profile', '?')}" + (f" ({'; '.join(details)})" if details else "")


def _print_run(store: Store, run_id: int, fmt: str = "auto") -> None:
    """The run as a table (wide terminals), one line per cell (narrow ones, pipes), or JSON."""
    if fmt == "json":
        click.echo(exporters.export(store, run_id, "json"), nl=False)
        return
    run = store.run(run_id)
    m = run["machine"]
    config = run["config"]
    placement = f", placement {config['placement']}" if config.get("placement") else ""
    if config.get("interleave") == "run":
        placement += ", trials interleaved over the run"
    elif config.get("interleave") == "scenario":
        placement += ", trials interleaved by scenario"
    if (config.get("forks") or 1) > 1:
        placement += f", each cell's trials over {config['forks']} processes"
    title = (f"run {run_id} ({run['status']}) — {m.get('cpu_model')}, {m.get('cores')} cores, "
             f"kernel {m.get('kernel')}, network {_network_line(config.get('net'))}{placement}")
    cells = store.cells(run_id)
    if not cells:
        out.print(f"{title}: no cells measured")
        return
    if fmt == "auto":
        fmt = "table" if out.is_terminal and out.width >= width_needed(cells) else "long"
    if fmt == "table":
        out.print(results_table(cells, title))
    else:
        out.print(title, highlight=False, soft_wrap=True)
        for line in long_lines(cells):
            out.print(line, highlight=False, soft_wrap=True)
        out.print(Text(CAPTION, style="dim"), soft_wrap=True)
    if (line := said_once_line(cells)) is not None:
        out.print(Text(line, style="magenta"), soft_wrap=True)
    print_findings(out, cells)
    print_what_ran(out, cells)


@main.command("show")
@click.argument("run_ref", default="last", metavar="RUN")
@click.option("--cell", "cells", multiple=True, metavar="DRIVER:SCENARIO",
              help="Also show every trial of this cell and what the server saw (repeatable; * matches all).")
@click.option("--format", "fmt", type=click.Choice(["auto", "table", "long", "json"]), default="auto", show_default=True,
              help="table (drivers × scenarios), long (one line per cell), json; auto: the table when it fits.")
def show_cmd(run_ref: str, cells: tuple[str, ...], fmt: str) -> None:
    """Show a stored run's table (RUN: a run id or 'last')."""
    from fnmatch import fnmatch

    from clientlab.output.detail import trials_table

    store = Store(paths.results_db())
    run_id = store.resolve(run_ref)
    _print_run(store, run_id, fmt)
    for pattern in cells:
        driver, _, name = pattern.partition(":")
        matched = [c for c in store.cells(run_id) if fnmatch(c["driver"], driver) and fnmatch(c["scenario"], name or "*")]
        if not matched:
            raise LabInputError(f"no cell matches '{pattern}' in run {run_id}")
        for cell in matched:
            out.print(trials_table(cell, store.trials(cell["id"])))


@main.command("diagnose")
@click.argument("run_ref", default="last", metavar="RUN")
def diagnose_cmd(run_ref: str) -> None:
    """Run the diagnosis rules again on a stored run (RUN: a run id or 'last') and show the findings."""
    store = Store(paths.results_db())
    run_id = store.resolve(run_ref)
    _diagnose(store, run_id)
    print_findings(out, store.cells(run_id))


@main.command("experiment", epilog=EXIT_CODES)
@click.argument("names", nargs=-1, metavar="NAME... | all")
@click.option("--quick", is_flag=True, help="The quick form: fewer sizes and repeats, one trial per cell (minutes).")
@click.option("--list", "list_only", is_flag=True, help="List the experiments and what they run.")
@click.option("--trials", type=click.IntRange(1), help="Exactly this many timed trials per cell.")
@click.option("--findings", "findings_path", type=click.Path(dir_okay=False, path_type=Path),
              default=paths.ROOT / "docs" / "findings.md", show_default=True,
              help="Write each experiment's section of the findings document here.")
@click.option("--placement", type=click.Choice(PLACEMENTS), default=DEFAULT_PLACEMENT, show_default=True,
              help="Where driver and server run, as for `clientlab run`.")
@click.option("--retries", default=3, show_default=True, type=click.IntRange(0),
              help="Run a disturbed trial again, at most this many times per cell (as for `clientlab run`).")
@click.option("--interleave", type=click.Choice(INTERLEAVES), default=None,
              help="Which cells take turns trial by trial: the drivers of one workload (workloads one after "
                   "another), or every cell on a network (so that a claim comparing two parts is not a "
                   "comparison of two minutes of the host).  [default: the experiment's own `interleave`, "
                   f"else {DEFAULT_INTERLEAVE}]")
@click.option("--time-budget", type=click.FloatRange(0), metavar="SECONDS",
              help="Each experiment's time: once it is spent, cells stop at their minimum of trials, disturbed "
                   "trials are kept (flagged) and no trial waits for a slow phase of the host; each network and "
                   "workload gets a share of the time left by its cells. 0: no limit.  [default: the "
                   "experiment's own `time_budget` (`quick_time_budget` with --quick), listed by --list]")
@driver_path_option
@scenario_path_option
@no_wait_option
def experiment_cmd(names: tuple[str, ...], quick: bool, list_only: bool, trials: int | None,
                   findings_path: Path, placement: str, retries: int, interleave: str | None,
                   time_budget: float | None,
                   driver_paths: tuple[Path, ...], scenario_paths: tuple[Path, ...], no_wait: bool) -> None:
    """Run seed experiments (experiments/*.toml) and judge each article's claims with the numbers.

    Each experiment runs its parts (drivers × scenarios × settings, on the part's network) into
    one stored run, then writes its section of the findings document: the article's claims, the
    lab's numbers, and a verdict. `clientlab experiment all` runs every one. One measuring run per
    machine: it waits for another one (or exits 75 with --no-wait)."""
    from clientlab.experiment import findings, spec
    from clientlab.experiment.execute import count_cells, run_experiment

    _use_scenario_paths(scenario_paths)
    if list_only or not names:
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
        if not names:
            err.print("run one with: clientlab experiment NAME [--quick], or all", highlight=False)
        return
    chosen = spec.get(list(names))
    extra = [d for d in _drivers(driver_paths) if driver_paths]
    if quick:
        stop, warmup = StopRule(min_trials=trials or 1, max_trials=trials or 1), 0
    else:
        stop, warmup = StopRule(min_trials=trials or 3, max_trials=trials or 10, max_seconds=30), 1
    options = RunOptions(warmup=warmup, stop=stop, placement=placement, retries=retries, time_budget_s=time_budget)
    _take_lab_lock(no_wait)
    store = Store(paths.results_db())
    run_ids = []
    for e in chosen:
        total = count_cells(e, quick)
        budget = time_budget if time_budget is not None else e.budget_for(quick)
        err.print(f"experiment {e.name} ({'quick' if quick else 'full'}): {total} cells, "
                  f"time budget {_budget(budget or None)}", highlight=False)
        try:
            with stop_on_sigterm(), ProgressEvents(total, err) as events:
                own = dataclasses.replace(options, interleave=interleave or e.interleave or DEFAULT_INTERLEAVE)
                result = run_experiment(store, e, quick, own, events, extra,
                                        on_note=lambda note: err.print(note, highlight=False))
        except KeyboardInterrupt:
            err.print("[yellow]interrupted: everything measured so far is kept[/]")
            run_id = store.runs(limit=1)[0]["id"]
            _diagnose(store, run_id)
            findings.update(findings_path, e.name, findings.section(e, store, run_id))
            raise SystemExit(130)
        _diagnose(store, result.run_id)
        findings.update(findings_path, e.name, findings.section(e, store, result.run_id))
        _print_verdicts(e, store, result.run_id)
        err.print(f"run {result.run_id}: findings written to {findings_path}", highlight=False)
        run_ids.append(result.run_id)
    _exit_if_cells_failed(store, run_ids)


def _budget(seconds: float | None) -> str:
    return "none" if seconds is None else f"{seconds / 60:g} min" if seconds % 60 == 0 else f"{seconds:g} s"


def _minutes(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 60:.3g}"


@main.command("findings")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              default=paths.ROOT / "docs" / "findings.md", show_default=True)
@click.option("--quick-ok", is_flag=True, help="Also use quick-form runs when no full run exists.")
def findings_cmd(output: Path, quick_ok: bool) -> None:
    """Write the findings document again from the newest stored run of each experiment."""
    from clientlab.experiment import findings, spec

    store = Store(paths.results_db())
    runs = findings.latest_runs(store, quick_ok)
    for name, e in spec.discover().items():
        if name in runs:
            findings.update(output, name, findings.section(e, store, runs[name]))
            err.print(f"{name}: run {runs[name]}", highlight=False)
        else:
            err.print(f"[yellow]{name}: no finished run (clientlab experiment {name})[/]", highlight=False)


def _print_verdicts(e, store: Store, run_id: int) -> None:  # noqa: ANN001
    from clientlab.experiment.verdict import judge_run

    table = Table(title=f"{e.name}: the article's claims (run {run_id})")
    for column in ("the article says", "the lab measured", "verdict"):
        table.add_column(column, overflow="fold")
    for v in judge_run(e, store.cells(run_id)):
        table.add_row(v.claim.says, "\n".join(v.evidence), v.outcome)
    out.print(table)


@main.group("net")
def net_group() -> None:
    """The network lab: profiles, a check of the links they give, clean-up."""


@net_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="As JSON.")
def net_list_cmd(as_json: bool) -> None:
    """The network profiles (networks/*.toml)."""
    from clientlab.netlab import hosts
    from clientlab.netlab import profile as netprofile

    profiles, broken = netprofile.scan()
    for problem in broken.values():
        err.print(f"[red]invalid network profile:[/] {escape(problem)}", highlight=False)
    if as_json:
        out.print_json(data=[p.model_dump() for p in profiles.values()])
        return
    table = Table(title="network profiles")
    for column in ("name", "link", "description"):
        table.add_column(column, overflow="fold")
    for p in profiles.values():
        table.add_row(escape(p.name), escape(p.summary()), escape(p.description))
    out.print(table)
    reason = hosts.why_unavailable()
    if reason:
        err.print(f"[yellow]only loopback can run here: {reason}[/]", highlight=False)


@net_group.command("check")
@click.argument("profile_name", metavar="PROFILE")
@click.option("--size", default="100MB", show_default=True, help="Bytes moved each way for the rate figures.")
def net_check_cmd(profile_name: str, size: str) -> None:
    """Put a profile's network up, measure RTT and throughput each way from the client's
    namespace, and take it down again."""
    from clientlab.netlab import probe
    from clientlab.netlab import profile as netprofile
    from clientlab.netlab.lab import NetLab
    from clientlab.units import parse_size

    profile = netprofile.get(profile_name)
    if not profile.namespaces:
        raise LabInputError("loopback has no link to check: name a network lab profile")
    nbytes = parse_size(size)
    with stop_on_sigterm(), NetLab(profile, check_rtt=False) as lab:
        host, port = lab.endpoint.host, lab.endpoint.http_port
        down = probe.measure("download", host, port, nbytes)
        up = probe.measure("upload", host, port, nbytes)
        figures = {**lab.describe(), "download_mbit": round(down, 1), "upload_mbit": round(up, 1),
                   "dns_queries": lab.dns.counters()["queries"]}
    out.print_json(data=figures)


@net_group.command("clean")
def net_clean_cmd() -> None:
    """Remove what a killed run left behind (namespaces, links, processes inside). A network lab
    that a live run holds is not touched: this says which run."""
    from clientlab.netlab import hosts
    from clientlab.runlock import LabBusy

    try:
        claim = hosts.claim(wait=False)
    except LabBusy as exc:
        err.print(f"[red]busy:[/] {escape(str(exc))}; nothing removed", highlight=False)
        raise SystemExit(EXIT_BUSY) from None
    try:
        removed = hosts.remove_all()
    finally:
        claim.release()
    err.print(f"removed: {', '.join(removed)}" if removed else "nothing to remove", highlight=False)


@main.command("runs")
@click.option("--limit", default=20, show_default=True)
def runs_cmd(limit: int) -> None:
    """List stored runs."""
    store = Store(paths.results_db())
    table = Table(title=f"runs in {store.path}")
    for column in ("id", "status", "started", "drivers", "scenarios"):
        table.add_column(column)
    import datetime as dt
    for run in store.runs(limit):
        started = dt.datetime.fromtimestamp(run["started_at"]).strftime("%Y-%m-%d %H:%M")
        table.add_row(str(run["id"]), run["status"], started, ", ".join(run["config"].get("drivers", [])),
                      ", ".join(run["config"].get("scenarios", [])))
    out.print(table)


@main.command("export")
@click.argument("run_ref", default="last", metavar="RUN")
@click.option("--format", "fmt", type=click.Choice(sorted(exporters.EXPORTERS)), default="json", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="File to write (default: stdout).")
def export_cmd(run_ref: str, fmt: str, output: Path | None) -> None:
    """Export a stored run (RUN: a run id or 'last') as JSON or CSV."""
    store = Store(paths.results_db())
    run_id = store.resolve(run_ref)
    if output:
        exporters.write(store, run_id, fmt, output)
    else:
        click.echo(exporters.export(store, run_id, fmt), nl=False)


@main.command("crosscheck")
@driver_path_option
@click.option("-d", "--drivers", "driver_names", multiple=True,
              help="Drivers to check (comma-separated). Default: every installed default driver.")
@click.option("-s", "--scenarios", "scenario_names", multiple=True,
              help="Static scenarios (default: get-small, get-json-335k, download-memory, download-file).")
@click.option("-p", "--param", "params", multiple=True, metavar="[SCENARIO.]NAME=VALUE",
              help="Override a scenario parameter, e.g. -p count=500.")
@click.option("--trials", type=click.IntRange(1), help="Exactly this many timed trials per cell.")
@click.option("--placement", type=click.Choice(PLACEMENTS), default=DEFAULT_PLACEMENT, show_default=True)
@click.option("--retries", default=3, show_default=True, type=click.IntRange(0),
              help="Run a disturbed trial again, at most this many times per cell.")
@click.option("--bare", is_flag=True,
              help="Instead of nginx, check the lab against the same client in a plain loop: each cell's "
                   "timed trials beside the driver's calibration loop (default scenarios: "
                   "get-small, get-json-335k).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path),
              help="With --bare: also write every pair of lab trial and plain-loop round here.")
def crosscheck_cmd(driver_paths, driver_names, scenario_names, params, trials, placement, retries, bare,  # noqa: ANN001
                   json_path) -> None:
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

    Exit code 0 when every ratio agrees, 1 when one does not."""
    from clientlab import calibrate, crosscheck

    chosen = manifest.select(_drivers(driver_paths), _split(driver_names))
    missing = [f"{d.id} ({d.missing()})" for d in chosen if d.missing() is not None]
    if missing and driver_names:  # named ones must be there; of the defaults, the installed ones run
        raise LabInputError(f"not installed: {'; '.join(missing)}")
    drivers = [d for d in chosen if d.missing() is None]
    _take_lab_lock(False)
    if not drivers:
        raise LabInputError("no installed driver to check (see: clientlab drivers)")
    files, _ = scenario.discover()
    names = _split(scenario_names) or list(calibrate.SCENARIOS if bare else crosscheck.STATIC_SCENARIOS)
    scenarios = scenario.select(files, names, scenario.parse_overrides(list(params)))
    stop = StopRule(min_trials=trials or 3, max_trials=trials or 10)
    options = RunOptions(warmup=1, stop=stop, placement=placement, retries=retries)
    store = Store(paths.results_db())
    if bare:
        # the cells as `clientlab run` measures them (its trial budget, its interleaving, its
        # processes and JIT warm-up), with no time budget: the figures calibrated are the run's
        fixed = frozenset(s.label for s in scenarios if _counts_given(files, s.name, params))
        options = dataclasses.replace(options, trial_budget_s=DEFAULT_TRIAL_S, fixed_counts=fixed,
                                      interleave=DEFAULT_INTERLEAVE, forks=DEFAULT_FORKS, jit_warm_s=JIT_WARM_S)
        _calibrate(store, drivers, scenarios, options, json_path)
        return
    cells = len(drivers) * len(scenarios) * 2
    with stop_on_sigterm(), ProgressEvents(cells, err, len(drivers)) as events:
        run_id, rows, patterns = crosscheck.run(store, drivers, scenarios, options, events)
    table = Table(title=f"crosscheck (run {run_id}): each driver's throughput / the fastest's, per server")
    for column in ("scenario", "driver", "bench server", "nginx", "bench ÷ nginx", "ratio (bench)", "ratio (nginx)",
                   "differ"):
        table.add_column(column, overflow="fold")
    for r in rows:
        rate = lambda v: f"{v:,.0f} {r.unit}" if v else "—"  # noqa: E731
        verdict = ("—" if r.agrees is None else
                   f"[green]{r.agreement:.1%}[/]" if r.agrees else f"[bold red]{r.agreement:.1%}[/]")
        table.add_row(r.scenario, r.driver, rate(r.bench), rate(r.nginx),
                      f"{r.bench_over_nginx:.2f}" if r.bench_over_nginx else "—",
                      f"{r.bench_ratio:.2f}" if r.bench_ratio else (r.reason or "—"),
                      f"{r.nginx_ratio:.2f}" if r.nginx_ratio else "—", verdict)
    out.print(table)
    out.print("how each server wrote an answer (its send calls under strace, one keep-alive connection):",
              highlight=False)
    for w in patterns:
        seen = w.problem or "; ".join(f"{'bench server' if server == 'bench' else server} {p.describe()}"
                                      for server, p in w.patterns.items())
        out.print(f"  {w.scenario} ({w.path}): {seen}", highlight=False)
    judged = [r for r in rows if r.agrees is not None]
    failing = [r for r in judged if not r.agrees]
    out.print(f"{len(judged) - len(failing)} of {len(judged)} ratios agree within {crosscheck.AGREEMENT:.0%}"
              + (f"; not: {', '.join(f'{r.driver} × {r.scenario}' for r in failing)}" if failing else ""),
              highlight=False)
    slower = [r for r in rows if r.bench_over_nginx is not None and r.bench_over_nginx < 1 - crosscheck.SLOWER]
    compared = [r for r in rows if r.bench_over_nginx is not None]
    out.print(f"the bench server gave {len(compared) - len(slower)} of {len(compared)} drivers at least nginx's rate "
              f"(within {crosscheck.SLOWER:.0%})"
              + (f"; slower for: {', '.join(f'{r.driver} × {r.scenario}' for r in slower)}" if slower else
                 ": where ratios disagree, nginx held the faster drivers back"
                 if failing else ""), highlight=False)
    if failing:
        raise SystemExit(1)


def _calibrate(store: Store, drivers: list, scenarios: list, options: RunOptions, json_path: Path | None) -> None:
    """crosscheck --bare: the cells beside their calibration loops, a table, exit 1 past the target."""
    from clientlab import calibrate
    from clientlab.output.calibration import calibration_table

    with stop_on_sigterm(), ProgressEvents(len(drivers) * len(scenarios), err, len(drivers)) as events:
        run_id, cells = calibrate.run(store, drivers, scenarios, options, events)
    table, notes = calibration_table(cells, f"crosscheck --bare, run {run_id}, placement {options.placement}: "
                                            "the lab beside the same client in a plain loop")
    out.print(table)
    for note in notes:
        out.print(note)
    if json_path:
        json_path.write_text(json.dumps([c.to_dict() for c in cells], indent=1))
    judged = [c for c in cells if c.within_target is not None]
    missed = [c for c in judged if not c.within_target]
    out.print(f"{len(judged) - len(missed)} of {len(judged)} cells within {calibrate.TARGET:.0%} of the plain loop"
              + (f"; not: {', '.join(f'{c.driver} × {c.scenario}' for c in missed)}" if missed else ""),
              highlight=False)
    if missed:
        raise SystemExit(1)


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
    from clientlab import selfbench

    drivers = manifest.select(_drivers(driver_paths), _split(driver_names))
    _take_lab_lock(False)
    selfbench.run(drivers, seconds, out, err, json_path)


def entry() -> None:
    try:
        main(standalone_mode=False)
    except click.exceptions.Abort:
        err.print("aborted")
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except LabInputError as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}", highlight=False)
        sys.exit(EXIT_USAGE)
    except LabError as exc:
        err.print(f"[red]lab error:[/] {escape(str(exc))}", highlight=False)
        sys.exit(EXIT_LAB)


@main.command("report")
@click.argument("run_ref", default="last", metavar="RUN")
@click.option("--html", "html_path", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The report: one self-contained HTML file (charts included), readable offline.")
@click.option("--plots", "plots_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Also write every chart of the report as a PNG into this folder (drawn by headless Chromium).")
def report_cmd(run_ref: str, html_path: Path, plots_dir: Path | None) -> None:
    """An HTML report of a stored run (RUN: a run id or 'last'): the table, charts, sweeps, findings,
    machine, network and client versions."""
    from clientlab import report

    store = Store(paths.results_db())
    run_id = store.resolve(run_ref)
    charts = report.write_html(store, run_id, html_path)
    err.print(f"run {run_id}: {html_path} ({charts} chart(s))", highlight=False)
    if plots_dir:
        from clientlab.report.plots import write_pngs

        written = write_pngs(html_path, plots_dir)
        err.print(f"{len(written)} PNG(s) in {plots_dir}", highlight=False)


@main.command("spread")
@click.argument("run_refs", nargs=-1, required=True, metavar="RUN...")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write every cell's medians and spreads as JSON here.")
def spread_cmd(run_refs: tuple[str, ...], json_path: Path | None) -> None:
    """How repeatable are the figures? The same cells over several runs (ids, 'last', or ranges
    such as 184-188): per cell, max/min of the runs' medians and of its ratio to the scenario's
    fastest driver; how many cells stayed within 5 % and 10 %, per driver; each run's wall time
    and disturbed trials. Run the same command a few times back to back, then this."""
    from clientlab import spread

    store = Store(paths.results_db())
    s = spread.spread(store, spread.run_ids(store, run_refs))
    out.print(spread.table(s))
    for line in spread.summary_lines(s):
        out.print(line, highlight=False)
    if json_path:
        json_path.write_text(json.dumps(s.to_dict(), indent=2) + "\n")


@main.command("compare")
@click.argument("run_a", metavar="RUN_A")
@click.argument("run_b", metavar="RUN_B")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the comparison as JSON here.")
def compare_cmd(run_a: str, run_b: str, json_path: Path | None) -> None:
    """Is run B faster or slower than run A, beyond the noise? Every cell in both runs: throughput
    ratio B/A with a Mann–Whitney U test on the timed trials, CPU and peak RSS ratios."""
    from clientlab import compare

    store = Store(paths.results_db())
    a, b = store.resolve(run_a), store.resolve(run_b)
    rows = compare.compare_runs(store, a, b)
    if not rows:
        raise LabInputError(f"runs {a} and {b} have no cell in common (same driver and scenario)")
    out.print(compare.table(a, b, rows))
    if json_path:
        json_path.write_text(json.dumps(compare.document(a, b, rows), indent=2) + "\n")
