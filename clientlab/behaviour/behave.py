"""`clientlab behave`: every chosen driver on every behaviour case, each in a driver process of
its own, against the bench server's fault origins; the outcomes judged by behaviour.judge and
stored as cells of a run of kind "behave" (CellFigures.behaviours).

The lab's clock times the driver from go to done; the server's ledger tells what reached the
other origin. A driver that crashes, hangs before its go or breaks the protocol fails its cell
with the reason and its last stderr lines, as in a run; the matrix goes on.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Iterator
from typing import ContextManager
from dataclasses import dataclass, field

from clientlab.behaviour.cases import BehaviourCase, Observed, judge
from clientlab.drivers import build as builder
from clientlab.drivers import manifest
from clientlab.drivers.protocol import DriverFault, DriverProcess, DriverTimeout
from clientlab.measuring import cgroup
from clientlab.netlab import darkfirst, namespaces
from clientlab.errors import LabError
from clientlab.record import BehaviourOutcome, CellFigures
from clientlab.servers.bench import BenchServer
from clientlab.store import Store

START_S = 60.0    # a driver's hello and ready (a JVM's start on a busy host)
REPORT_S = 30.0   # its report after done
LATE_TRIES = 3    # a late deadline is tried again, up to this many tries in all (run_judged)
# the network lab's namespaces have fixed names: one cell at a time of this process holds them
# (behave --jobs), queued here so that a worker does not wait on its own run's lock as on another's.
# Its cells are never judged late, so none asks to be alone (Turns) while another waits here
_NETLAB_TURN = threading.Lock()
STOP_WAIT_S = 30.0  # a stopped parallel matrix waits at most this long for its workers' cells in flight


# the matrix's two columns a case: the library's defaults (the job's timeout_s set the way the
# driver sets it in every job), and the library's documented recommendation for production
# (the manifest's [behaviour.recommended]), where it has one
SETTINGS = ("defaults", "recommended")
NO_RECOMMENDATION = "no documented recommendation"


@dataclass
class BehaveCell:
    driver: str
    case: str
    status: str                       # ok (judged) / unsupported / not-installed / failed
    outcome: BehaviourOutcome
    versions: dict = field(default_factory=dict)
    setting: str = "defaults"         # one of SETTINGS
    # the recommendation a recommended cell ran with: setting, source, why (manifest.Recommended)
    recommended: dict | None = None
    # a recommended cell whose job is the defaults cell's (the recommendation is how the driver
    # sets timeout_s in every job): that cell's outcome, not run twice
    same_as_defaults: bool = False

    @property
    def elapsed_s(self) -> float | None:
        """Go to done by the lab's clock (None: done never came)."""
        return self.outcome.elapsed_s


def setting_params(setting: str, recommended: dict | None, same: bool) -> dict:
    """What a stored cell keeps of its setting, beside its case's params (none for defaults: a
    cell stored before the recommended column is a defaults cell)."""
    if setting == "defaults":
        return {}
    return {"setting": setting, **({"recommended": recommended} if recommended else {}),
            **({"same_as_defaults": True} if same else {})}


def fault_origin(server: BenchServer) -> tuple[str, int]:
    port = server.info.get("fault_a")
    if not port:
        raise LabError("the bench server has no fault origins (an older build): rebuild it with ./setup.sh")
    return server.endpoint.host, int(port)


def recommendation(driver: manifest.Driver) -> dict | None:
    """The driver's [behaviour.recommended] as a cell keeps it, or None."""
    rec = driver.manifest.behaviour.recommended
    return None if rec is None else {"setting": rec.setting, "source": rec.source, "why": rec.why}


