"""The long form: one line per cell, grouped by scenario, fastest first — readable on any
terminal width and in a pipe."""

from __future__ import annotations

from rich.text import Text

from clientlab.output import cellfigures as cf
from clientlab.record import Cell


def _rate(cell: Cell) -> float:
    return cell.figures.throughput if cell.measured else -1.0


def long_lines(cells: list[Cell]) -> list[Text]:
    """Per scenario: a heading, then each driver's line with its ratio to the scenario's fastest."""
    lines: list[Text] = []
    scenarios = list(dict.fromkeys(c.scenario for c in cells))
    width = max((len(cf.driver_label(c)) for c in cells), default=10)
    quiet = cf.said_once(cells)
    for name in scenarios:
        mine = sorted((c for c in cells if c.scenario == name), key=_rate, reverse=True)
        lines.append(Text(name, style="bold underline"))
        best = _rate(mine[0])
        for cell in mine:
            line = Text(f"  {cf.driver_label(cell):<{width}}  ")
            if not cell.measured:
                line.append(cf.status_line(cell, 100), style=cf.STATUS_STYLE.get(cell.status, ""))
            else:
                f = cell.figures
                line.append(f"{cf.throughput(f):>14}", style="bold")
                line.append(f" {cf.precision(f):>6}", style="dim")
                line.append(f"  {_rate(cell) / best:5.2f}×" if best > 0 else "")
                line.append(f"  {cf.count(f):<16} {cf.cpu_per_request(f):<19} {cf.memory(f):<14} {cf.startup(f)}")
                for flag in cf.flags(f, quiet):
                    line.append(f"  {flag}", style="magenta")
            lines.append(line)
    return lines
