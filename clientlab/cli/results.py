"""Reading stored runs: show, diagnose, runs, export, report, spread, compare."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from clientlab import export as exporters
from clientlab import paths
from clientlab.cli.common import (
    chosen_store,
    diagnose_and_store,
    err,
    main,
    out,
    print_run,
    store_option,
)
from clientlab.errors import LabInputError
from clientlab.output.diagnosis import print_findings
from clientlab.record import RunConfig


@main.command("show")
@click.argument("run_ref", default="last", metavar="RUN")
@click.option("--cell", "cells", multiple=True, metavar="DRIVER:SCENARIO",
              help="Also show every trial of this cell and what the server saw (repeatable; * matches all).")
@click.option("--format", "fmt", type=click.Choice(["auto", "table", "long", "markdown", "json"]), default="auto", show_default=True,
              help="long (per scenario, fastest first; a cell in one or two lines), table (drivers × "
                   "scenarios), markdown, json; auto: long.")
@click.option("--profile", "profiles", is_flag=True,
              help="The CPU profile of each --cell (every profiled cell without --cell): layers and top paths, as text.")
@store_option
def show_cmd(run_ref: str, cells: tuple[str, ...], fmt: str, profiles: bool = False) -> None:
    """Show a stored run, per scenario, fastest first (RUN: a run id or 'last')."""
    from fnmatch import fnmatch

    from clientlab.output.detail import trials_table

    store = chosen_store()
    run_id = store.resolve(run_ref)
    if profiles:
        from clientlab.profile.text import render

        every = store.cells(run_id)
        chosen = [c for p in cells or ("*:*",) for c in every
                  if fnmatch(c["driver"], p.partition(":")[0]) and fnmatch(c["scenario"], p.partition(":")[2] or "*")]
        chosen = [c for c in chosen if cells or (c.get("figures") or {}).get("layers")]
        if not chosen:
            raise LabInputError(f"no {'cell matches ' + ', '.join(cells) if cells else 'profiled cell'} in run {run_id}")
        click.echo("\n\n".join(render(store, c) for c in dict((c["id"], c) for c in chosen).values()))
        return
    print_run(store, run_id, fmt)
    for pattern in cells:
        driver, _, name = pattern.partition(":")
        matched = [c for c in store.cell_records(run_id) if fnmatch(c.driver, driver) and fnmatch(c.scenario, name or "*")]
        if not matched:
            raise LabInputError(f"no cell matches '{pattern}' in run {run_id}")
        for cell in matched:
            out.print(trials_table(cell, store.trials(cell.id)))


@main.command("diagnose")
@click.argument("run_ref", default="last", metavar="RUN")
@store_option
def diagnose_cmd(run_ref: str) -> None:
    """Run the diagnosis rules again on a stored run (RUN: a run id or 'last') and show the findings."""
    store = chosen_store()
    run_id = store.resolve(run_ref)
    diagnose_and_store(store, run_id)
    print_findings(out, store.cell_records(run_id))



@main.command("runs")
@click.option("--limit", default=20, show_default=True)
@store_option
def runs_cmd(limit: int) -> None:
    """List stored runs."""
    store = chosen_store()
    table = Table(title=f"runs in {store.where}")
    for column in ("id", "status", "started", "drivers", "scenarios"):
        table.add_column(column)
    import datetime as dt
    import socket

    from clientlab.output.runstatus import status_words

    for run in store.runs(limit):
        started = dt.datetime.fromtimestamp(run["started_at"]).strftime("%Y-%m-%d %H:%M")
        config = RunConfig.from_json(run["config"])
        table.add_row(str(run["id"]), status_words(run, socket.gethostname(), short=True), started, ", ".join(config.drivers or ()),
                      ", ".join(config.scenarios or ()))
    out.print(table)


@main.command("export")
@click.argument("run_ref", default="last", metavar="RUN")
@click.option("--format", "fmt", type=click.Choice(sorted(exporters.EXPORTERS)), default="json", show_default=True)
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), help="File to write (default: stdout).")
@store_option
def export_cmd(run_ref: str, fmt: str, output: Path | None) -> None:
    """Export a stored run (RUN: a run id or 'last') as JSON or CSV."""
    store = chosen_store()
    run_id = store.resolve(run_ref)
    if output:
        exporters.write(store, run_id, fmt, output)
    else:
        click.echo(exporters.export(store, run_id, fmt), nl=False)


@main.command("report")
@click.argument("run_ref", default="last", metavar="RUN")
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path),
              help="The report: one self-contained HTML file (charts included), readable offline.  "
                   "[default: reports/run-N.html in the lab's data folder (.lab/)]")
@click.option("--plots", "plots_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Also write every chart of the report as a PNG into this folder (drawn by headless Chromium).")
@store_option
def report_cmd(run_ref: str, html_path: Path | None, plots_dir: Path | None) -> None:
    """An HTML report of a stored run (RUN: a run id or 'last'): the table, charts, sweeps, findings,
    machine, network and client versions."""
    from clientlab import report

    store = chosen_store()
    run_id = store.resolve(run_ref)
    if html_path is None:
        html_path = paths.lab_home() / "reports" / f"run-{run_id}.html"
        html_path.parent.mkdir(parents=True, exist_ok=True)
    if store.run_config(run_id).kind == "behave":  # outcomes, not figures: the matrix as a page
        from clientlab.output.behave import stored_matrix
        from clientlab.report.behave import page

        if plots_dir:
            raise LabInputError(f"run {run_id} is a behaviour matrix (clientlab behave): it has no charts to draw")
        cells, cases = stored_matrix(store.cell_records(run_id))
        html_path.write_text(page(run_id, _behave_title(store, run_id), cells, cases))
        err.print(f"run {run_id}: {html_path} (the behaviour matrix)", highlight=False)
        return
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
@store_option
def spread_cmd(run_refs: tuple[str, ...], json_path: Path | None) -> None:
    """How repeatable are the figures? The same cells over several runs (ids, 'last', or ranges
    such as 184-188): per cell, max/min of the runs' medians and of its ratio to the scenario's
    fastest driver; how many cells stayed within 5 % and 10 %, per driver; each run's wall time
    and disturbed trials. Run the same command a few times back to back, then this."""
    from clientlab.analysis import spread

    store = chosen_store()
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
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the comparison as one self-contained HTML page here.")
@store_option
def compare_cmd(run_a: str, run_b: str, json_path: Path | None, html_path: Path | None) -> None:
    """Is run B faster or slower than run A, beyond the noise? Every cell in both runs: throughput
    ratio B/A with a Mann–Whitney U test on the timed trials, CPU and peak RSS ratios."""
    from clientlab.analysis import compare

    store = chosen_store()
    a, b = store.resolve(run_a), store.resolve(run_b)
    kinds = {store.run_config(a).kind == "behave", store.run_config(b).kind == "behave"}
    if kinds == {True}:  # two behaviour matrices: which cells changed
        _compare_behave(store, a, b, json_path, html_path)
        return
    if kinds == {True, False}:
        raise LabInputError(f"runs {a} and {b}: one is a behaviour matrix (clientlab behave), the other a measuring "
                            "run; compare two runs of the same kind")
    rows = compare.compare_runs(store, a, b)
    if not rows:
        raise LabInputError(f"runs {a} and {b} have no cell in common (same driver and scenario)")
    out.print(compare.table(a, b, rows))
    notes = compare.unlike(store, a, b)
    for note in notes:
        err.print(f"[yellow]not like for like:[/] {escape(note)}", highlight=False)
    if json_path:
        json_path.write_text(json.dumps(compare.document(a, b, rows, notes), indent=2) + "\n")
    if html_path:
        from clientlab.report.compare import page

        html_path.write_text(page(a, b, rows, notes))
        err.print(f"{html_path}", highlight=False)


def _compare_behave(store, a: int, b: int, json_path: Path | None, html_path: Path | None) -> None:  # noqa: ANN001
    from clientlab.output.behave import change_lines, changes

    cells_a, cells_b = store.cell_records(a), store.cell_records(b)

    def keys(cells: list) -> set:  # a driver on a case with a setting (docs/behaviour.md: defaults, recommended)
        return {(c.driver, c.scenario, (c.params or {}).get("setting", "defaults")) for c in cells}

    common = len(keys(cells_a) & keys(cells_b))
    if not common:
        raise LabInputError(f"behave runs {a} and {b} have no cell in common (same driver and case)")
    if html_path:
        raise LabInputError("compare --html is for measuring runs; of two behave runs, `clientlab report` shows "
                            "each matrix, and compare prints what changed")
    changed = changes(cells_a, cells_b)
    click.echo("\n".join(change_lines(a, b, changed, common)))
    if json_path:
        json_path.write_text(json.dumps({"a": a, "b": b, "common": common, "changed": changed}, indent=2) + "\n")


def _behave_title(store, run_id: int) -> str:  # noqa: ANN001
    """When and where a behave run ran, and how long it took."""
    import socket

    from clientlab.output.runstatus import status_words, times_line

    run = store.run(run_id)
    m = run["machine"] or {}
    return (f"run {run_id} ({status_words(run, socket.gethostname())}), {times_line(run)}: {m.get('cpu_model')}, "
            f"{m.get('cores')} cores, kernel {m.get('kernel')}")
