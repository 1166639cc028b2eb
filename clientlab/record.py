"""A cell's record, typed: the one contract between measuring, the store, diagnosis, output,
report and export.

The store keeps every record as JSON text (cells.figures, runs.config). Each record here reads
that JSON with `from_json` and writes it back with `to_json`:

- **tolerant on read**: a key an older store lacks takes the field's default (None: not
  measured then); a key this code does not know is kept in `extra`; a field renamed since is
  read under its old name too (a field's `old` names);
- **the same on write**: `to_json` writes the keys the JSON had, in its order, each under its
  current name, the unknown ones included, and a field only when it was read, set since or
  built here. A store read and written again is unchanged, and the exports (JSON, CSV) and the
  report, which write records with `to_json`, show what they showed when they read dicts.

A record built by the lab (`figures.cell_figures`) writes every field it has, in the order the
fields are declared, except those marked `omit_default` while they have their default (a
profile, a plain loop, findings: a cell without one writes no key for it, as before they existed).

This module imports nothing of the lab's: measuring, the store's readers and every consumer
import it, never the other way round.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar

R = TypeVar("R", bound="Record")

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def key(default: Any = None, *, old: Iterable[str] = (), load: Callable[[Any], Any] | None = None,
        omit_default: bool = False) -> Any:
    """A record's field that is a key of its JSON: `old` names it was stored under before,
    `load` turns its JSON value (never None) into the field's value (records and tuples are
    written back as JSON has them), and
    `omit_default` leaves it out of a record built here while it has its default. A default of
    `{}` gives each record an empty dict of its own."""
    meta = {"json": True, "old": tuple(old), "load": load, "omit_default": omit_default}
    if isinstance(default, dict) and not default:
        return field(default_factory=dict, metadata=meta)
    if isinstance(default, (list, dict, set)):
        raise TypeError("a record's default must be immutable (a tuple, None, a number, a record) or {}")
    return field(default=default, metadata=meta)


def _default(f: dataclasses.Field) -> Any:
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


def _keyed(cls: type) -> tuple[dataclasses.Field, ...]:
    return tuple(f for f in dataclasses.fields(cls) if f.metadata.get("json"))


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, (tuple, list, dict, Mapping)) and not value)


def _plain(value: Any) -> Any:
    """A value as JSON has it: tuples as lists, mappings as dicts, records as their JSON."""
    if isinstance(value, Record):
        return value.to_json()
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


@dataclass(frozen=True, slots=True)
class Record:
    """What every record shares: reading and writing its JSON (see the module's docstring).

    Subclasses are frozen dataclasses whose JSON keys are fields made with `key()`; `extra` holds
    the keys this code does not know, as read, and `present` the keys as read, in their order
    (None for a record built here)."""

    extra: Mapping[str, Any] = field(default_factory=dict, kw_only=True, hash=False, repr=False)
    present: tuple[str, ...] | None = field(default=None, kw_only=True, compare=False, hash=False, repr=False)

    @classmethod
    def from_json(cls: type[R], d: Mapping[str, Any] | None) -> R:
        """The record from its stored JSON (a dict); None or a non-object reads as the empty one."""
        if isinstance(d, cls):
            return d
        d = d if isinstance(d, Mapping) else {}
        values: dict[str, Any] = {}
        names: dict[str, str] = {}  # a JSON key as read -> the field's name
        for f in _keyed(cls):
            for name in (f.name, *f.metadata["old"]):
                if name in d:
                    raw, load = d[name], f.metadata["load"]
                    values[f.name] = load(raw) if load is not None and raw is not None else raw
                    names[name] = f.name
                    break
        present = tuple(dict.fromkeys(names.get(k, k) for k in d))
        extra = {k: v for k, v in d.items() if k not in names}
        return cls(**values, extra=extra, present=present)  # type: ignore[call-arg]

    def to_json(self) -> dict[str, Any]:
        """The record as JSON: the keys it was read with, in their order; then what was set
        since (a read record) or every field not left out at its default (a record built here)."""
        keyed = {f.name: f for f in _keyed(type(self))}
        out: dict[str, Any] = {}

        def put(name: str) -> None:
            out[name] = _plain(getattr(self, name))

        if self.present is None:
            for name, f in keyed.items():
                if not (f.metadata["omit_default"] and getattr(self, name) == _default(f)):
                    put(name)
        else:
            for name in self.present:
                if name in keyed:
                    put(name)
                elif name in self.extra:
                    out[name] = _plain(self.extra[name])
            for name, f in keyed.items():
                if name not in out and getattr(self, name) != _default(f) and not _empty(getattr(self, name)):
                    put(name)
        for name, value in self.extra.items():
            out.setdefault(name, _plain(value))
        return out

    def with_(self: R, **changes: Any) -> R:
        """A copy with `changes` (fields), written by to_json at their place or after the rest."""
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]


def _records(cls: type[R]) -> Callable[[Any], tuple[R, ...]]:
    return lambda items: tuple(cls.from_json(i) for i in items) if isinstance(items, list) else ()


# -- the figures' parts -------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class WallStats(Record):
    """The statistics of the timed trials' wall times, in seconds (clientlab/analysis/stats.py)."""

    median: float | None = key()
    mean: float | None = key()
    stddev: float | None = key()
    mad: float | None = key()
    min: float | None = key()
    max: float | None = key()
    ci_low: float | None = key()       # the median's distribution-free confidence interval
    ci_high: float | None = key()
    ci_confidence: float | None = key()  # its actual coverage (order statistics: at least 0.9 asked)


@dataclass(frozen=True, slots=True)
class Mode(Record):
    """One group of a cell's trials that agree among themselves, where the trials fell into two:
    its throughput (the cell's unit) and how many trials it holds. `label` names what sets it
    apart ("heap", "fresh pages", "asleep for the answer") and `cause` says why, where the lab
    knows (the large-body modes, docs/measurement.md). An allocator mode, a property of a
    process, also counts the cell's own processes in it (`processes` of `processes_of`: a
    process whose trials changed mode counts in neither; None where the trials did not say which
    process ran them)."""

    throughput: float | None = key()
    trials: int = key(0)
    label: str | None = key(omit_default=True)
    cause: str | None = key(omit_default=True)
    processes: int | None = key(omit_default=True)
    processes_of: int | None = key(omit_default=True)


LAYERS = ("library", "runtime", "tls", "compression", "memory", "kernel", "harness", "unattributed")
"""The layers a cell's CPU profile is attributed to, in the order they are shown."""


@dataclass(frozen=True, slots=True)
class LayerShare(Record):
    """One layer of a cell's CPU profile: its CPU in µs a request and its share of the samples."""

    layer: str = key("")             # one of LAYERS
    us_per_request: float | None = key()
    share: float | None = key()       # 0..1 of the profile's samples


@dataclass(frozen=True, slots=True)
class Layers(Record):
    """Where a cell's CPU went, by layer, from a profile of the client: which profiler, how many
    samples, what profiling cost (its overhead on the cell's time, None where not measured)."""

    profiler: str = key("")
    samples: int = key(0)
    overhead: float | None = key()
    shares: tuple[LayerShare, ...] = key((), load=_records(LayerShare))

    def share_of(self, layer: str) -> LayerShare | None:
        return next((s for s in self.shares if s.layer == layer), None)


@dataclass(frozen=True, slots=True)
class PlainMode(Record):
    """The cell and its plain loop in one allocator mode (docs/measurement.md, "Two modes of a
    large answer"): the lab's process and the loop's each started with glibc's malloc held in the
    mode by the same tunables; both sides' seconds a request, lab ÷ plain pair by pair with its CI,
    and the verdict as PlainCheck.decision has it."""

    mode: str = key("")
    lab_s_per_request: float | None = key()
    plain_s_per_request: float | None = key()
    ratio: float | None = key()
    ratio_ci_low: float | None = key()
    ratio_ci_high: float | None = key()
    pairs: int = key(0)
    decision: str | None = key()
    # of the check's own pairs (not held in a mode): how many of the lab's trials and of the loop's
    # rounds (each a fresh process) fell into this mode, of how many could be told
    lab_own: int | None = key(omit_default=True)
    lab_own_of: int | None = key(omit_default=True)
    plain_own: int | None = key(omit_default=True)
    plain_own_of: int | None = key(omit_default=True)
    # the same of the lab's processes (its pairs' trials grouped by the process that ran them; a
    # process whose trials changed mode counts in neither); None where the trials did not say
    lab_processes: int | None = key(omit_default=True)
    lab_processes_of: int | None = key(omit_default=True)
    # each side's seconds a request, pair by pair in this mode: what tells whether the two modes
    # cost the same within their spread (stats.same_within_spread)
    lab_samples: tuple[float, ...] = key((), load=tuple, omit_default=True)
    plain_samples: tuple[float, ...] = key((), load=tuple, omit_default=True)


@dataclass(frozen=True, slots=True)
class PlainCheck(Record):
    """The cell against the library's plain loop (docs/driver-protocol.md §9): lab ÷ plain, the
    median of the pairs' ratios of time per request and its confidence interval, both sides'
    seconds a request, how many pairs (and how many were compared: pairs whose sides were in two
    modes of a large answer are left out when enough were in one), what the sides did
    differently, and why there is no ratio (`problem`: no plain loop, a loop that failed or lied).
    `reference` is "plain", or "bare" for the driver's own request path in a loop (§5)."""

    reference: str = key("plain")
    problem: str | None = key()
    ratio: float | None = key()
    ratio_ci_low: float | None = key()
    ratio_ci_high: float | None = key()
    lab_s_per_request: float | None = key()
    plain_s_per_request: float | None = key()
    pairs: int = key(0)
    compared: int = key(0)
    differences: tuple[str, ...] = key((), load=tuple)
    run_id: int | None = key(omit_default=True)
    # "within" (the ratio's CI inside 1 ± 10 % at 90 % coverage or more), "off" (outside it) or
    # "not decided"; absent in runs stored before the check decided its own pairs
    decision: str | None = key(omit_default=True)
    ratio_ci_confidence: float | None = key(omit_default=True)
    # the manifest's known cause of a gap to the plain loop (docs/driver-protocol.md §9), with its
    # evidence: shown beside the ratio, never instead of it
    note: str | None = key(omit_default=True)
    # a large answer's two allocator modes, each side held in each by the same tunables
    modes: tuple[PlainMode, ...] = key((), load=_records(PlainMode), omit_default=True)
    # each side's spread: half its median's CI over the compared pairs, relative to the median
    lab_precision: float | None = key(omit_default=True)
    plain_precision: float | None = key(omit_default=True)


@dataclass(frozen=True, slots=True)
class Finding(Record):
    """What the diagnosis says of a cell (clientlab/analysis/diagnose.py): a rule's id, how much it
    matters ("warn": costs time or memory; "info": worth knowing), and its title, evidence and fix."""

    rule: str = key("")
    severity: str = key("info")
    title: str = key("")
    evidence: str = key("")
    fix: str = key("")

    def to_dict(self) -> dict[str, Any]:
        return self.to_json()


@dataclass(frozen=True, slots=True)
class BehaviourOutcome(Record):
    """One behaviour check of a cell, where a behaviour matrix recorded one: which behaviour
    (e.g. "redirect-cross-host"), what the client did ("ok", "differs", "unsupported", …) and
    what shows it. The extension point for the matrix: CellFigures.behaviours holds these."""

    behaviour: str = key("")
    outcome: str = key("")
    detail: str | None = key(omit_default=True)
    elapsed_s: float | None = key(omit_default=True)  # go to done by the lab's clock, where done came
    peak_bytes: int | None = key(omit_default=True)   # the driver's peak memory, where the case capped it


@dataclass(frozen=True, slots=True)
class ServerSummary(Record):
    """What the bench server saw in a cell's median trial (figures.server_summary): counts of
    connections, requests, TLS handshakes and versions, how requests arrived, and the optional
    parts (the Alt-Svc offer, the connection cap, the lab DNS, the cycle times)."""

    connections: int = key(0)
    requests: int = key(0)
    tls: Mapping[str, int] = key({})        # full / resumed / early_data handshakes
    versions: Mapping[str, int] = key({})   # "HTTP/1.1" -> requests
    bytes_in: int = key(0)
    bytes_out: int = key(0)
    requests_per_conn: Mapping[str, float] = key({})   # min / median / max
    carrying_connections: int = key(0)
    statuses: Mapping[str, int] = key({})
    resp_body_bytes: int = key(0)
    req_body_bytes: int = key(0)
    multi_read_requests: int = key(0)
    stalled_requests: int = key(0)
    max_read_gap_ms: float = key(0.0)
    stall_gap_ms_median: float = key(0.0)
    expect_continue: int = key(0)
    expect_stalled: int = key(0)
    gzip: int = key(0)
    idle_connections: int = key(0)
    kept_open: int = key(0)
    alt_svc: str | None = key(omit_default=True)
    cap: Mapping[str, Any] | None = key(omit_default=True)   # limit, peak_open, waited, wait_ms, idle_closed
    dns: Mapping[str, Any] | None = key(omit_default=True)   # queries, by_type, names
    cycle_ms: Mapping[str, float] | None = key(omit_default=True)  # p50 / p90 / p99 / max
    cpu_s: float | None = key(omit_default=True)  # the server's own CPU in the trial
    port: int | None = key(omit_default=True)     # the trial's server port (a fresh one per trial)

    @property
    def quic(self) -> bool:
        """The requests came over HTTP/3."""
        return bool(self.versions.get("HTTP/3.0"))

    @property
    def handshakes(self) -> int:
        return self.tls.get("full", 0) + self.tls.get("resumed", 0)


# -- a cell's figures ---------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class CellFigures(Record):
    """A measured cell's figures: what figures.cell_figures computes from its timed trials, what
    the runner notes on the way (runner/cell.py), and what later work adds (findings, a CPU
    profile's layers, the plain-loop check, behaviour outcomes)."""

    throughput: float | None = key()  # req/s or MB/s (unit) at the median wall time
    unit: str = key("")
    requests: int | None = key()        # requests of a trial (the lab's count, scaled to the budget)
    work_bytes: float | None = key()    # body bytes a trial moved, as the server counted them (median)
    wall_s: WallStats = key(WallStats(), load=WallStats.from_json)
    precision: float | None = key()     # half the median's CI, relative to it
    relative_spread: float | None = key()
    noisy: bool = key(False)
    outliers: tuple[int, ...] = key((), load=tuple)   # the outlying trials' indices (MAD z-score)
    modes: tuple[Mode, ...] | None = key(load=_records(Mode))   # two modes, fastest first; None: one
    trials: int = key(0)
    cpu_user_s: float | None = key()
    cpu_precision: float | None = key()  # the CPU's own repeatability (user + system)
    cpu_sys_s: float | None = key()
    page_faults: float | None = key()
    peak_rss_kb: int | None = key()
    setup_s: float | None = key()
    startup_s: float | None = key()
    server: ServerSummary | None = key(load=ServerSummary.from_json)
    # noted by the runner
    elapsed_s: float | None = key(omit_default=True)
    scenario_requests: int | None = key(omit_default=True)
    disturbed_trials: int | None = key(omit_default=True)
    disturbed_kept: int | None = key(omit_default=True)
    slow_host_skips: int | None = key(omit_default=True)
    processes: int | None = key(omit_default=True)
    budget_stopped: bool | None = key(omit_default=True)
    measured_by: str | None = key(omit_default=True)
    kept_warm: bool | None = key(omit_default=True)
    notes: tuple[str, ...] | None = key(omit_default=True, load=tuple)
    # added by later work
    findings: tuple[Finding, ...] = key((), load=_records(Finding), omit_default=True)
    layers: Layers | None = key(load=Layers.from_json, omit_default=True)
    plain: PlainCheck | None = key(load=PlainCheck.from_json, omit_default=True)
    behaviours: tuple[BehaviourOutcome, ...] = key((), load=_records(BehaviourOutcome), omit_default=True)

    @property
    def in_bytes(self) -> bool:
        """The cell's figure is MB/s (its work is bytes), not req/s."""
        return self.unit == "MB/s"

    @property
    def cpu_s(self) -> float | None:
        """User + system CPU of a trial (the timed trials' medians, each taken apart)."""
        if self.cpu_user_s is None or self.cpu_sys_s is None:
            return None
        return self.cpu_user_s + self.cpu_sys_s

    @property
    def cpu_per_request_s(self) -> float | None:
        cpu = self.cpu_s
        return cpu / self.requests if cpu is not None and self.requests else None

    @property
    def cpu_us_per_request(self) -> float | None:
        per = self.cpu_per_request_s
        return per * 1e6 if per is not None else None

    @property
    def cpu_per_mb_s(self) -> float | None:
        """CPU seconds a MB (10⁶ bytes) of body."""
        cpu = self.cpu_s
        return cpu / (self.work_bytes / 1e6) if cpu is not None and self.work_bytes else None

    @property
    def work_units(self) -> float | None:
        """What a trial did in the throughput's unit: MB for a cell in MB/s, else requests."""
        if self.in_bytes:
            return self.work_bytes / 1e6 if self.work_bytes else None
        return self.requests or None

    @property
    def cpu_per_work(self) -> float | None:
        """CPU seconds a unit of work: a MB for a cell in MB/s, else a request."""
        cpu, units = self.cpu_s, self.work_units
        return cpu / units if cpu is not None and units else None

    @property
    def throughput_interval(self) -> tuple[float, float] | None:
        """The throughput at the ends of the median wall time's confidence interval (low, high)."""
        w = self.wall_s
        if self.throughput is None or w.median is None or w.ci_low is None or w.ci_high is None:
            return None
        work = self.throughput * w.median
        return work / w.ci_high, (work / w.ci_low if w.ci_low > 0 else self.throughput)

    @property
    def two_modes(self) -> bool:
        return bool(self.modes)

    @property
    def cut_by_budget(self) -> bool:
        return bool(self.budget_stopped)

    @property
    def server_seen(self) -> ServerSummary:
        """The server's summary, or an empty one where the cell has none."""
        return self.server if self.server is not None else ServerSummary()


# -- a cell and a run -----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Cell(Record):
    """One driver × scenario of a run, as the store keeps it. `scenario` is the label as stored
    ("get-small[http=2]"); `column` is not stored: the report names a column by the label and
    the parameters that tell repeated labels apart (report/data.py)."""

    id: int | None = key()
    run_id: int | None = key()
    driver: str = key("")
    scenario: str = key("")
    params: Mapping[str, Any] = key({})
    status: str = key("")             # ok / failed / unsupported / not-installed / running
    reason: str | None = key()
    metric: str = key("")
    figures: CellFigures | None = key(load=CellFigures.from_json)
    versions: Mapping[str, str] | None = key()
    started_at: float | None = key()
    finished_at: float | None = key()
    departures: tuple[str, ...] = key((), load=tuple)
    fingerprint: str | None = key()
    column: str | None = field(default=None, compare=False, hash=False)

    @property
    def measured(self) -> bool:
        """The cell has figures to show: it ran to the end (ok) and they were stored."""
        return self.status == "ok" and self.figures is not None

    @property
    def client(self) -> Mapping[str, Any]:
        """The client settings of its scenario (keep_alive, concurrency, http, options …)."""
        return self.params.get("client") or _EMPTY

    @property
    def label(self) -> str:
        """The column it is shown in: the report's where it set one, else the scenario label."""
        return self.column or self.scenario


@dataclass(frozen=True, slots=True)
class FleetBatch(Record):
    """Which fleet run, batch and host measured a run (`clientlab run --on`). A batch is the fleet's
    unit of work, a job what a driver is given; stores made before they had two words keep the
    batch's numbers as `job` and `jobs`."""

    uid: str | None = key()
    batch: int | None = key(old=("job",))
    batches: int | None = key(old=("jobs",))
    host: str | None = key()
    baseline: str | None = key()
    errors: tuple[str, ...] | None = key(load=tuple, omit_default=True)


@dataclass(frozen=True, slots=True)
class RunConfig(Record):
    """What a run stores about itself. Written by `clientlab run` (cli/run.py), experiments
    (experiment/execute.py), crosscheck and calibration (runner/session.py loopback_config),
    selfbench and the fleet's failed batches (fleet/launch.py, fleet/experiments.py), each with its
    own keys, all of them here; stored_run adds the placement, and Store.update_config what is
    known once the run is under way (the measured network, the server host, an experiment's
    networks, nginx's version and its writes, the calibration loops, the fleet batch that ran it).
    Every key is optional; a record built here writes only what was given."""

    kind: str | None = key(omit_default=True)          # crosscheck / calibration / selfbench / …; None: a run
    command: str | None = key(omit_default=True)       # the command line that made the run, as typed
    experiment: str | None = key(omit_default=True)
    quick: bool | None = key(omit_default=True)
    seed: int | None = key(omit_default=True)
    drivers: tuple[str, ...] | None = key(load=tuple, omit_default=True)
    scenarios: tuple[str, ...] | None = key(load=tuple, omit_default=True)
    params: Mapping[str, Any] | None = key(omit_default=True)
    client: Mapping[str, Any] | None = key(omit_default=True)      # each scenario's client settings, by label
    server: Mapping[str, Any] | None = key(omit_default=True)      # each scenario's server shape, by label
    warmup: int | None = key(omit_default=True)
    fresh_process: bool | None = key(omit_default=True)
    stop: Mapping[str, Any] | None = key(omit_default=True)
    net: Mapping[str, Any] | str | None = key(omit_default=True)   # a profile's description, or its name alone
    lab_version: str | None = key(omit_default=True)
    placement: str | None = key(omit_default=True)
    trial_seconds: float | None = key(omit_default=True)
    retries: int | None = key(omit_default=True)
    interleave: str | None = key(omit_default=True)
    time_budget_s: float | None = key(omit_default=True)
    forks: int | None = key(omit_default=True)
    jobs: int | None = key(omit_default=True)          # behave: drivers at once, each with its own bench server
    runtimes: tuple[str, ...] | None = key(load=tuple, omit_default=True)
    cells_planned: int | None = key(omit_default=True)
    server_host: str | None = key(omit_default=True)
    networks: Mapping[str, Any] | None = key(omit_default=True)   # an experiment's networks, described
    profile: bool | None = key(omit_default=True)      # run --profile: cells profiled after their timed trials
    nginx: str | None = key(omit_default=True)         # crosscheck: the nginx version it ran against
    writes: tuple[Mapping[str, Any], ...] | None = key(load=tuple, omit_default=True)  # crosscheck: how each server wrote
    calibration: tuple[Mapping[str, Any], ...] | None = key(load=tuple, omit_default=True)  # crosscheck --bare/--plain
    fleet: FleetBatch | None = key(load=FleetBatch.from_json, omit_default=True)

    @property
    def net_profile(self) -> str | None:
        """The network profile's name (a run that stored only the name included)."""
        return self.net.get("profile") if isinstance(self.net, Mapping) else self.net

    @property
    def fleet_host(self) -> str | None:
        return self.fleet.host if self.fleet is not None else None
