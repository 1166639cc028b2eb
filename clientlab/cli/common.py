"""What every clientlab command shares: the consoles, the defaults, common options, the lab lock,
exit codes, the `main` group and the entry point, and the printing of a stored run."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Mapping
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from clientlab import export as exporters
from clientlab import scenario
from clientlab.drivers import manifest
from clientlab.errors import LabError, LabInputError
from clientlab.output.cellfigures import allocator_modes_line, said_once_line
from clientlab.output.diagnosis import print_findings
from clientlab.output.long import long_lines, summary_lines
from clientlab.output.markdown import markdown_text
from clientlab.output.runstatus import status_words, times_line
from clientlab.output.table import CAPTION, results_table
from clientlab.output.whatran import print_what_ran
from clientlab.wrap import print_wrapped
from clientlab.record import Cell, RunConfig
from clientlab.runner.options import RunOptions
from clientlab.store import Store

# a pipe has no width: rich would lay tables out in 80 columns and cut theirs to a letter or two
PIPE_WIDTH = 240
out = Console(width=None if sys.stdout.isatty() or os.environ.get("COLUMNS") else PIPE_WIDTH)
err = Console(stderr=True, soft_wrap=True)  # messages stay one line each in logs and pipes

MEASURING = RunOptions.measuring()  # the measurement policy, whose values the options show as defaults

runtimes_option = click.option(
    "--runtimes", "runtime_specs", multiple=True, metavar="KIND=LINE[,LINE…]",
    help="Run each chosen driver of this runtime on these lines, each its own cell (node-fetch@node22), "
         "e.g. --runtimes node=20,22,24,26 --runtimes go=1.24,1.26 --runtimes python=3.12, or Node, Bun and "
         "Deno at once for the drivers also on Bun and Deno: --runtimes js=node24,bun,deno; the lines "
         "pinned in setup/runtimes.toml. A line's build is made on first use.")

driver_path_option = click.option(
    "--driver-path", "driver_paths", multiple=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Also load drivers from this folder (a driver folder, or a folder of them). Repeatable.",
)


def load_drivers(driver_paths: tuple[Path, ...]) -> list[manifest.Driver]:
    drivers, problems = manifest.discover(list(driver_paths))
    for problem in problems:
        err.print(f"[yellow]warning:[/] {escape(problem)}", highlight=False)
    return drivers


def split_names(values: tuple[str, ...]) -> list[str] | None:
    names = [n.strip() for v in values for n in v.split(",") if n.strip()]
    return names or None


HTTP_VERSIONS = ("1.1", "2", "h2c", "3")


def known_http_versions(_ctx: click.Context, _param: click.Parameter, given: tuple[str, ...]) -> tuple[str, ...]:
    """--http's versions (comma-separated or repeated) in the order given, each once, every one a
    version the lab knows."""
    versions = tuple(dict.fromkeys(split_names(given) or []))
    if unknown := [v for v in versions if v not in HTTP_VERSIONS]:
        raise click.BadParameter(f"{', '.join(map(repr, unknown))}: the versions are {', '.join(HTTP_VERSIONS)}")
    return versions


# -- input and machine guards: user scenario folders, the run lock, exit codes

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


STORE_KEY = "clientlab.store"


def _remember_store(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value:
        ctx.meta[STORE_KEY] = value


# kept in the context, not passed as an argument: `chosen_store()` opens it wherever a command needs it
store_option = click.option(
    "--store", metavar="URL", expose_value=False, callback=_remember_store,
    help="The results store: postgresql://user[:password]@host[:port]/db (a team store), sqlite:///file or "
         "a file path. Default: $CLIENTLAB_STORE, else the lab's own SQLite file.")


def chosen_store_url() -> str | None:
    """--store of this command, if given."""
    context = click.get_current_context(silent=True)
    return context.meta.get(STORE_KEY) if context else None


def chosen_store() -> Store:
    """The store of this command: --store, else $CLIENTLAB_STORE, else the lab's SQLite file."""
    from clientlab.store import open_store

    return open_store(chosen_store_url())


def use_scenario_paths(scenario_paths: tuple[Path, ...]) -> None:
    scenario.use_paths(scenario_paths)


def take_lab_lock(no_wait: bool) -> None:
    """One measuring run per machine: wait for the lab (saying who holds it), or exit 75 with
    --no-wait. Held until the command ends."""
    from clientlab.measuring.runlock import LabBusy, RunLock

    lock = RunLock()
    try:
        lock.acquire(wait=not no_wait, on_wait=lambda message: print_wrapped(err, message))
    except LabBusy as exc:
        print_wrapped(err, f"busy: {exc}")
        raise SystemExit(EXIT_BUSY) from None
    click.get_current_context().call_on_close(lock.release)


