"""An experiment's verdicts in the terminal: each claim of the article, what the lab measured, and
whether it holds."""

from __future__ import annotations

from rich.table import Table

from clientlab.experiment.spec import Experiment
from clientlab.experiment.verdict import judge_run
from clientlab.store import Store


def verdicts_table(e: Experiment, store: Store, run_id: int, host: str | None = None) -> Table:
    """The claims of `e` judged on the cells of run `run_id` (measured on lab host `host`, if any)."""
    table = Table(title=f"{e.name}: the article's claims (run {run_id}"
                        + (f", measured on lab host {host})" if host else ")"))
    for column in ("the article says", "the lab measured", "verdict"):
        table.add_column(column, overflow="fold")
    for v in judge_run(e, store.cell_records(run_id)):
        table.add_row(v.claim.says, "\n".join(v.evidence), v.outcome)
    return table
