"""Progress of a run: a bar over all cells with an ETA, and the current cell's trials."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from clientlab.runner import CellResult
from clientlab.store import Trial

# a cell is about this many trials (verification, warm-up, timed); the bar advances per trial
TRIALS_PER_CELL_GUESS = 7


class ProgressEvents:
    """Runner events shown as a rich progress bar (on stderr, so stdout stays clean)."""

    def __init__(self, cells: int, console: Console):
        self.progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("cells"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            console=console, transient=False,
        )
        self.task = self.progress.add_task("starting", total=cells)
        self._done_cells = 0
        self._trials = 0

    def __enter__(self) -> "ProgressEvents":
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def cell_started(self, driver: str, scenario: str) -> None:
        self._trials = 0
        self.progress.update(self.task, description=f"{driver} × {scenario}: starting")

    def trial_done(self, trial: Trial) -> None:
        self._trials += 1
        # advance within the cell without passing it: completed stays below the next whole cell
        part = min(self._trials / TRIALS_PER_CELL_GUESS, 0.9)
        self.progress.update(self.task, completed=self._done_cells + part,
                             description=self.progress.tasks[0].description.split(":")[0]
                             + f": {trial.kind} {trial.idx}")

    def cell_done(self, result: CellResult) -> None:
        self._done_cells += 1
        self.progress.update(self.task, completed=self._done_cells)
        status = result.status if result.status != "failed" else "[bold red]FAILED[/]"
        figure = ""
        if result.figures:
            figure = f"{result.figures['throughput']:,.1f} {result.figures['unit']}"
        self.progress.console.print(f"  {result.driver} × {result.scenario}: {status} {figure}"
                                    f"{' — ' + (result.reason or '').splitlines()[0] if result.reason else ''}",
                                    highlight=False)
