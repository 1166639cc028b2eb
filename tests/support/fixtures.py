"""Shared test fixtures (loaded by the root conftest.py): the real bench server, a scratch results store, the test drivers."""

from __future__ import annotations

import pytest

from clientlab import paths, scenario
from clientlab.analysis.stats import StopRule
from clientlab.drivers import manifest
from clientlab.runner import CellRunner, RunOptions
from clientlab.runner.trial import tree_meter
from clientlab.scenario import Scenario
from clientlab.servers.bench import BenchServer
from clientlab.store import Store
from tests.support import TESTDRIVERS


@pytest.fixture(scope="session")
def bench_server():
    if not paths.server_binary().exists():
        pytest.fail(f"{paths.server_binary()} is missing: run ./setup.sh first")
    with BenchServer() as server:
        yield server


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "results.sqlite")
    yield s
    s.close()


@pytest.fixture(scope="session")
def test_drivers() -> dict[str, manifest.Driver]:
    drivers, problems = manifest.discover([TESTDRIVERS])
    assert problems == []
    return {d.id: d for d in drivers}


@pytest.fixture
def lab_home(tmp_path, monkeypatch):
    """A fresh data directory for a `clientlab` command the test runs (its runs stay out of the
    machine's store), sharing the built binaries and certificates."""
    home = tmp_path / "lab"
    home.mkdir()
    # a private run lock: these runs must not wait for a measuring run elsewhere on the machine
    monkeypatch.setenv("CLIENTLAB_LOCK", str(tmp_path / "run.lock"))
    (home / "bin").symlink_to(paths.lab_home() / "bin")
    (home / "tls").symlink_to(paths.lab_home() / "tls")
    return home


def shipped(name: str, **params) -> Scenario:
    files, _ = scenario.discover()
    return next(f for f in files if f.name == name).expand(params)


@pytest.fixture
def cell(bench_server, store, test_drivers):
    """Run one cell quickly: cell("python-fake-reference", scenario) -> (CellResult, trials);
    `probe`: the host probe the runner reads around timed trials (none by default: unpinned);
    `usage_meter`: what measures the driver in each trial (the runner's seam)."""
    run_id = store.start_run({}, {})

    def run(driver_id: str, sc: Scenario, trials: int = 2, warmup: int = 0, probe=None, usage_meter=tree_meter,
            **kwargs):
        driver = test_drivers.get(driver_id) or manifest.select(manifest.discover()[0], [driver_id])[0]
        options = RunOptions(warmup=warmup, stop=StopRule(min_trials=trials, max_trials=trials), placement="free",
                             **kwargs)
        with CellRunner(bench_server, store, run_id, options, probe_for=lambda _cpu: probe,
                        usage_meter=usage_meter) as runner:
            result = runner.run_cell(driver, sc)
        cells = store.cells(run_id)
        return result, store.trials(cells[-1]["id"])

    return run
