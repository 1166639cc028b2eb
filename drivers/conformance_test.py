"""Every shipped driver, on every default scenario its manifest claims, passes verification.

Small counts keep this quick; the timing itself is the main job's business, not a test's.
HTTP/2 (over TLS), h2c and HTTP/3 are checked for the drivers that claim them.
"""

from __future__ import annotations

import pytest

from clientlab import scenario
from clientlab.analysis.stats import StopRule
from clientlab.drivers import build, manifest
from clientlab.drivers.job import plan, required_capabilities
from clientlab.runner import CellRunner, RunOptions
from clientlab.store import Store

SMALL = {"count": 20, "size": 1024, "feeds": 100}
SIZES = {"download-memory": {"size": "2MB", "count": 2}, "download-file": {"size": "5MB", "count": 1}}

# every shipped driver, default or not: a driver kept out of the main run is still verified; a
# driver also on Bun and Deno, on each of their pinned lines too (node-fetch@bun1.3)
DRIVERS = [v for d in manifest.discover()[0] for v in (d, *d.also_on_lines())]
FILES = {f.name: f for f in scenario.discover()[0]}


# beyond the default scenarios: get-small over https (HTTP/1.1), and with keep-alive off
VARIANTS = {"https": {"scheme": "https"}, "no-keep-alive": {"keep_alive": False}}


def _scenario(name: str, http: str | None = None):
    f = FILES[name]
    params = SIZES.get(name) or {k: v for k, v in SMALL.items() if k in f.params and k != "size"}
    if http in VARIANTS:
        return f.expand(params).with_client(**VARIANTS[http])
    return f.expand(params).with_client(http=http)


def _cases(d: manifest.Driver) -> list[tuple[manifest.Driver, str, str | None]]:
    # a driver of HTTP/3 alone gets the default scenarios over HTTP/3 (its HTTP/1.1 ones: unsupported)
    own = None if "http1" in d.manifest.capabilities else "3"
    cases = [(d, name, own) for name in sorted(FILES) if FILES[name].raw.get("default", True)]
    versions = {"2": "http2", "h2c": "h2c", "3": "http3"}
    cases += [(d, "get-small", v) for v, needs in versions.items() if needs in d.manifest.capabilities and v != own]
    return cases + [(d, "get-small", v) for v in VARIANTS]


# a driver's cases one after another: its process, started for the first, serves them all
CASES = [case for d in DRIVERS for case in _cases(d)]


class _Runners:
    """One runner at a time, for the driver whose cases run: one driver process serves all its
    scenarios (as a JIT driver's does in a run: the protocol's jobs share no client state)."""

    def __init__(self, server, store: Store):  # noqa: ANN001 - the bench server fixture
        self.server, self.store = server, store
        self.driver: str | None = None
        self.runner: CellRunner | None = None

    def for_driver(self, driver: manifest.Driver) -> CellRunner:
        if self.driver != driver.id:
            self.close()
            options = RunOptions(warmup=0, stop=StopRule(min_trials=1, max_trials=1), placement="free",
                                 keep_every=True)
            self.runner = CellRunner(self.server, self.store, self.store.start_run({}, {}), options)
            self.driver = driver.id
        assert self.runner is not None
        return self.runner

    def close(self) -> None:
        if self.runner is not None:
            self.runner.close()
        self.driver = self.runner = None


@pytest.fixture(scope="module")
def runners(bench_server, tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("conformance") / "results.sqlite")
    held = _Runners(bench_server, store)
    yield held
    held.close()
    store.close()


def _installed(driver: manifest.Driver) -> None:
    """Fails unless the driver can run; a runtime line (set-up installs none) is built on first use."""
    if driver.variant is not None and build.missing(driver):
        build.build(driver)
    if (why := build.missing(driver)):
        pytest.fail(f"{driver.id} is not installed: {why} (run ./setup.sh)")


@pytest.mark.parametrize("driver,name,http", CASES,
                         ids=[f"{d.id}-{n}{'-' + h if h else ''}" for d, n, h in CASES])
def test_driver_passes_verification_on_what_it_claims(bench_server, runners, tmp_path, driver, name, http):
    _installed(driver)
    sc = _scenario(name, http)
    runner = runners.for_driver(driver)
    needed = required_capabilities(plan(sc, bench_server.endpoint, tmp_path, verify=True, tag="probe"))
    claimed = all(c in driver.manifest.capabilities for c in needed)
    result = runner.run_cell(driver, sc)
    if claimed:
        assert result.status == "ok", f"{driver.id} on {sc.name}: {result.status}: {result.reason}"
        assert result.versions, "hello carried no versions"
    else:
        assert result.status == "unsupported" and result.reason.startswith("manifest does not claim")


@pytest.mark.parametrize("driver", DRIVERS, ids=[d.id for d in DRIVERS])
def test_driver_runs_the_calibration_loop_on_one_kept_client(bench_server, store, driver):
    """crosscheck --bare's loop (docs/driver-protocol.md §5): rounds on a kept client, counted,
    timed by the driver's clock within the lab's own view, across a change of server port."""
    _installed(driver)
    from clientlab.drivers.protocol import DriverFault
    from clientlab.selfcheck.calibrate import BareLoop

    sc = _scenario("get-small", None if "http1" in driver.manifest.capabilities else "3")
    loop = BareLoop(driver, None)
    try:
        for _ in range(2):
            bench_server.rebind()  # as every timed trial does: the kept client meets a new port
            job = plan(sc, bench_server.endpoint, store.path.parent, verify=False, tag="bare").job
            try:
                got = loop.round(job, 60)
            except DriverFault as exc:
                pytest.fail(f"{driver.id}: {exc}")
            assert got.requests == 20 and 0 < got.wall_s
    finally:
        loop.close()
