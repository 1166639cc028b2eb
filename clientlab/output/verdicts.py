"""An experiment's verdicts in the terminal: each claim of the article, what the lab measured, and
whether it holds."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from clientlab.experiment.plaintable import plain_table, stored_cells
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


def plain_check_table(e: Experiment, store: Store, run_id: int) -> tuple[Table, list[str]] | None:
    """For an experiment beside the plain loop (truth): every driver, per part, the loop's rate, the
    lab's and lab ÷ plain with their spreads, both allocator modes unless their own spread says they cost the same;
    and a line per miss with its cause. None for any other experiment."""
    if e.beside != "plain":
        return None
    t = plain_table(e, stored_cells(store, run_id))
    table = Table(title=f"{e.name}: every driver beside its library's plain loop (run {run_id})",
                  caption="req/s ± half the median's CI; lab ÷ plain: time a request, pair by pair (median, CI, "
                          "verdict, pairs); a second line: each allocator mode, unless the cell's two cost the same "
                          "within their spread on each side (in brackets, the side's own processes in it: the "
                          "loop's rounds, the lab's trials by process)")
    table.add_column("driver", no_wrap=True)
    for part in t.parts:
        for what in ("plain", "lab", "lab ÷ plain"):
            table.add_column(f"{part}\n{what}", overflow="fold")
    for driver in t.rows:
        table.add_row(driver, *(escape(text) for text in t.row(driver, "\n")))
    lines = [f"misses (off their plain loop): {len(t.misses)}; not decided: {len(t.not_decided)}"]
    lines += [f"  {m.driver} × {m.part}: {m.ratio}: {'; '.join(m.causes)}" for m in t.misses]
    return table, lines


def print_verdicts(console: Console, e: Experiment, store: Store, run_id: int, host: str | None = None) -> None:
    """An experiment's claims judged (verdicts_table) and, for one beside the plain loop, every
    driver beside it (plain_check_table)."""
    console.print(verdicts_table(e, store, run_id, host))
    if (checked := plain_check_table(e, store, run_id)) is not None:
        console.print(checked[0])
        for line in checked[1]:
            console.print(line, highlight=False)
