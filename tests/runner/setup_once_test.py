"""A cell's set-up does each step once: its driver's build inputs read once a run, verification's
job planned once a cell, the lab's placement applied once a run. Counted through the seams the
runner is given: a Readiness's reader, the planner, the placement."""

from __future__ import annotations

import contextlib
import dataclasses
from collections import Counter
from dataclasses import dataclass, field

from clientlab.analysis.stats import StopRule
from clientlab.drivers.build import Readiness
from clientlab.drivers.job import plan
from clientlab.runner import CellGroup, CellRunner, Placement, RunOptions, lab_run, run_matrix
from tests.support.fixtures import shipped

ONE_TRIAL = RunOptions(warmup=1, stop=StopRule(min_trials=1, max_trials=1), placement="free", host_probe=False)


def _built(driver, lab_home):
    """The test driver with a build step, built (its stamp matching what the counted reader reads),
    so that its readiness reads its build inputs as a built driver's does."""
    stamps = lab_home / "build"
    stamps.mkdir(exist_ok=True)
    (stamps / f"{driver.id}.stamp").write_text("inputs read\n")
    return dataclasses.replace(driver, manifest=driver.manifest.model_copy(update={"build": ["true"]}))


def _counted_readiness() -> tuple[Readiness, list[str]]:
    reads: list[str] = []

    def read(driver) -> str:
        reads.append(driver.id)
        return "inputs read"

    return Readiness(read), reads


def test_a_run_reads_each_drivers_build_inputs_once_and_plans_each_cells_verification_once(
        bench_server, store, test_drivers, lab_home, monkeypatch):
    monkeypatch.setenv("CLIENTLAB_HOME", str(lab_home))
    drivers = [_built(test_drivers[d], lab_home) for d in ("python-fake-reference", "python-fake-no-reuse")]
    readiness, reads = _counted_readiness()
    verifications: Counter[str] = Counter()

    def planner(scenario, endpoint, scratch, verify, tag):
        verifications[tag] += verify
        return plan(scenario, endpoint, scratch, verify=verify, tag=tag)

    groups = [CellGroup(drivers, shipped("get-small", count=10)), CellGroup(drivers, shipped("post-form", count=5))]
    with CellRunner(bench_server, store, store.start_run({}, {}), ONE_TRIAL, readiness=readiness,
                    planner=planner) as runner:
        results = runner.run_groups(groups)
    assert [r.status for r in results] == ["ok"] * 4, [r.reason for r in results]
    assert sorted(reads) == sorted(d.id for d in drivers), "each driver's inputs read once for its two cells"
    assert len(verifications) == 4 and set(verifications.values()) == {1}, verifications


@dataclass(frozen=True)
class _CountedPlacement(Placement):
    applied: list[str] = field(default_factory=list, compare=False)

    def apply_to_lab(self) -> None:
        self.applied.append(self.name)
        super().apply_to_lab()


def test_a_run_applies_its_placement_to_the_lab_once_and_its_cells_read_each_driver_once(
        bench_server, store, test_drivers, lab_home, monkeypatch):
    monkeypatch.setenv("CLIENTLAB_HOME", str(lab_home))
    driver = _built(test_drivers["python-fake-reference"], lab_home)
    placement = _CountedPlacement.of("free")
    readiness, reads = _counted_readiness()
    with lab_run(store, {}, ONE_TRIAL, placement=placement, readiness=readiness) as lab:
        results = run_matrix(lab, [driver], [shipped("get-small", count=10), shipped("post-form", count=5)],
                             network=lambda _cpu: contextlib.nullcontext(bench_server))
    assert [r.status for r in results] == ["ok", "ok"], [r.reason for r in results]
    assert placement.applied == ["free"]
    assert reads == [driver.id]