def run_cell(driver: manifest.Driver, bc: BehaviourCase, server: BenchServer, setting: str = "defaults") -> BehaveCell:
    """One driver on one case with one of SETTINGS, in a driver process of its own."""
    rec = driver.manifest.behaviour.recommended if setting == "recommended" else None

    def cell(status: str, outcome: str, detail: str, versions: dict | None = None) -> BehaveCell:
        return BehaveCell(driver.id, bc.name, status, BehaviourOutcome(bc.name, outcome, detail), versions or {},
                          setting, recommendation(driver) if rec else None)

    if setting == "recommended" and rec is None:
        return cell("unsupported", "no-recommendation", NO_RECOMMENDATION)
    if reason := builder.missing(driver):
        return cell("not-installed", "not-installed", reason)
    claimed = set(driver.manifest.capabilities) | ({"http1"} if driver.manifest.http1 else set())
    if lacking := [c for c in bc.capabilities() if c not in claimed]:
        return cell("unsupported", "unsupported", f"the manifest does not claim {', '.join(lacking)}")
    if bc.case.check == "next-address":
        if reason := namespaces.why_unavailable():
            return cell("unsupported", "no-namespace", f"the case needs a network namespace: {reason}")
        with _NETLAB_TURN, darkfirst.DarkFirstHost(v6=bc.case.fault == "dark-first-v6") as dark:
            assert dark.server is not None
            _, port = fault_origin(dark.server)
            judged = _run_cell(driver, bc, dark.server, dark.host, port, [*dark.prefix, *driver.argv], None, cell,
                               recommended=rec is not None and rec.by == "option", dark=dark.dark_packets)
        return dataclasses.replace(judged, setting=setting, recommended=recommendation(driver) if rec else None)
    host, port = fault_origin(server)
    group, argv = None, driver.argv
    if bc.case.memory_cap_mib:
        group = cgroup.open_group("behave")
        if group is None:
            return cell("unsupported", "no-cap", "the lab cannot make a control group here (not root, or no memory "
                        "controller): a case that can eat the host's memory runs only under a cap")
        group.limit_memory(bc.case.memory_cap_mib << 20)
        argv = group.wrap(argv)
    server.faults(reset=True)
    try:
        judged = _run_cell(driver, bc, server, host, port, argv, group, cell,
                           recommended=rec is not None and rec.by == "option")
        return dataclasses.replace(judged, setting=setting, recommended=recommendation(driver) if rec else None)
    finally:
        if group is not None:
            group.remove()


def _run_cell(driver: manifest.Driver, bc: BehaviourCase, server: BenchServer, host: str, port: int,
              argv: list[str], group: cgroup.Group | None, cell: Callable[..., BehaveCell],
              recommended: bool, dark: Callable[[], int] | None = None) -> BehaveCell:
    def memory() -> dict:
        """The driver's peak and whether the cap ended it, where it ran under one; the SYNs it
        sent to a dark address, where the lab counts them."""
        seen = {} if group is None else {"peak_bytes": group.peak_bytes(), "capped": group.oom_kills() > 0}
        return seen if dark is None else {**seen, "dark_syns": dark()}

    proc = DriverProcess(argv, driver.folder, env=driver.env())
    versions: dict = {}
    try:
        versions = proc.hello(START_S).get("versions", {})
        proc.send({"type": "job", "job": bc.job(host, port, server.info, str(server.endpoint.ca_file), recommended)})
        ready = proc.receive({"ready"}, START_S)
        if ready["type"] == "unsupported":
            return cell("unsupported", "unsupported", str(ready.get("reason")), versions)
        if ready["type"] == "error":
            return cell("failed", "failed", f"the driver refused the job: {ready.get('message')}", versions)
        proc.send({"type": "go"})
        t0 = time.monotonic()
        try:
            done = proc.receive({"done"}, bc.limit_s)
        except DriverTimeout:
            proc.kill()
            seen = Observed(None, [], [], server.faults(reset=True)["entries"], **memory())
            return BehaveCell(driver.id, bc.name, "ok", judge(bc, seen), versions)
        elapsed = time.monotonic() - t0
        if done["type"] != "done":
            return cell("failed", "failed", f"the driver answered go with {done['type']}: "
                                            f"{done.get('message') or done.get('reason')}", versions)
        report = proc.receive({"report"}, REPORT_S)
        if report["type"] != "report":
            return cell("failed", "failed", f"the driver sent {report['type']} instead of its report", versions)
    except DriverFault as exc:
        if group is not None and group.oom_kills() > 0:  # the cap ended it: the case's finding, not a broken driver
            seen = Observed(None, [], [], server.faults(reset=True)["entries"], **memory())
            return BehaveCell(driver.id, bc.name, "ok", judge(bc, seen), versions)
        return cell("failed", "failed", str(exc), versions)
    finally:
        proc.close()
    seen = Observed(elapsed, list(report.get("responses") or []), list(report.get("errors") or []),
                    server.faults(reset=True)["entries"], **memory())
    outcome = dataclasses.replace(judge(bc, seen), elapsed_s=round(elapsed, 4))
    return BehaveCell(driver.id, bc.name, "ok", outcome, versions)


