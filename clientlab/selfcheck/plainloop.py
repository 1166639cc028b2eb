"""Is the driver part of the answer? Each cell beside its library's own plain loop.

`crosscheck --bare` (calibrate.py) loops the driver's own request path, so the driver's code and
settings sit on both sides of its ratio. The reference a user would write is the library's own
plain loop: `plain.<ext>` in the driver's folder, a few lines in the library's documented idiom,
no lab code (docs/driver-protocol.md §9). `crosscheck --plain` runs it beside the cell: right
after each timed trial, a fresh process of the plain loop (as a user's program starts), pinned
to the driver's core, outside the cell's control group, makes the trial's requests, and the lab
divides the cell's time per request by the loop's, pair by pair.

The loop times itself (it is a reference, never a cell's figure); the lab checks its answer
against the bench server's own record of the round: every request the loop claims arrived, and
the bytes it says it read are the server's answers. Its CPU, page faults and wake-ups come from
the kernel's account of the whole process (wait4), less the same program's start-up and first
requests, read once per cell from runs of a tenth of the round's GETs, so that a round's mode of
a large answer (bodies on the heap, or mapped anew) can be told as the lab's trials' are. A run
that times nothing (COUNT 0) would leave in the round what a fresh process pays on its first
requests and the lab's warm process paid long before its trial: code and heap pages touched for
the first time (0.3-5 page faults a request on Ruby and LWP loops).

A round is watched as a timed trial is (noise.watched: the host probe on the core before and
after it, steal and other processes' CPU around it), and a disturbed round is run again at once,
after the probe's wait for a slow phase to pass, at most the run's `retries` times a cell.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clientlab import paths
from clientlab.analysis import stats
from clientlab.analysis.figures import mode_verdict, two_figures
from clientlab.drivers.job import plan
from clientlab.drivers.manifest import Driver
from clientlab.drivers.protocol import DriverFault, driver_env
from clientlab.measuring import affinity, hostprobe
from clientlab.measuring.noise import HostProbe, Noise, watched
from clientlab.runner import JIT_WARM_S, CellGroup, Deadline, Events, RunOptions, allocator, lab_run, loopback_config
from clientlab.scenario import Scenario
from clientlab.selfcheck.calibrate import NOT_DECIDED, OFF, WITHIN, BareRound, Calibration, Pair
from clientlab.store import Store, Trial

if TYPE_CHECKING:
    from pathlib import Path

    from clientlab.hosts.hostsfile import Host

SCENARIOS = ("get-small", "get-json-335k")
STARTUP_RUNS = 3            # runs whose median is a process's start-up and first GETs, taken from each round
STARTUP_SHARE = 10          # those runs make 1/STARTUP_SHARE of the round's GETs
ROUND_TIMEOUT_FLOOR_S = 30.0
STDERR_SHOWN = 400          # characters of a failed loop's stderr in its message
MOST_PAIRS = 20             # a cell the check paces stops undecided at this many pairs (no time budget)
MODE_TRIALS = 5             # pairs in each allocator mode: five pairs' min–max is a 94 % interval
# the fewest GETs a round (and the lab's trial beside it) makes where counts are fitted to the
# trial budget: a fresh loop's first requests pay its one-time work (httpx's first GET imports
# its backend: 37-82 ms against 3-4 ms a warm GET of 335 KB), which a round of 29 GETs counts
# as a fifth of its time and one of 400 as a few per cent (docs/measurement.md, "Plain rounds")
ROUND_MIN_REQUESTS = 400


def check_options(options: RunOptions) -> RunOptions:
    """The run's options for cells beside their plain loop (crosscheck --plain, truth): MODE_TRIALS
    pairs held in each allocator mode, each mode judged against the loop's in it needing a 90 %
    interval; and fitted counts of at least ROUND_MIN_REQUESTS, unless the options set their own
    floor (0: none, a test's least cell)."""
    floor = ROUND_MIN_REQUESTS if options.min_requests is None else options.min_requests
    return dataclasses.replace(options, mode_trials=MODE_TRIALS, min_requests=floor)


@dataclass(frozen=True)
class Usage:
    """The kernel's account of one finished process (wait4)."""

    cpu_s: float
    page_faults: int
    wakeups: int      # voluntary context switches: the times it slept and was woken

    def minus(self, other: Usage) -> Usage:
        return Usage(max(0.0, self.cpu_s - other.cpu_s), max(0, self.page_faults - other.page_faults),
                     max(0, self.wakeups - other.wakeups))


def plain_url(job: dict) -> str:
    """The one URL a plain loop can take from a job, or a DriverFault saying why the job is not a
    plain loop's: sequential GETs of one URL, nothing else asked of the client."""
    requests = job["requests"]
    if len(requests) != 1:
        raise DriverFault("no plain loop for this scenario: it asks for more than one kind of request")
    req = requests[0]
    extra = sorted(set(req) - {"method", "url", "repeat"})
    if req.get("method", "GET") != "GET" or extra or req.get("sink", "memory") != "memory":
        raise DriverFault("no plain loop for this scenario: a plain loop makes plain GETs "
                          f"(this one asks for {req.get('method')} {', '.join(extra)})".rstrip())
    if job["concurrency"] != 1 or job["cookies"] or job["accept_gzip"]:
        raise DriverFault("no plain loop for this scenario: a plain loop makes one request at a time, "
                          "without cookies or compression")
    if job["http"] not in ("1.1", "3"):
        raise DriverFault(f"no plain loop over HTTP version {job['http']}: plain loops speak HTTP/1.1 "
                          "over http, or HTTP/3 for a library of HTTP/3")
    return req["url"]


class PlainLoop:
    """Fresh processes of one driver's plain loop, pinned to the driver's core."""

    def __init__(self, driver: Driver, cpu: int | None, warmup_s: float):
        argv = driver.plain_argv
        if argv is None:
            raise DriverFault(f"{driver.id} has no plain loop (its manifest names no `plain`)")
        self.driver, self.argv, self.cpu, self.warmup_s = driver, argv, cpu, warmup_s
        # by allocator mode ("" none held): GETs of the start-up runs, their median cost
        self.startups: dict[str, tuple[int, Usage]] = {}

    def _args(self, job: dict, count: int) -> list[str]:
        url = plain_url(job)
        args = [url, str(count), "keep-alive" if job["keep_alive"] else "close", f"{self.warmup_s:g}"]
        if job["http"] == "3":
            if not job.get("tls_ca"):
                raise DriverFault("an HTTP/3 plain loop needs the lab's CA, and the job names none")
            args.append(job["tls_ca"])
        return args

    def start_up(self, job: dict, count: int, timeout_s: float, mode: str | None = None) -> tuple[int, Usage]:
        """The loop's process making a tenth of a round's GETs: its start-up and the first-touch
        cost of its first requests, the median of STARTUP_RUNS runs, and how many GETs they made;
        taken once per cell (and count, and allocator mode: a process held in a mode pays its own)."""
        first = count // STARTUP_SHARE
        known = self.startups.get(mode or "")
        if known is None or known[0] != first:
            runs = [self._run(self._args(job, first), timeout_s, mode)[1] for _ in range(STARTUP_RUNS)]
            known = self.startups[mode or ""] = first, Usage(
                stats.median([u.cpu_s for u in runs]), int(stats.median([float(u.page_faults) for u in runs])),
                int(stats.median([float(u.wakeups) for u in runs])))
        return known

    def round(self, job: dict, count: int, timeout_s: float, mode: str | None = None) -> tuple[dict[str, Any], Usage]:
        return self._run(self._args(job, count), timeout_s, mode)

    def _run(self, args: list[str], timeout_s: float, mode: str | None = None) -> tuple[dict[str, Any], Usage]:
        """One process of the loop to its end: its answer line, and the kernel's account of what it
        cost (wait4 on it: its CPU, page faults and voluntary switches, and nothing else's). `mode`:
        glibc's malloc held in that allocator mode by the tunables the lab's own process had."""
        argv = affinity.pinned([*self.argv, *args], self.cpu)
        env = driver_env(self.driver.env())
        if mode is not None:
            env = {**(os.environ if env is None else env), **allocator.env(mode)}
        try:
            proc = subprocess.Popen(argv, cwd=self.driver.folder, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    env=env, process_group=0)
        except OSError as exc:
            raise DriverFault(f"cannot start the plain loop {self.argv[0]}: {exc}") from exc
        affinity.pin_late(proc.pid, self.cpu)
        out, err = bytearray(), bytearray()
        readers = [threading.Thread(target=_drain, args=(stream, into), daemon=True)
                   for stream, into in ((proc.stdout, out), (proc.stderr, err))]
        for reader in readers:
            reader.start()
        timer = threading.Timer(timeout_s, _kill_group, (proc.pid,))
        timer.start()
        try:
            _, status, ru = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        for reader in readers:
            reader.join(timeout=5.0)  # a child it left running may hold the pipes open
        usage = Usage(ru.ru_utime + ru.ru_stime, ru.ru_minflt + ru.ru_majflt, ru.ru_nvcsw)
        if timer.finished.is_set() and proc.returncode == -signal.SIGKILL:
            raise DriverFault(f"the plain loop did not finish within {timeout_s:.0f} s")
        tail = err.decode(errors="replace").strip()[-STDERR_SHOWN:]
        if proc.returncode != 0:
            raise DriverFault(f"the plain loop exited {proc.returncode}" + (f": {tail}" if tail else ""))
        printed = out.decode(errors="replace").strip()
        try:
            answer = json.loads(printed) if printed and "\n" not in printed else None
        except json.JSONDecodeError:
            answer = None
        if not isinstance(answer, dict) or not all(
                isinstance(answer.get(k), (int, float)) for k in ("requests", "bytes", "seconds")):
            raise DriverFault('the plain loop must print one line {"requests": N, "bytes": B, "seconds": S}; '
                              f"it printed {printed[:200]!r}")
        return answer, usage


def _drain(stream: Any, into: bytearray) -> None:
    with stream:
        while chunk := stream.read(65536):
            into += chunk


def _kill_group(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)


class PlainBeside:
    """The runner's `beside`: a fresh plain-loop process per cell round, right after each timed
    trial, at the trial's request count, and one beside each of the cell's trials in an allocator
    mode, started in the same mode.

    `decide`: the check paces the cells (Beside.most_pairs): a cell that has its minimum of
    pairs stops once lab ÷ plain is decided (calibrate.decide: its CI wholly inside 1 ± 10 % or
    wholly outside), and an undecided one takes further turns, at most MOST_PAIRS, until the time
    budget ends them; `on_note` hears each decision with the count decided so far."""

    def __init__(self, cpu: int | None, jit_warm_s: float = JIT_WARM_S, probe: HostProbe | None = None,
                 retries: int = 0, decide: bool = False, on_note: Callable[[str], object] | None = None):
        self.cpu = cpu
        self.jit_warm_s = jit_warm_s
        self.probe = probe          # the runner's host probe on the driver's core (None: not pinned)
        self.retries = retries      # disturbed rounds run again, at most this many a cell
        self.most_pairs: int | None = MOST_PAIRS if decide else None
        self.on_note = on_note
        self.loops: dict[tuple[str, str], PlainLoop] = {}
        self.cells: dict[tuple[str, str], Calibration] = {}
        self.said: set[tuple[str, str, str]] = set()   # the modes whose held pairs' end was said
        self.scratch = paths.scratch_dir()

    def calibration(self, driver: str, scenario: str) -> Calibration:
        return self.cells.setdefault((driver, scenario), Calibration(driver, scenario, reference="plain"))

    def decided(self, driver: str, scenario: str) -> bool:
        """Whether the cell needs no more pairs: its ratio decided, or its loop failed (no pair
        to come)."""
        cal = self.calibration(driver, scenario)
        return cal.problem is not None or cal.decision != NOT_DECIDED

    def mode_decided(self, driver: str, scenario: str, mode: str) -> bool:
        """Whether the pairs held in an allocator mode need no more (the check paces the cells):
        the loop failed; the mode has MOST_PAIRS; the cell is not judged by its modes (they cost
        the same on both sides: figures.two_figures); or the mode's verdict (figures.mode_verdict:
        its held pairs, with the cell's own where every one had both sides in it) is decided.
        Said once a mode's extra pairs end, with how many it has."""
        cal = self.calibration(driver, scenario)
        held = cal.mode_pairs.get(mode, [])
        if self.most_pairs is None or cal.problem is not None:
            return True
        modes = cal.mode_figures()
        mine = next((m for m in modes if m.mode == mode), None)
        verdict = mode_verdict(cal.decision, mine) if mine else NOT_DECIDED
        why = ("at its most pairs" if len(held) >= self.most_pairs
               else None if len(modes) < 2 or mine is None
               else "one figure: the modes cost the same on both sides" if not two_figures(modes)
               else verdict if verdict != NOT_DECIDED else None)
        if why is not None and len(held) > MODE_TRIALS and self.on_note is not None \
                and (driver, scenario, mode) not in self.said:
            self.said.add((driver, scenario, mode))
            r = stats.summarize([p.ratio for p in held])
            self.on_note(f"  {driver} × {scenario}, {mode} mode: {why} after {len(held)} held pairs, lab ÷ plain "
                         f"{r.median:.2f} ({r.ci_low:.2f}–{r.ci_high:.2f}); its verdict {verdict}")
        return why is not None

    def after_trial(self, driver: Driver, scenario: Scenario, work: Scenario, server: Any, trial: Trial) -> None:
        cal = self.calibration(driver.id, scenario.label)
        cal.note = driver.plain_note(scenario.name)
        if cal.problem is not None or not trial.ok or not trial.wall_s:
            return
        try:
            loop = self._loop(driver, scenario)
            rnd = self._round(loop, work, server, max(ROUND_TIMEOUT_FLOOR_S, 10 * trial.wall_s) + loop.warmup_s,
                              cal)
        except DriverFault as exc:
            cal.problem = str(exc).splitlines()[0]
            return
        before = cal.decision
        cal.pairs.append(Pair(trial, rnd))
        if self.most_pairs is not None and before == NOT_DECIDED and cal.decision != NOT_DECIDED:
            self._say_decided(cal)

    def after_modes(self, driver: Driver, scenario: Scenario, work: Scenario, server: Any,
                    trials: list[Trial]) -> None:
        """A round of the loop, started in the same allocator mode, beside each of the cell's
        trials in one (runner/allocator.py): the loop's process then meets the mode the lab's
        process was held in, as a user's program in that mode would."""
        cal = self.calibration(driver.id, scenario.label)
        if cal.problem is not None:
            return
        for trial in trials:
            mode = allocator.mode_of(trial.kind)
            if mode is None or not trial.wall_s:
                continue
            try:
                loop = self._loop(driver, scenario)
                rnd = self._round(loop, work, server, max(ROUND_TIMEOUT_FLOOR_S, 10 * trial.wall_s) + loop.warmup_s,
                                  cal, mode)
            except DriverFault as exc:
                cal.problem = f"in the {mode} mode: {str(exc).splitlines()[0]}"
                return
            cal.mode_pairs.setdefault(mode, []).append(Pair(trial, rnd))

    def _say_decided(self, cal: Calibration) -> None:
        if self.on_note is None:
            return
        r = cal.ratio_summary
        assert r is not None
        tally = [c.decision for c in self.cells.values() if c.pairs]
        self.on_note(f"  {cal.driver} × {cal.scenario}: {cal.decision} after {len(cal.pairs)} pairs, lab ÷ plain "
                     f"{r.median:.2f} ({r.ci_low:.2f}–{r.ci_high:.2f}); decided {len(tally) - tally.count(NOT_DECIDED)} "
                     f"of {len(tally)} cells checked so far ({tally.count(WITHIN)} within, {tally.count(OFF)} off)")

    def _loop(self, driver: Driver, scenario: Scenario) -> PlainLoop:
        loop = self.loops.get((driver.id, scenario.label))
        if loop is None:
            warm = self.jit_warm_s if driver.manifest.warmup > 1 else 0.0
            loop = self.loops[(driver.id, scenario.label)] = PlainLoop(driver, self.cpu, warm)
        return loop

    def _round(self, loop: PlainLoop, work: Scenario, server: Any, timeout_s: float, cal: Calibration,
               mode: str | None = None) -> BareRound:
        planned = plan(work, server.endpoint, self.scratch, verify=False, tag=f"{os.getpid()}-plain")
        job = planned.job
        count = sum(int(r.get("repeat", 1)) for r in job["requests"])
        # a JIT runtime's warm-up costs more or less from run to run: taking it off says nothing
        jit = loop.warmup_s > 0
        startup = None if jit else loop.start_up(job, count, timeout_s, mode)
        while True:
            server.reset()
            (answer, usage), noise = watched(lambda: loop.round(job, count, timeout_s, mode), self.probe,
                                             hostprobe.WAIT_FAST_S)
            reason = _disturbed(noise, jit)
            if reason is None:
                break
            if len(cal.run_again) >= self.retries:
                cal.kept_disturbed.append(reason)
                break
            cal.run_again.append(reason)
        seen = server.counters()
        _check(answer, count, seen, warmed=jit)
        if startup is None:
            return BareRound(float(answer["seconds"]), count, None, None, None)
        first, before = startup
        # what the round's other GETs cost, scaled to the round's count (a BareRound's readings
        # are divided by it)
        own, share = usage.minus(before), count / (count - first)
        return BareRound(float(answer["seconds"]), count, own.cpu_s * share, round(own.page_faults * share),
                         round(own.wakeups * share))

    def keep(self, store: Store, run_id: int) -> None:
        """Each cell's check with its figures (`plain`), where the cell has figures."""
        for cell in store.cells(run_id):
            cal = self.cells.get((cell["driver"], cell["scenario"]))
            if cal is not None and cell["status"] == "ok":
                store.add_to_figures(cell["id"], plain=cal.to_figure())


def _disturbed(noise: Noise, jit: bool) -> str | None:
    """Why a round does not measure the loop alone, by a timed trial's rule, or None. A JIT loop's
    round is its warm-up (tens of seconds) and then its timed GETs (the last fraction of a
    second): steal and other processes' CPU over the whole would judge the warm-up, so only the
    probe right after it, which falls next to the timed GETs, judges that round."""
    if jit:
        noise = Noise(0.0, 0.0, noise.wall_s, None, noise.host_after)
    return noise.disturbed()


def _check(answer: dict[str, Any], count: int, seen: dict[str, Any], warmed: bool) -> None:
    """The loop's answer against what it was asked and what the server served it."""
    if answer["requests"] != count:
        raise DriverFault(f"the plain loop says {answer['requests']} requests of the {count} asked")
    if answer["seconds"] <= 0:
        raise DriverFault(f"the plain loop gave no time ({answer['seconds']} s)")
    served = int(seen.get("requests") or 0)
    if served < count or (not warmed and served != count):
        raise DriverFault(f"the plain loop says {count} requests; the server saw {served}")
    log = seen.get("log") or []
    sizes = {e.get("resp_body_bytes") for e in log if e.get("status") == 200}
    if len(sizes) == 1 and answer["bytes"] != count * (size := sizes.pop()):
        raise DriverFault(f"the plain loop says it read {answer['bytes']:,} bytes; the server sent "
                          f"{count} answers of {size:,} bytes")


def run(store: Store, drivers: list[Driver], scenarios: list[Scenario], options: RunOptions,
        events: Events | None = None, server_host: tuple[Host, Path] | None = None, *, decide: bool = False,
        on_note: Callable[[str], object] | None = None) -> tuple[int, list[Calibration]]:
    """Every driver on every scenario, each cell beside its library's plain loop; the stored run's
    id and one Calibration per cell (the pairs go into the run's record under `plain`). `decide`:
    the check paces the cells (PlainBeside), within the options' time budget if they give one."""
    with lab_run(store, loopback_config("plain", drivers, scenarios), options, events, server_host) as lab, \
            lab.bench_server() as bench, lab.runner(bench) as runner:
        run_id = lab.run_id
        beside = runner.beside = PlainBeside(lab.placement.driver, options.jit_warm_s or JIT_WARM_S,
                                             runner.trials.probe, options.retries, decide=decide, on_note=on_note)
        deadline = Deadline.after(options.run_budget_s, runner.clock)
        try:
            for result in runner.run_groups([CellGroup(drivers, s) for s in scenarios], deadline):
                beside.calibration(result.driver, result.scenario).lab = result
        finally:
            store.update_config(run_id, plain=[c.to_dict() for c in beside.cells.values()])
            beside.keep(store, run_id)
    return run_id, [beside.calibration(d.id, s.label) for s in scenarios for d in drivers]
