"""Progress of a run: a bar over all cells with an ETA, and what runs now.

The cells of one scenario run together (their timed trials round-robin), so the bar moves by
trials: each running cell counts for the share of its expected trials already done.
"""

from __future__ import annotations

import time
from typing import Callable

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from rich.text import Text

from clientlab.wrap import wrapped
from clientlab.runner import CellResult
from clientlab.store import Trial

# a cell is about this many trials (verification, warm-up, timed); a running cell never counts as done
TRIALS_PER_CELL_GUESS = 6
# Without a terminal the bar is not drawn, and interleaved cells end together near the run's end:
# a line this often says the run is alive and how far it is (a log, nohup, CI).
HEARTBEAT_S = 60.0


class ProgressEvents:
    """Runner events shown as a rich progress bar (on stderr, so stdout stays clean)."""

    def __init__(self, cells: int, console: Console, drivers: int | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("cells"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            console=console, transient=False,
        )
        self.task = self.progress.add_task("starting", total=cells)
        self._done_cells = 0
        self._running: dict[tuple[str, str], int] = {}   # (driver, scenario) → trials so far
        self._not_measured: dict[tuple[str, str, str], int] = {}  # (driver, status, reason) → cells
        self._cells = cells
        self._trials = 0
        self._clock = clock
        self._started = clock()
        self._last_said = self._started

    def __enter__(self) -> "ProgressEvents":
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()
        self._say_not_measured()

    def _update(self, description: str) -> None:
        part = sum(min(n / TRIALS_PER_CELL_GUESS, 0.9) for n in self._running.values())
        self.progress.update(self.task, completed=self._done_cells + part, description=description)
        self._heartbeat(description)

    def _heartbeat(self, description: str) -> None:
        if self.progress.console.is_terminal:
            return
        now = self._clock()
        if now - self._last_said < HEARTBEAT_S:
            return
        self._last_said = now
        minutes = (now - self._started) / 60
        text = (f"… {minutes:.0f} min: {self._done_cells} of {self._cells} cells done, "
                f"{len(self._running)} running, {self._trials:,} trials; now {description}")
        for line in wrapped(text, self.progress.console.width, first="  ", rest="      "):
            self.progress.console.print(Text(line, style="dim"), highlight=False, soft_wrap=True)

    def cell_started(self, driver: str, scenario: str) -> None:
        self._running[(driver, scenario)] = 0
        self._update(f"{scenario} — {driver}: starting")

    def trial_done(self, driver: str, scenario: str, trial: Trial) -> None:
        key = (driver, scenario)
        self._running[key] = self._running.get(key, 0) + 1
        self._trials += 1
        self._update(f"{scenario} — {driver}: {trial.kind} {trial.idx}")

    def cell_done(self, result: CellResult) -> None:
        self._running.pop((result.driver, result.scenario), None)
        self._done_cells += 1
        self._update(f"{result.scenario} — {result.driver}: {result.status}")
        reason = (result.reason or "").strip().splitlines()[0] if (result.reason or "").strip() else ""
        if result.status in ("unsupported", "not-installed"):
            # a driver that cannot do several scenarios for one reason is said once, then counted
            key = (result.driver, result.status, reason)
            self._not_measured[key] = self._not_measured.get(key, 0) + 1
            if self._not_measured[key] > 1:
                return
        status = result.status if result.status != "failed" else "FAILED"
        figure = f" {result.figures.throughput:,.1f} {result.figures.unit}" if result.figures else ""
        text = f"{result.driver} × {result.scenario}: {status}{figure}" + (f" — {reason}" if reason else "")
        style = "bold red" if result.status == "failed" else "yellow" if result.status == "unsupported" else ""
        for line in wrapped(text, self.progress.console.width, first="  ", rest="      "):
            self.progress.console.print(Text(line, style=style), highlight=False, soft_wrap=True)

    def _say_not_measured(self) -> None:
        for (driver, status, reason), n in self._not_measured.items():
            if n > 1:
                text = f"{driver}: {status} on {n - 1} more scenario(s), for the same reason"
                for line in wrapped(text, self.progress.console.width, first="  ", rest="      "):
                    self.progress.console.print(Text(line, style="yellow"), highlight=False, soft_wrap=True)
