"""clientlab drivers, scenarios, build: what the lab has, and making it ready."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.markup import escape
from rich import box
from rich.table import Table

from clientlab import paths, scenario
from clientlab.cli.common import (
    driver_path_option,
    err,
    load_drivers,
    main,
    out,
    runtimes_option,
    scenario_path_option,
    split_names,
    use_scenario_paths,
)
from clientlab.drivers import build as builder
from clientlab.drivers import manifest, runtimes
from clientlab.errors import LabInputError
from clientlab.output.cellfigures import DEPARTED


@main.command("drivers")
@driver_path_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--long", "long_form", is_flag=True, help="Also how each library is used, its library and runtime, "
                                                       "and its declared departures from the library's defaults.")
def drivers_cmd(driver_paths: tuple[Path, ...], as_json: bool, long_form: bool) -> None:
    """List drivers by language: which a plain `clientlab run` takes (default), whether each is
    installed (and why not), whether it has its library's plain loop, and what it can do."""
    # a driver also on Bun and Deno is listed on each of their pinned lines too (node-fetch@bun1.4)
    drivers = [v for d in load_drivers(driver_paths) for v in (d, *d.also_on_lines())]
    rows = [{
        "id": d.id, "language": d.manifest.language, "library": d.manifest.library,
        "description": d.manifest.description, "capabilities": d.manifest.capabilities,
        "default": d.manifest.default and d.variant is None, "folder": str(d.folder),
        "departures": d.manifest.departures,
        "runtime": f"{d.runtime.kind} {d.runtime.version}" if d.runtime else None,
        "installed": (missing := builder.missing(d)) is None, "why_not": missing,
    } for d in drivers]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not long_form:
        out.print(_drivers_table(drivers, rows))
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


CAPABILITIES = ("http1", "tls", "http2", "h2c", "http3", "cookies", "redirects", "form", "multipart", "upload",
                "sink_file", "gzip", "parallel", "keepalive", "keepalive_off")


def _drivers_table(drivers: list[manifest.Driver], rows: list[dict]) -> Table:
    """The compact listing: a section per language, a driver a row, capabilities folded."""
    from clientlab.output.docs import LANGUAGE_ORDER, _language_name

    by_id = {r["id"]: r for r in rows}
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, caption="default: in a plain `clientlab run`; plain: has its "
                  "library's own plain loop (crosscheck --plain); cannot: the capabilities it does not claim, whose "
                  "cells it answers unsupported (docs/driver-protocol.md §1); --long: how each is used and all it "
                  "can do", caption_justify="left")
    table.add_column("driver", no_wrap=True)
    table.add_column("default", justify="center")
    table.add_column("installed", overflow="fold", max_width=22)
    table.add_column("plain", justify="center")
    table.add_column("cannot", overflow="fold", ratio=1)
    languages = sorted({d.manifest.language for d in drivers},
                       key=lambda lang: (LANGUAGE_ORDER.index(lang) if lang in LANGUAGE_ORDER else 99, lang))
    for lang in languages:
        mine = sorted((d for d in drivers if d.manifest.language == lang), key=lambda d: d.id)
        table.add_row(f"[bold]{escape(_language_name(lang))}[/]", "", "", "", "", end_section=False)
        for d in mine:
            r = by_id[d.id]
            installed = "[green]yes[/]" if r["installed"] else f"[red]no[/]: [dim]{escape(r['why_not'])}[/]"
            lacks = ", ".join(c for c in CAPABILITIES if c not in r["capabilities"])
            table.add_row(f"  {escape(d.id)}", "✓" if r["default"] else "", installed,
                          "✓" if d.manifest.plain else "", escape(lacks or "—"), end_section=d is mine[-1])
    return table


@main.command("scenarios")
@scenario_path_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def scenarios_cmd(scenario_paths: tuple[Path, ...], as_json: bool) -> None:
    """List scenarios, their parameters and what they need from a driver."""
    use_scenario_paths(scenario_paths)
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
@click.option("-d", "--drivers", "driver_names", multiple=True,
              help="These drivers (comma-separated). Default: the drivers of a plain `clientlab run`; "
                   "the others build on first use.")
@click.option("--all", "every", is_flag=True, help="Every driver, ahead of their first use.")
@click.option("--force", is_flag=True, help="Rebuild even when the build inputs did not change.")
@runtimes_option
@click.option("--experiments", "for_experiments", is_flag=True,
              help="Also the runtime lines the shipped experiments run on (clients-by-runtime's), which are "
                   "otherwise built on first use.")
def build_cmd(driver_paths: tuple[Path, ...], driver_names: tuple[str, ...], every: bool, force: bool,
              runtime_specs: tuple[str, ...], for_experiments: bool) -> None:
    """Build drivers (venvs, compiled programs, the runtime builds they run on); skips the ones
    that are up to date. Set-up builds the default run's drivers; `run`, `crosscheck` and
    `experiment` build any other on first use, and `build --all` builds them all ahead of time."""
    drivers = load_drivers(driver_paths)
    wanted = split_names(driver_names)
    if wanted and every:
        raise LabInputError("-d names drivers and --all takes every one: give one of them")
    chosen = manifest.select(drivers, wanted) if wanted else drivers if every else manifest.select(drivers, None)
    chosen = manifest.on_runtimes(chosen, runtimes.parse(list(runtime_specs)))
    if for_experiments:
        chosen += _experiment_lines(drivers)
    failed = 0
    for d in chosen:
        ok, what = builder.build(d, force=force)
        failed += not ok
        style = "green" if ok else "red"
        err.print(f"[{style}]{d.id}[/]: {what}", highlight=False)
    if failed:
        raise SystemExit(1)


def _experiment_lines(drivers: list[manifest.Driver]) -> list[manifest.Driver]:
    """The driver builds on other runtime lines (node-fetch@node22) that a shipped experiment's cells name."""
    from clientlab.experiment import spec
    from clientlab.experiment.plan import plan

    by_id = {d.id: d for d in drivers}
    named = dict.fromkeys(c.driver for e in spec.discover().found for c in plan(e, quick=False))
    lines = (manifest.variant(by_id, driver_id) for driver_id in named if driver_id not in by_id)
    return [d for d in lines if d is not None]


@main.command("docs")
@click.option("--check", is_flag=True, help="Only say which generated statements are stale (exit 1 if any).")
def docs_cmd(check: bool) -> None:
    """Write anew the statements in README.md and docs/ that the code makes itself (the drivers by
    language, the default run's drivers, the experiments' cells and budgets): each sits between
    `<!-- generated:NAME -->` markers."""
    from clientlab.output import docs

    stale = docs.update(check)
    for path, names in stale:
        verb = "stale" if check else "rewritten"
        out.print(f"{path.relative_to(paths.ROOT)}: {', '.join(names)} {verb}", highlight=False)
    if not stale:
        out.print("every generated statement is current", highlight=False)
    elif check:
        raise SystemExit(1)
