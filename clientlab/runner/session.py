"""A measuring run's context, written once for run, experiment, crosscheck, calibration and
selfbench: the placement, the run stored as started and marked as it ended, SIGTERM taken as
Ctrl-C, and the runner that measures on a given server side."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from clientlab.drivers.build import Readiness
from clientlab.drivers.manifest import Driver
from clientlab.measuring import machine
from clientlab.runner.cell import CellGroup, CellResult, Events, SilentEvents
from clientlab.runner.cellrunner import CellRunner
from clientlab.runner.deadline import Deadline
from clientlab.runner.options import RunOptions
from clientlab.runner.placement import Placement
from clientlab.scenario import Scenario
from clientlab.servers.bench import BenchServer
from clientlab.store import Store

if TYPE_CHECKING:
    from pathlib import Path

    from clientlab.hosts.benchserver import ServerHost
    from clientlab.hosts.hostsfile import Host
    from clientlab.servers.side import ServerSide


@contextlib.contextmanager
def stop_on_sigterm() -> Iterator[None]:
    """SIGTERM ends a run like Ctrl-C: what was measured is kept and the network lab is taken down."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set a handler; a run in another thread is stopped by its owner
        return

    def interrupt(_sig: int, _frame: object) -> None:
        raise KeyboardInterrupt
    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def stored_run(store: Store, config: dict, placement: str | Placement) -> Iterator[tuple[int, Placement]]:
    """The placement (or the one of that name) applied to the lab, the one place it is applied;
    the run stored as started (with the machine and `config`), and marked complete, interrupted
    (Ctrl-C, SIGTERM) or failed when the block ends."""
    if isinstance(placement, str):
        placement = Placement.of(placement)
    placement.apply_to_lab()
    run_id = store.start_run(machine.describe(), {**config, "placement": placement.name})
    status = "failed"
    try:
        with stop_on_sigterm():
            yield run_id, placement
        status = "complete"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        store.finish_run(run_id, status)


@dataclass
class LabRun:
    """A stored run while it measures: where its sides run (the placement stored_run applied),
    how its cells run, who hears of it, and whether its drivers can run (read once a driver)."""

    store: Store
    run_id: int
    placement: Placement
    options: RunOptions
    events: Events
    server_host: tuple[Host, Path] | None = None   # (the host, the lab's known_hosts): --server-host
    readiness: Readiness = field(default_factory=Readiness)

    def runner(self, server: ServerSide) -> CellRunner:
        """A runner of this run's cells on `server` (a context manager: it stops kept processes)."""
        return CellRunner(server, self.store, self.run_id, self.options, self.events, self.placement.driver,
                          readiness=self.readiness)

    def bench_server(self) -> BenchServer | ServerHost:
        """The bench server on loopback, on the placement's server core; or, with a server host,
        there, its path stored with the run as its network."""
        if self.server_host is None:
            return BenchServer(cpu=self.placement.server)
        from clientlab.hosts.benchserver import ServerHost

        server = ServerHost(*self.server_host)
        self.store.update_config(self.run_id, net=server.describe(), server_host=self.server_host[0].name)
        return server


@contextlib.contextmanager
def lab_run(store: Store, config: dict, options: RunOptions, events: Events | None = None,
            server_host: tuple[Host, Path] | None = None, *, readiness: Readiness | None = None,
            placement: Placement | None = None) -> Iterator[LabRun]:
    """The run stored and its placement applied (stored_run; `placement`: this one rather than
    the options' by name), as a LabRun; `readiness`: the command's, which has read its drivers."""
    with stored_run(store, config, placement or options.placement) as (run_id, applied):
        yield LabRun(store, run_id, applied, options, events or SilentEvents(), server_host,
                     readiness or Readiness())


def loopback_config(kind: str, drivers: Sequence[Driver], scenarios: Sequence[Scenario]) -> dict:
    """The stored config of a run on loopback that is not a `clientlab run` (crosscheck, calibration)."""
    return {"kind": kind, "drivers": [d.id for d in drivers], "scenarios": [s.label for s in scenarios],
            "net": {"profile": "loopback"}}


def run_matrix(run: LabRun, drivers: list[Driver], scenarios: list[Scenario],
               after_cell: Callable[[CellResult], object] | None = None,
               network: Callable[[int | None], ServerSide] | None = None) -> list[CellResult]:
    """Every driver on every scenario (scenario by scenario, the drivers' trials interleaved), with
    one server side for the whole run, on the run's placement (applied when it was stored).
    `network(cpu)` opens the server side; default: the bench server on loopback."""
    results = []
    with (network(run.placement.server) if network else run.bench_server()) as server, \
            run.runner(server) as runner:
        deadline = Deadline.after(run.options.run_budget_s, runner.clock)
        for part in runner.run_in_turns([CellGroup(drivers, scenario) for scenario in scenarios], deadline):
            for result in part:
                results.append(result)
                if after_cell:
                    after_cell(result)
    return results
