"""Progress of a run: a bar over all cells with an ETA, and what runs now.

The cells of one scenario run together (their timed trials round-robin), so the bar moves by
trials: each running cell counts for the share of its expected trials already done.
"""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from clientlab.runner import CellResult
from clientlab.store import Trial

# a cell is about this many trials (verification, warm-up, timed); a running cell never counts as done
TRIALS_PER_CELL_GUESS = 6


class ProgressEvents:
    """Runner events shown as a rich progress bar (on stderr, so stdout stays clean)."""

    def __init__(self, cells: int, console: Console, drivers: int | None = None):
        self.progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("cells"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            console=console, transient=False,
        )
        self.task = self.progress.add_task("starting", total=cells)
        self._done_cells = 0
        self._running: dict[tuple[str, str], int] = {}   # (driver, scenario) → trials so far

    def __enter__(self) -> "ProgressEvents":
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def _update(self, description: str) -> None:
        part = sum(min(n / TRIALS_PER_CELL_GUESS, 0.9) for n in self._running.values())
        self.progress.update(self.task, completed=self._done_cells + part, description=description)

    def cell_started(self, driver: str, scenario: str) -> None:
        self._running[(driver, scenario)] = 0
        self._update(f"{scenario} — {driver}: starting")

    def trial_done(self, driver: str, scenario: str, trial: Trial) -> None:
        key = (driver, scenario)
        self._running[key] = self._running.get(key, 0) + 1
        self._update(f"{scenario} — {driver}: {trial.kind} {trial.idx}")

    def cell_done(self, result: CellResult) -> None:
        self._running.pop((result.driver, result.scenario), None)
        self._done_cells += 1
        self._update(f"{result.scenario} — {result.driver}: {result.status}")
        status = result.status if result.status != "failed" else "[bold red]FAILED[/]"
        figure = ""
        if result.figures:
            figure = f"{result.figures.throughput:,.1f} {result.figures.unit}"
        self.progress.console.print(f"  {result.driver} × {result.scenario}: {status} {figure}"
                                    f"{' — ' + (result.reason or '').splitlines()[0] if result.reason else ''}",
                                    highlight=False)
