"""A real measured run for the report's tests: the bench server, the test drivers, stored in a
scratch lab home (shared with the built server and certificates) so the command line can read it."""

from __future__ import annotations

import pytest

from clientlab import paths
from clientlab.analysis.diagnose import diagnose_run
from clientlab.analysis.stats import StopRule
from clientlab.measuring import machine
from clientlab.runner import CellRunner, RunOptions
from clientlab.store import Store
from tests.support.fixtures import shipped

REF = "python-fake-reference"
SIZES = ("1MB", "2MB", "4MB")


@pytest.fixture(scope="session")
def measured_run(bench_server, test_drivers, tmp_path_factory):
    """(lab home, run id): an ok cell, a size sweep, a cell with a finding, a failed and an
    unsupported cell — measured, diagnosed and stored the way `clientlab run` does."""
    home = tmp_path_factory.mktemp("lab")
    (home / "bin").symlink_to(paths.lab_home() / "bin")
    (home / "tls").symlink_to(paths.lab_home() / "tls")
    cells = [(REF, shipped("get-small", count=30)), ("python-fake-no-reuse", shipped("get-small", count=30)),
             ("python-fake-crash", shipped("get-small", count=5)), (REF, shipped("parallel-feeds")),
             *[(REF, shipped("download-memory", size=size, count=2)) for size in SIZES]]
    store = Store(home / "results.sqlite")
    config = {"drivers": sorted({d for d, _ in cells}), "scenarios": [s.label for _, s in cells],
              "net": {"profile": "loopback", "asked": "loopback"}}
    run_id = store.start_run(machine.describe(), config)
    runner = CellRunner(bench_server, store, run_id,
                        RunOptions(warmup=0, stop=StopRule(min_trials=3, max_trials=3), placement="free"))
    for driver_id, sc in cells:
        runner.run_cell(test_drivers[driver_id], sc)
    store.finish_run(run_id, "complete")
    for cell_id, findings in diagnose_run(store.cell_records(run_id)).items():
        store.set_findings(cell_id, findings)
    store.close()
    return home, run_id
