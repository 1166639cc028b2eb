"""clientlab behave: does each client keep its promises when the server misbehaves?"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import click
from rich.markup import escape

from clientlab.behaviour import behave, cases as behaviour
from clientlab.cli.choice import chosen_drivers
from clientlab.cli.common import (
    chosen_store,
    driver_path_option,
    err,
    main,
    no_wait_option,
    split_names,
    store_option,
    take_lab_lock,
)
from clientlab.errors import LabInputError
from clientlab.measuring import machine
from clientlab.output.behave import matrix_json, matrix_lines
from clientlab.output.behavefindings import findings_lines
from clientlab.output.runstatus import times_line
from clientlab.runner import stop_on_sigterm


@main.command("behave")
@driver_path_option
@store_option
@no_wait_option
@click.option("-d", "--drivers", "driver_names", multiple=True,
              help="Drivers (comma-separated or repeated; 'all', or a glob such as 'python-*', as run takes "
                   "them). Default: the installed default drivers (one a language).")
@click.option("-s", "--cases", "case_names", multiple=True,
              help="Behaviour cases (comma-separated; behaviours/*.toml). Default: every one.")
@click.option("--settings", "setting_names", default=",".join(behave.SETTINGS), show_default=True,
              help="Which columns a case gets (comma-separated): defaults (the library's defaults, the case's "
                   "timeout set as the driver sets it in every job) and recommended (the library's documented "
                   "recommendation for production, its manifest's [behaviour.recommended]; '—' where it has none).")
@click.option("--json", "json_path", metavar="FILE", help="Also write the matrix as JSON to FILE ('-': stdout, instead of the table).")
@click.option("--no-store", is_flag=True, help="Do not store the outcomes as a run.")
@click.option("-j", "--jobs", type=click.IntRange(1, 16), default=1, show_default=True,
              help="Drivers at once, each with a bench server of its own. Most cells wait on a stall or a "
                   "deadline, so several at once take a fraction of the time; on a busy host a deadline's "
                   "overshoot can grow (a late cell is tried again, the earliest try counts). The run stores "
                   "how many.")
def behave_cmd(driver_paths: tuple[Path, ...], no_wait: bool, driver_names: tuple[str, ...],
               case_names: tuple[str, ...], setting_names: str, json_path: str | None, no_store: bool,
               jobs: int) -> None:
    """Every chosen driver on every behaviour case against the bench server's fault origins: a
    stall before the answer, a trickled body, a body short of its length, a chunked body without
    its end, a redirect to another origin with credentials, a slow origin beside a fast one, and
    more (behaviours/). Each case runs with the library's defaults and with its documented
    recommended setting (the driver's [behaviour.recommended]; '—' where it has none). Each cell
    runs in a driver process of its own; the lab's clock and the server's ledger judge it
    (docs/behaviour.md). A client
    that does otherwise than correct is a finding, not a failure: the exit code is 1 only when a
    driver broke. It loads the machine as a run does, so it takes the lab's lock as a run does:
    a second one waits for the first (or exits 75 with --no-wait)."""
    found = behaviour.discover()
    if found.problems:
        raise LabInputError("\n".join(found.problems))
    cases = behaviour.select(found.found, split_names(case_names))
    given = split_names((setting_names,)) or []
    if not given or any(s not in behave.SETTINGS for s in given):
        raise LabInputError(f"--settings {setting_names!r}: name one or both of {', '.join(behave.SETTINGS)}")
    settings = tuple(s for s in behave.SETTINGS if s in given)  # defaults first: "=" cells copy it
    drivers = chosen_drivers(driver_paths, driver_names)
    take_lab_lock(no_wait)
    store = None if no_store else chosen_store()
    config = {"command": "clientlab " + shlex.join(sys.argv[1:])}

    def progress(cell: behave.BehaveCell) -> None:
        which = " (recommended)" if cell.setting == "recommended" else ""
        err.print(f"  {escape(cell.driver)} {escape(cell.case)}{which}: {escape(cell.outcome.outcome)}"
                  + (" (= defaults)" if cell.same_as_defaults else ""), highlight=False)

    err.print(f"behave: {len(drivers)} driver(s) × {len(cases)} case(s) × {' and '.join(settings)}, each cell in a "
              "driver process of its own" + (f", {jobs} drivers at once" if jobs > 1 else ""), highlight=False)
    with stop_on_sigterm():  # a stopped matrix is stored as interrupted, its finished cells kept
        run_id, cells = behave.run_matrix(drivers, cases, store, config, machine.describe(), progress, settings,
                                          jobs)
    run = store.run(run_id) if store and run_id is not None else None
    if json_path:
        doc = matrix_json(cells, cases, run_id)
        if run is not None:  # the matrix's time, by the store's clock
            doc.update(started_at=run["started_at"], finished_at=run["finished_at"],
                       wall_s=round(run["finished_at"] - run["started_at"], 1))
        text = json.dumps(doc, indent=2)
        if json_path == "-":
            click.echo(text)
        else:
            Path(json_path).write_text(text + "\n")
    if json_path != "-":
        if run is not None:
            click.echo(times_line(run))
        click.echo("\n".join(matrix_lines(cells, cases, run_id, findings_lines(cells, cases))))
    if any(c.status == "failed" for c in cells):
        sys.exit(1)