def exit_if_cells_failed(store: Store, run_ids: list[int]) -> None:
    """Exit 1 when a cell of these runs failed, naming them (unsupported and not installed are fine)."""
    failed = [c for run_id in run_ids for c in store.cell_records(run_id) if c.status == "failed"]
    if not failed:
        return
    err.print(f"[red]{len(failed)} cell(s) failed:[/]", highlight=False)
    for c in failed:
        reason = c.reason.splitlines()[0][:200] if c.reason else "no reason given"
        err.print(escape(f"  {c.driver} × {c.scenario}: {reason}"), highlight=False)
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
      clientlab run                     the default drivers (one per language) on the
                                        default scenarios (--drivers all: every one)
      clientlab run -d python-requests -s get-small -p count=500
      clientlab show last               the table of the last run again
    """



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


def diagnose_and_store(store: Store, run_id: int) -> None:
    """The diagnosis's findings of every measured cell, kept with its figures: the rules on what
    the server saw, and the CPU gaps to the fastest client of each language (clientlab/profile)."""
    from clientlab.analysis.diagnose import diagnose_run
    from clientlab.profile.causes import cpu_findings

    cells = store.cells(run_id)
    found = {cell_id: [f.to_json() for f in findings]
             for cell_id, findings in diagnose_run([Cell.from_json(c) for c in cells]).items()}
    for cell_id, findings in cpu_findings(store, cells).items():
        found.setdefault(cell_id, []).extend(findings)
    for cell_id, findings in found.items():
        store.set_findings(cell_id, findings)


def network_line(net: Mapping | str | None) -> str:
    """'wan-50ms (100 Mbit/s, 50 ms RTT; measured RTT 51.5 ms)' from a run's stored network."""
    if not isinstance(net, Mapping):
        return net or "loopback"
    if net.get("profiles"):  # an experiment's parts on several networks, each cell on its own
        return ", ".join(net["profiles"])
    details = [d for d in (net.get("summary"), net.get("measured_rtt_ms") is not None
                           and f"measured RTT {net['measured_rtt_ms']:.3g} ms") if d]
    return f"{net.get('profile', '?')}" + (f" ({'; '.join(details)})" if details else "")


def print_run(store: Store, run_id: int, fmt: str = "auto") -> None:
    """The run per scenario, fastest first (the long form: two lines a cell at 80 columns, one on
    wider terminals and pipes), or the drivers × scenarios table, markdown or JSON when asked."""
    if fmt == "json":
        click.echo(exporters.export(store, run_id, "json"), nl=False)
        return
    run = store.run(run_id)
    m = run["machine"]
    config = RunConfig.from_json(run["config"])
    placement = f", placement {config.placement}" if config.placement else ""
    if config.interleave == "run":
        placement += ", trials interleaved over the run"
    elif config.interleave == "scenario":
        placement += ", trials interleaved by scenario"
    if (config.forks or 1) > 1:
        placement += f", each cell's trials over {config.forks} processes"
    title = (f"run {run_id} ({status_words(run, socket.gethostname())}) — {m.get('cpu_model')}, {m.get('cores')} cores, "
             f"kernel {m.get('kernel')}, network {network_line(config.net)}{placement}")
    cells = store.cell_records(run_id)
    if not cells:
        out.print(f"{title}: no cells measured")
        return
    if config.kind == "behave":  # a behaviour matrix: outcomes, not figures (docs/behaviour.md)
        from clientlab.output.behave import stored_matrix, stored_matrix_lines
        from clientlab.output.behavefindings import findings_lines

        print_wrapped(out, title, rest="  ")
        print_wrapped(out, times_line(run), rest="  ")
        click.echo("\n".join(stored_matrix_lines(cells, run_id, findings_lines(*stored_matrix(cells)))))
        return
    if fmt == "auto":  # ranked per scenario whatever the width: the form the README teaches to read
        fmt = "long"
    if fmt == "markdown":
        click.echo(markdown_text(cells, title), nl=False)
        return
    if fmt == "table":
        out.print(results_table(cells, title))
    else:
        print_wrapped(out, title, rest="  ")
        for line in long_lines(cells, out.width):
            out.print(line, highlight=False, soft_wrap=True)
        print_wrapped(out, CAPTION, rest="", style="dim")
    if (line := said_once_line(cells)) is not None:
        print_wrapped(out, line, rest="", style="magenta")
    if (line := allocator_modes_line(cells)) is not None:
        print_wrapped(out, line, rest="", style="dim")
    print_findings(out, cells)
    print_what_ran(out, cells)
    for line in summary_lines(cells, out.width):
        out.print(line, highlight=False, soft_wrap=True)

def counts_given(files: list, name: str, params: tuple[str, ...]) -> bool:
    """True when -p set a parameter that decides how often a request of scenario `name` repeats."""
    f = next((f for f in files if f.name == name), None)
    if f is None:
        return False
    repeats = " ".join(str(r.get("repeat", "")) for r in f.raw.get("requests", []) if isinstance(r, dict))
    given = scenario.parse_overrides(list(params))
    keys = {*given.get(None, {}), *given.get(name, {})}
    return any("{" + key + "}" in repeats or "{" + key + ":" in repeats for key in keys)
