"""The driver processes of a run: started in a cgroup of their own, kept warm for a JIT driver's
next scenario, shared by its cells when the cells of a run take turns, stopped between trials.

A JIT runtime compiled the client's hot paths (connection pool, parser, I/O loop) during its
earlier cells; a new process per scenario would start that over and keep JIT drivers from a
steady state within a cell's few seconds. Every cell still verifies and warms up a kept process;
jobs share no client state (the protocol: a driver closes its client at the end of each job).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator

from clientlab.drivers.protocol import DriverFault, DriverProcess
from clientlab.measuring import cgroup
from clientlab.measuring.clock import SYSTEM, Clock
from clientlab.runner.cell import Cell, Running

HELLO_TIMEOUT_S = 60.0


class ProcessPool:
    def __init__(self, driver_cpu: int | None, clock: Clock = SYSTEM):
        self.driver_cpu, self.clock = driver_cpu, clock
        self.kept: dict[str, Running] = {}     # driver id -> its warm process between scenarios
        self.shared: dict[str, Running] = {}   # driver id -> the process its cells share (interleave = run)
        self._ended: dict[int, str] = {}       # pid of a shared process ended by a cell's failure -> why
        self._warm_work: dict[int, float] = {}  # pid -> seconds of warm-up trials it has run
        self._last_trial: dict[int, float] = {}  # pid -> when its last trial ended (the clock's time)

    def close(self) -> None:
        """Stop every process kept for later scenarios or shared by a run's cells."""
        for held in (self.kept, self.shared):
            while held:
                held.popitem()[1].stop()

    def keeps(self, cell: Cell) -> bool:
        """A JIT driver keeps its process across the scenarios of a run (with keep_every, any driver)."""
        options = cell.options
        return options.keep_warm and not options.fresh_process and (options.keep_every or cell.jit())

    def shares(self, cell: Cell) -> bool:
        """With the cells of a run interleaved, a JIT driver's cells share one process."""
        return cell.options.interleave == "run" and self.keeps(cell)

    def shared_pid(self, cell: Cell) -> int | None:
        """The process this cell will share with the run's other cells of its driver, if any."""
        shared = self.shared.get(cell.driver.id) if self.shares(cell) else None
        return shared.pid if shared is not None else None

    def spawn(self, cell: Cell, env: dict[str, str] | None = None, argv: list[str] | None = None) -> float:
        """Give the cell a driver process: the one its driver's cells share, the one kept warm
        from an earlier scenario, or a new one (always a new one with `env`, which it gets beside
        its driver's environment, or with `argv`, which starts it instead of the driver's own);
        its start-up time (as measured when it started). The cell's trials from here on say they
        ran in its next process (TrialLog.process)."""
        self.release(cell)
        cell.log.process += 1
        warm = self._warm_one(cell) if env is None and argv is None else None
        if warm is not None:
            cell.running, cell.versions, cell.kept_warm = warm, warm.versions, True
            return warm.startup_s
        group = cgroup.open_group("driver")
        t0 = time.perf_counter()
        argv = [*cell.server.driver_prefix, *(argv or cell.driver.argv)]
        if group is not None:
            argv = group.wrap(argv)
        base = cell.driver.env()
        if env:
            base = {**(os.environ if base is None else base), **env}
        proc = DriverProcess(argv, cell.driver.folder, cpu=self.driver_cpu, env=base)
        cell.running = Running(proc, group, {}, 0.0)   # stopped by release() if its hello fails
        cell.running.versions = cell.versions = proc.hello(HELLO_TIMEOUT_S)["versions"]
        cell.running.startup_s = time.perf_counter() - t0
        if self.shares(cell):
            self.shared[cell.driver.id] = cell.running
        return cell.running.startup_s

    def _warm_one(self, cell: Cell) -> Running | None:
        shared = self.shared.get(cell.driver.id) if self.shares(cell) else None
        if shared is not None and shared.alive():
            return shared
        kept = self.kept.pop(cell.driver.id, None)
        if kept is not None and kept.alive() and self.keeps(cell):
            if self.shares(cell):
                self.shared[cell.driver.id] = kept
            return kept
        if kept is not None:
            kept.stop()
        return None

    def release(self, cell: Cell, keep: bool = False) -> None:
        """End the cell's process, or (keep: a JIT driver that finished well) keep it for the next
        scenario. A process shared by a run's cells stays for the others unless this cell failed
        (its process crashed, hung or lied): then it ends, and so do their cells."""
        running, cell.running = cell.running, None
        if running is None:
            return
        if self.shared.get(cell.driver.id) is running:
            failed = cell.result is not None and cell.result.status == "failed"
            if not failed and running.alive():
                return
            del self.shared[cell.driver.id]
            self._ended[running.pid] = (f"{cell.scenario.label} failed: {cell.result.reason}"
                                        if failed and cell.result is not None else "it ended")
        elif keep and running.alive() and self.keeps(cell):
            self.kept[cell.driver.id] = running
            return
        running.stop()

    def check_alive(self, cell: Cell) -> None:
        """A fault, saying why, when the cell's process is gone."""
        assert cell.running is not None
        if cell.running.alive():
            return
        why = self._ended.get(cell.running.pid)
        raise DriverFault(f"the driver's process, shared with its other cells, was ended when {why}" if why
                          else f"the driver's process has exited (code {cell.running.proc.proc.returncode})")

    def trial_ended(self, cell: Cell) -> None:
        if cell.pid is not None:
            self._last_trial[cell.pid] = self.clock.monotonic()

    def idle_s(self, cell: Cell) -> float:
        """Seconds since the cell's process ended its last trial (stopped or waiting); 0 unknown."""
        last = self._last_trial.get(cell.pid) if cell.pid is not None else None
        return 0.0 if last is None else self.clock.monotonic() - last

    def add_warm_work(self, cell: Cell, seconds: float) -> None:
        if cell.pid is not None:
            self._warm_work[cell.pid] = self._warm_work.get(cell.pid, 0.0) + seconds

    def warm_work(self, cell: Cell) -> float:
        """Seconds of warm-up trials the cell's process has run, for all the cells it served."""
        return self._warm_work.get(cell.pid, 0.0) if cell.pid is not None else 0.0


@contextlib.contextmanager
def others_paused(cells: list[Cell], active: Cell, spare: int | None = None) -> Iterator[None]:
    """The other drivers of the scenario wait between their trials, but a runtime's own threads
    (a JIT compiling, a GC, timers) would still run on the driver's core during this cell's trial:
    they are stopped (SIGSTOP to their process groups) and continued afterwards. The active
    cell's process, and `spare` (the process it is about to share), run."""
    running = {active.pid, spare}
    with stopped(sorted({c.pid for c in cells if c is not active and c.pid is not None
                         and c.open and c.pid not in running})):
        yield


@contextlib.contextmanager
def stopped(groups: list[int]) -> Iterator[None]:
    """These process groups stopped (SIGSTOP) for the block, continued after."""
    done = []
    for pid in groups:
        try:
            os.killpg(pid, signal.SIGSTOP)
            done.append(pid)
        except OSError:
            pass
    try:
        yield
    finally:
        for pid in done:
            try:
                os.killpg(pid, signal.SIGCONT)
            except OSError:
                pass
