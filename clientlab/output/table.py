"""The side-by-side table: rows are drivers, columns are scenarios (wide terminals)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from clientlab.output import cellfigures as cf
from clientlab.record import Cell

CAPTION = ("req/s or MB/s: median, ± half the CI of the median; n = requests per trial (of the scenario's, "
           "when scaled to the trial budget); CPU per request and peak memory of the driver's process tree; "
           "start = process start to ready, not in the timed figures")
# about what one scenario column needs to stay readable
COLUMN_WIDTH = 20
DRIVER_WIDTH = 26


def cell_text(cell: Cell, said_once: frozenset[str] = frozenset()) -> Text:
    """One cell: throughput ± precision, count, CPU per request, peak memory; or the status and why."""
    if cell.status != "ok" or cell.figures is None:
        return Text(cf.status_line(cell), style=cf.STATUS_STYLE.get(cell.status, ""))
    f = cell.figures
    text = Text(cf.throughput(f), style="bold")
    text.append(f" {cf.precision(f)}", style="dim")
    for flag in cf.flags(f, said_once):
        text.append(f" {flag}", style="magenta")
    text.append(f"\n{cf.count(f)}", style="dim")
    text.append(f"\n{cf.cpu_per_request(f)}")
    text.append(f"\n{cf.memory(f)}")
    text.append(f"\n{cf.startup(f)}", style="dim")
    return text


def width_needed(cells: list[Cell]) -> int:
    scenarios = len(dict.fromkeys(c.scenario for c in cells))
    return DRIVER_WIDTH + COLUMN_WIDTH * scenarios


def results_table(cells: list[Cell], title: str) -> Table:
    drivers = list(dict.fromkeys(c.driver for c in cells))
    labels = {c.driver: cf.driver_label(c) for c in cells}
    quiet = cf.said_once(cells)
    scenarios = list(dict.fromkeys(c.scenario for c in cells))
    by_key = {(c.driver, c.scenario): c for c in cells}
    table = Table(title=title, show_lines=True, caption=CAPTION)
    table.add_column("driver", style="bold", no_wrap=True)
    for name in scenarios:
        table.add_column(name, overflow="fold", min_width=COLUMN_WIDTH - 3)
    for driver in drivers:
        row = [labels[driver]]
        for name in scenarios:
            cell = by_key.get((driver, name))
            row.append(cell_text(cell, quiet) if cell else Text("—", style="dim"))
        table.add_row(*row)
    return table