def run_judged(try_once: Callable[[], BehaveCell], timeout_s: float, tries_at_most: int = LATE_TRIES,
               alone: Callable[[], ContextManager[object]] = contextlib.nullcontext) -> BehaveCell:
    """A cell, its late deadline tried again (try_once runs the cell once): a busy host can make
    a try late, never early, so the earliest error of the tries is the client's. The detail lists
    every try's overshoot. `alone` holds the matrix's other cells off while the late cell is tried
    again (behave --jobs: the drivers beside it are the busy host)."""
    tries = [try_once()]
    if tries[-1].outcome.outcome == "late" and tries_at_most > 1:
        with alone():
            while tries[-1].outcome.outcome == "late" and len(tries) < tries_at_most:
                tries.append(try_once())
    if len(tries) == 1:
        return tries[0]
    judged = [t for t in tries if t.outcome.outcome in ("ok", "late") and t.elapsed_s is not None]
    best = min(judged, key=lambda t: t.elapsed_s or 0.0) if judged else tries[-1]
    overs = ", ".join(f"{round(((t.elapsed_s or 0.0) - timeout_s) * 1000):+d}" for t in judged)
    note = f" [{len(tries)} tries, the earliest counts: {overs} ms]"
    return dataclasses.replace(best, outcome=dataclasses.replace(best.outcome, detail=(best.outcome.detail or "") + note))


class Turns:
    """The parallel matrix's cells take turns: any number share the host (`shared`), a late
    deadline's tries again run with no other cell of the matrix beside them (`alone`), as they
    would one driver at a time. A cell waiting to be alone holds new cells back, so it is not
    starved; the cell that asks keeps its own share meanwhile, so it waits only for the others."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._running = 0
        self._alone = False
        self._waiting = 0

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        with self._cv:
            self._cv.wait_for(lambda: not self._alone and not self._waiting)
            self._running += 1
        try:
            yield
        finally:
            with self._cv:
                self._running -= 1
                self._cv.notify_all()

    @contextlib.contextmanager
    def alone(self) -> Iterator[None]:
        """Called from within `shared`: waits until this cell is the only one running."""
        with self._cv:
            self._waiting += 1
            self._cv.wait_for(lambda: not self._alone and self._running == 1)
            self._waiting -= 1
            self._alone = True
        try:
            yield
        finally:
            with self._cv:
                self._alone = False
                self._cv.notify_all()


def same_as_defaults(defaults: BehaveCell, driver: manifest.Driver) -> BehaveCell:
    """The recommended cell of a driver whose recommendation is how it sets timeout_s in every
    job: the defaults cell's job and outcome, said so."""
    note = "the same job as the defaults column: the recommendation is how the driver sets timeout_s in every job"
    outcome = dataclasses.replace(defaults.outcome, detail=f"{defaults.outcome.detail or ''} [{note}]".lstrip())
    return dataclasses.replace(defaults, outcome=outcome, setting="recommended", recommended=recommendation(driver),
                               same_as_defaults=True)


