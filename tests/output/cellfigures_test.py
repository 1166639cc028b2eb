"""A flag most cells carry is said once under the table, not in every cell."""

from __future__ import annotations

from clientlab.output import cellfigures as cf
from clientlab.output.long import long_lines
from clientlab.record import Cell, CellFigures


def _cell(driver: str, cut: bool) -> Cell:
    figures = CellFigures(throughput=100.0, unit="req/s", precision=0.02, requests=10, cpu_user_s=0.001,
                          cpu_sys_s=0.001, peak_rss_kb=2048, budget_stopped=cut)
    return Cell(driver=driver, scenario="get-small", status="ok", figures=figures)


def test_the_budget_flag_of_most_cells_becomes_one_line():
    cells = [_cell("a-x", True), _cell("b-x", True), _cell("c-x", False)]
    assert cf.said_once(cells) == {cf.BUDGET_CUT}
    assert not any(cf.BUDGET_CUT in line.plain for line in long_lines(cells))
    assert cf.said_once_line(cells).startswith("cut by time budget: 2 of 3 cells")


def test_the_budget_flag_of_a_few_cells_stays_in_those_cells():
    cells = [_cell("a-x", True), _cell("b-x", False), _cell("c-x", False)]
    assert cf.said_once(cells) == frozenset() and cf.said_once_line(cells) is None
    assert sum(cf.BUDGET_CUT in line.plain for line in long_lines(cells)) == 1
