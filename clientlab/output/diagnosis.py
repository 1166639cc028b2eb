"""The diagnosis in the terminal: each finding once per driver, with the scenarios it was seen
on, its evidence and its fix."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from clientlab.record import Cell, Finding

STYLE = {"warn": "bold yellow", "info": "cyan"}


def grouped(cells: list[Cell]) -> list[tuple[str, Finding, list[str]]]:
    """(driver, finding, scenarios): one entry per driver and rule, in the order first seen; the
    evidence is the first scenario's."""
    seen: dict[tuple[str, str, str], tuple[str, Finding, list[str]]] = {}
    for cell in cells:
        for f in cell.figures.findings if cell.figures is not None else ():
            key = (cell.driver, f.rule, f.title)
            seen.setdefault(key, (cell.driver, f, []))[2].append(cell.scenario)
    return list(seen.values())


def print_findings(console: Console, cells: list[Cell]) -> None:
    found = grouped(cells)
    if found:
        console.print("\n[bold]Why — what the server saw the clients do[/]")
    for driver, f, scenarios in found:
        where = scenarios[0] if len(scenarios) == 1 else f"{len(scenarios)} scenarios ({', '.join(scenarios)})"
        also = f" (on {scenarios[0]})" if len(scenarios) > 1 else ""
        console.print(f"[{STYLE.get(f.severity, '')}]{f.severity}[/] {escape(driver)} × {escape(where)}: "
                      f"[bold]{escape(f.title)}[/]\n    {escape(f.evidence)}{escape(also)}\n"
                      f"    fix: {escape(f.fix)}", highlight=False)
    if not found and any(c.status == "ok" for c in cells):
        console.print("\nNo findings: no client showed a known slow pattern.")