def run_matrix(drivers: list[manifest.Driver], cases: list[BehaviourCase], store: Store | None,
               config: dict, machine: dict, on_cell: Callable[[BehaveCell], None] = lambda _c: None,
               settings: tuple[str, ...] = SETTINGS, jobs: int = 1) -> tuple[int | None, list[BehaveCell]]:
    """Every driver on every case with each of `settings`, driver by driver; each cell stored as
    it completes. With `jobs` above 1, that many drivers at once, each worker with a bench server
    of its own (a ledger is a server's, so two drivers never share one); the cells come back in
    the drivers' order."""
    run_id = store.start_run(machine, {**config, "kind": "behave", "drivers": [d.id for d in drivers],
                                       "scenarios": [c.name for c in cases], "jobs": jobs}) if store else None
    by_driver: dict[str, list[BehaveCell]] = {d.id: [] for d in drivers}
    status = "failed"
    guard = threading.Lock()   # the store and the caller's progress are used by one worker at a time
    turns = Turns()
    stop = threading.Event()

    def record(result: BehaveCell, cell_id: int | None) -> None:
        with guard:
            if stop.is_set():
                return  # in flight when the matrix was stopped: its driver may have had the Ctrl-C too
            if store and cell_id is not None:
                store.finish_cell(cell_id, result.status,
                                  None if result.status == "ok" else result.outcome.detail,
                                  CellFigures(behaviours=(result.outcome,)), result.versions or None)
            by_driver[result.driver].append(result)
            on_cell(result)

    def start(driver: manifest.Driver, bc: BehaviourCase, params: dict) -> int | None:
        with guard:
            return store.start_cell(run_id, driver.id, bc.name, params, "behaviour") if store else None

    def one_driver(driver: manifest.Driver, server: BenchServer) -> None:
        rec = driver.manifest.behaviour.recommended
        for bc in cases:
            done: dict[str, BehaveCell] = {}
            for setting in settings:
                if stop.is_set():
                    return
                # a recommendation that is how the driver sets timeout_s anyway: the defaults' job
                same = setting == "recommended" and rec is not None and rec.by == "timeout_s" \
                    and "defaults" in done
                cell_id = start(driver, bc, {**bc.params(), **setting_params(setting, recommendation(driver), same)})
                if same:
                    result = same_as_defaults(done["defaults"], driver)
                else:
                    with turns.shared():
                        result = run_judged(lambda s=setting: run_cell(driver, bc, server, s), bc.case.timeout_s,
                                            alone=turns.alone)
                done[setting] = result
                record(result, cell_id)

    try:
        if jobs <= 1:
            with BenchServer() as server:
                fault_origin(server)
                for driver in drivers:
                    one_driver(driver, server)
        else:
            _in_parallel(drivers, jobs, one_driver, stop)
        status = "complete"  # as a run ends: `runs`, `store push` and the report read one word
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM where the command turns it into one
        status = "interrupted"
        raise
    finally:
        if store and run_id is not None:
            store.finish_run(run_id, status)
    return run_id, [c for d in by_driver.values() for c in d]


def _in_parallel(drivers: list[manifest.Driver], jobs: int,
                 one_driver: Callable[[manifest.Driver, BenchServer], None], stop: threading.Event) -> None:
    """`jobs` workers, each with its own bench server, take the drivers in order. A stop (Ctrl-C
    or SIGTERM in the main thread) lets each worker end its current cell, then raises; a worker's
    error (the bench server died) ends the others the same way and is raised here."""
    queue = list(reversed(drivers))
    taking = threading.Lock()
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            with BenchServer() as server:
                fault_origin(server)
                while not stop.is_set():
                    with taking:
                        if not queue:
                            return
                        driver = queue.pop()
                    one_driver(driver, server)
        except BaseException as exc:  # re-raised in the main thread, which owns the run's status
            errors.append(exc)
            stop.set()

    threads = [threading.Thread(target=worker, name=f"behave-{n}", daemon=True) for n in range(min(jobs, len(drivers)))]
    for t in threads:
        t.start()
    try:
        for t in threads:
            while t.is_alive():
                t.join(0.2)   # a short join keeps the main thread free for Ctrl-C and SIGTERM
    except KeyboardInterrupt:
        stop.set()
        until = time.monotonic() + STOP_WAIT_S
        for t in threads:
            t.join(max(0.0, until - time.monotonic()))
        raise
    if errors:
        raise errors[0]
