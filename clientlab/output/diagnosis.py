"""The diagnosis in the terminal: each finding once per driver, with the scenarios it was seen
on, its evidence and its fix."""

from __future__ import annotations

from rich.console import Console

from clientlab.wrap import print_wrapped
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
        print_wrapped(console, f"{f.severity} {driver} × {where}: {f.title}", style=STYLE.get(f.severity, ""))
        print_wrapped(console, f"{f.evidence}{also}", first="    ", rest="    ")
        print_wrapped(console, f"fix: {f.fix}", first="    ", rest="         ", style="green")
    if not found and any(c.status == "ok" for c in cells):
        console.print("\nNo findings: no client showed a known slow pattern.")
