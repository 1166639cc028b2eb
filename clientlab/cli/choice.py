"""What a run runs: the drivers and the scenarios chosen on the command line, as `run`, a
fleet run (`run --on`) and `behave` choose them."""

from __future__ import annotations

from pathlib import Path

from rich.markup import escape

from clientlab import scenario
from clientlab.cli.common import err, load_drivers, split_names
from clientlab.drivers import build as builder
from clientlab.drivers import manifest
from clientlab.errors import LabInputError


def chosen_drivers(driver_paths: tuple[Path, ...], driver_names: tuple[str, ...],
                   readiness: builder.Readiness | None = None) -> list[manifest.Driver]:
    """The drivers named (`all`: every one; a glob such as `python-*`: those it matches), or
    every installed default driver; of a set the command chose (the default one, `all`, a glob),
    the uninstalled are skipped, saying so, while a driver named by its id stays. `run`,
    `behave` and a fleet run choose here. `readiness`: the command's, so that its run reads no
    driver's build inputs again."""
    wanted = split_names(driver_names)
    chosen = manifest.select(load_drivers(driver_paths), wanted)
    if not manifest.names_each(wanted):
        readiness = readiness or builder.Readiness()
        skipped = {d.id: why for d in chosen if (why := readiness.missing(d))}
        for d_id, why in skipped.items():
            err.print(f"[dim]not installed, skipped: {d_id} ({escape(why)})[/]", highlight=False)
        chosen = [d for d in chosen if d.id not in skipped]
    if not chosen:
        raise LabInputError("no installed driver to run (see: clientlab drivers)")
    return chosen


def chosen_scenarios(scenario_names: tuple[str, ...], params: tuple[str, ...], http_versions: tuple[str, ...],
                      concurrency: int | None, keep_alive: bool | None,
                      client_options: tuple[str, ...],
                      server_headers: str | None = None) -> tuple[list, list[scenario.Scenario]]:
    """(the scenario files, the scenarios selected with the client settings given on the command line,
    each once per --http version)."""
    versions: list[str | None] = list(http_versions) or [None]  # None: the scenarios' own
    files, problems = scenario.discover()
    for problem in problems:
        err.print(f"[red]invalid scenario, skipped:[/] {escape(problem)}", highlight=False)
    scenarios = scenario.select(files, split_names(scenario_names), scenario.parse_overrides(list(params)))
    if not scenarios:
        raise LabInputError("no scenario selected")
    options_given = scenario.parse_options(list(client_options))
    changed = []
    for s, http in ((s, v) for s in scenarios for v in versions):
        try:
            changed.append(s.with_client(http=http, concurrency=concurrency, keep_alive=keep_alive, options=options_given)
                           .with_server(headers=server_headers))
        except LabInputError as exc:
            if scenario_names:  # asked for by name: the user must hear that it cannot be run so
                raise
            err.print(f"[yellow]skipped:[/] {escape(str(exc))}", highlight=False)
    if not changed:
        raise LabInputError("no scenario can run with these settings")
    return files, changed
