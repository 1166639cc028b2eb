"""A cell's set-up, each step once, its findings handed on as one value: whether its driver can
run (its build inputs read once a run: drivers/build.Readiness), the verification job planned
(on the trial's fresh port), and what that job asks of the driver that its manifest does not
claim. The verification trial runs the very job planned here."""

from __future__ import annotations

from dataclasses import dataclass

from clientlab.drivers.build import Readiness
from clientlab.drivers.job import PlannedJob, required_capabilities
from clientlab.runner.cell import Cell
from clientlab.runner.trial import Trials
from clientlab.runner.warming import scale
from clientlab.scenario import Scenario


@dataclass(frozen=True)
class PreparedCell:
    """What a cell's set-up found."""

    missing: str | None = None          # why its driver cannot run now (not installed); None: it can
    check: Scenario | None = None       # its scenario at the count verification makes
    planned: PlannedJob | None = None   # verification's job
    lacking: tuple[str, ...] = ()       # capabilities that job needs and the manifest does not claim


def prepare(cell: Cell, readiness: Readiness, trials: Trials) -> PreparedCell:
    if missing := readiness.missing(cell.driver):
        return PreparedCell(missing=missing)
    # every request verified body by body: a count the user fixed is for the timed trials
    # (verifying 10,000 transfers of 100 KB takes several times as long as timing them)
    scenario = cell.scenario
    check = scale(scenario, max(cell.options.verify_requests, scenario.client.concurrency) / scenario.total_requests)
    planned = trials.plan(cell, check, verify=True)
    claimed = cell.driver.manifest.capabilities
    return PreparedCell(check=check, planned=planned,
                        lacking=tuple(c for c in required_capabilities(planned) if c not in claimed))
