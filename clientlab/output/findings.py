"""The diagnosis in the terminal: findings per driver and scenario, with evidence and fix."""

from __future__ import annotations

from rich.console import Console

STYLE = {"warn": "bold yellow", "info": "cyan"}


def print_findings(console: Console, cells: list[dict]) -> None:
    any_found = False
    for cell in cells:
        findings = (cell.get("figures") or {}).get("findings") or []
        for f in findings:
            if not any_found:
                console.print("\n[bold]Why — what the server saw the clients do[/]")
                any_found = True
            console.print(f"[{STYLE.get(f['severity'], '')}]{f['severity']}[/] {cell['driver']} × {cell['scenario']}: "
                          f"[bold]{f['title']}[/]\n    {f['evidence']}\n    fix: {f['fix']}", highlight=False)
    if not any_found and any(c["status"] == "ok" for c in cells):
        console.print("\nNo findings: no client showed a known slow pattern.")
