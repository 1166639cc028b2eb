"""What ran behind a table's figures: each driver's versions and its declared departures from
its library's defaults."""

from __future__ import annotations

from rich.console import Console

from clientlab.output.cellfigures import DEPARTED
from clientlab.wrap import print_wrapped
from clientlab.record import Cell


def versions_text(versions: dict[str, str]) -> str:
    """'excon 0.88.0, ruby 3.1.2, openssl …' in the order the driver reported them."""
    return ", ".join(f"{name} {version}" for name, version in versions.items())


def print_what_ran(console: Console, cells: list[Cell]) -> None:
    """Per driver, once: the versions its hello reported, then the settings it declares."""
    drivers: dict[str, dict] = {}
    for cell in cells:
        seen = drivers.setdefault(cell.driver, {"versions": {}, "departures": ()})
        seen["versions"].update(cell.versions or {})
        seen["departures"] = cell.departures or seen["departures"]
    if not any(d["versions"] for d in drivers.values()):
        return
    console.print("\n[bold]Versions that ran[/]")
    for driver, seen in drivers.items():
        if seen["versions"]:  # a driver refused before it started reports none: nothing to list
            print_wrapped(console, f"{driver}: {versions_text(seen['versions'])}", first="  ", rest="      ")
    departed = {d: s["departures"] for d, s in drivers.items() if s["departures"]}
    if departed:
        console.print(f"\n[bold]{DEPARTED} Settings of the driver's own, not its library's defaults[/]")
        for driver, departures in departed.items():
            for departure in departures:
                print_wrapped(console, f"{driver}: {departure}", first="  ", rest="      ")
