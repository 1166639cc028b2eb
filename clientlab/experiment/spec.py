"""The experiment file format: parts (what to run) and claims (what the article said)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from typing_extensions import TypedDict

from clientlab import paths
from clientlab.datafiles import Found, read_named_toml, scan_folder
from clientlab.drivers import runtimes
from clientlab.errors import LabInputError, describe_validation_error, quote
from clientlab.scenario import OptionValue

Value = int | float | str | bool


class ClientChanges(TypedDict, total=False):
    """Client settings a part changes (scenario.Client's fields; checked again when applied)."""

    __pydantic_config__ = ConfigDict(extra="forbid", allow_inf_nan=False)  # type: ignore[misc]

    scheme: Literal["http", "https"]
    http: Literal["1.1", "2", "h2c", "3"]
    concurrency: int
    keep_alive: bool
    cookies: bool
    accept_gzip: bool
    options: dict[str, OptionValue]


class Sweep(BaseModel):
    """One setting stepped through its values: `param:NAME` (a scenario parameter),
    `option:NAME` (a driver option), or a client setting (`http`, `concurrency`, `keep_alive`)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    over: str = Field(pattern=r"^(param:[a-z_]+|option:[a-z_0-9]+|http|concurrency|keep_alive)$")
    values: list[Value] = Field(min_length=1)
    quick: list[Value] | None = None     # the values of the --quick form (default: first and last)

    def values_for(self, quick: bool) -> list[Value]:
        if not quick:
            return self.values
        return self.quick if self.quick is not None else list(dict.fromkeys([self.values[0], self.values[-1]]))


class Part(BaseModel):
    """Drivers × scenarios on one network, with client settings, optionally swept over one setting."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    description: str = ""
    drivers: list[str] = Field(min_length=1)     # ids, or patterns such as "go-*" (every driver that matches)
    quick_drivers: list[str] | None = None        # the drivers of the --quick form (default: all of them)
    scenarios: list[str] = Field(min_length=1)
    quick_scenarios: list[str] | None = None      # the scenarios of the --quick form (default: all of them)
    params: dict[str, int | str] = {}
    quick_params: dict[str, int | str] = {}       # replaces `params` entries in the --quick form
    client: ClientChanges = {}                    # http, concurrency, keep_alive, options
    net: str = "loopback"
    sweep: Sweep | None = None
    variants: list[ClientChanges] = []            # client settings, each a set of cells (e.g. nodelay on / off)
    # runtime lines, e.g. ["node=20,22,24"]: each driver of that runtime once per line (node-fetch@node20)
    runtimes: list[str] = []
    # a new driver process for every trial, as a script run per request would (no cache survives)
    fresh_process: bool = False
    trials: int | None = Field(default=None, ge=1, le=200)   # timed trials per cell in the full form
    # untimed warm-up trials per cell (default: the run's); a transfer of hundreds of MB warms nothing
    warmup: int | None = Field(default=None, ge=0, le=20)

    @field_validator("runtimes")
    @classmethod
    def _pinned_lines(cls, specs: list[str]) -> list[str]:
        try:
            runtimes.parse(specs)
        except LabInputError as exc:
            raise ValueError(str(exc)) from None
        return specs

    @model_validator(mode="after")
    def _one_kind_of_variation(self) -> "Part":
        if self.sweep and self.variants:
            raise ValueError("give either 'sweep' or 'variants', not both")
        return self


class Select(BaseModel):
    """Which cells of the run a claim reads."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    part: str
    driver: str | None = None            # None: every driver of the part; a pattern ("go-net-http@go*") picks several
    scenario: str | None = None          # None: every scenario of the part
    value: Value | None = None           # a sweep value, or a variant's index
    http: str | None = None              # for sweeps crossed with an HTTP version


class Claim(BaseModel):
    """One claim of the article, and how the lab judges it.

    check:
      faster      a's metric is better than b's by at least `ratio`     (refuted: not better)
      similar     every selected cell within `tolerance` of the best     (refuted: spread wider)
      grows/falls the metric rises/falls from the sweep's first value to its last by `ratio`
      flat        the metric stays within `tolerance` across the sweep
      sweet_spot  the best value of the sweep is neither its first nor its last
      matches_plain  every selected cell within `tolerance` of its library's plain loop (lab ÷ plain;
                  the experiment runs with beside = "plain"): confirmed where the ratio's CI lies
                  inside 1 ± tolerance, refuted where it lies outside, else not decided
    With `each`, "faster" is judged per driver: confirmed only if every driver shows the effect.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    says: str                            # the claim in the article's words, with its numbers
    check: Literal["faster", "similar", "grows", "falls", "flat", "sweet_spot", "matches_plain"]
    # cpu_per_work: CPU (user+sys) per request, or per MB in a cell measured in bytes: comparable
    # between cells whose counts `trial_seconds` scaled apart, as cpu_s is not
    metric: Literal["wall_s", "throughput", "peak_rss_kb", "cpu_s", "cpu_per_work"] = "wall_s"
    a: Select
    b: Select | None = None
    ratio: float = Field(default=1.2, ge=1)
    tolerance: float = Field(default=0.15, gt=0, lt=10)
    # a claim about every client ("slows every client"): it holds only where it holds for each
    # driver, compared with itself, and the evidence lists each driver's figures
    each: bool = False

    @model_validator(mode="after")
    def _b_for_faster(self) -> "Claim":
        if (self.check == "faster") != (self.b is not None):
            raise ValueError("'faster' compares 'a' with 'b'; the other checks read 'a' only")
        return self


class Experiment(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str
    title: str
    seed: str                            # the article's file in ../shared/seeds (its number)
    article: str                         # what the article measured, in a sentence
    notes: list[str] = []                # what the lab cannot do as the article did, and why
    parts: list[Part] = Field(min_length=1)
    claims: list[Claim] = []
    # request counts scaled so that a trial lasts about this long (as `clientlab run --trial-seconds`);
    # None: the counts as the parts write them
    trial_seconds: float | None = Field(default=None, gt=0, le=60)
    # which cells take turns (`clientlab experiment --interleave` overrides): "run", every cell on a
    # network, so that a claim comparing two parts is not a comparison of two minutes of the host;
    # "scenario", the drivers of one workload, workloads one after another: for a survey that
    # compares no parts, with a driver process alive per cell of the workload, not per cell of
    # the network (hundreds, gigabytes, in clients-by-language). None: "run".
    interleave: Literal["scenario", "run"] | None = None
    # seconds for the whole experiment, full form and quick form (`clientlab experiment
    # --time-budget` overrides): once spent, cells stop at their minimum of trials, a disturbed
    # trial is kept (flagged) instead of run again, and no trial waits for a slow phase of the
    # host, as in `clientlab run`. Each network, and each workload of a survey, gets a share of
    # the time left by its number of cells. None: no budget (every cell runs its stop rule out).
    time_budget: float | None = Field(default=None, gt=0, le=86_400)
    quick_time_budget: float | None = Field(default=None, gt=0, le=86_400)
    # "plain": each cell beside its library's own plain loop, a fresh process after each timed
    # trial (crosscheck --plain), the ratio kept with the cell's figures for `matches_plain`
    beside: Literal["plain"] | None = None
    # false: a check of the lab itself, run by name, not by `experiment all` (whose findings are
    # the articles' and the users' questions, within its 45 minutes)
    in_all: bool = True

    def budget_for(self, quick: bool, given: float | None = None) -> float | None:
        """The time budget of a run of it: the one the user gave (0: no limit), else its own for
        the form it runs in."""
        if given is not None:
            return given
        return self.quick_time_budget if quick else self.time_budget

    @model_validator(mode="after")
    def _claims_name_parts(self) -> "Experiment":
        names = [p.name for p in self.parts]
        if len(set(names)) != len(names):
            raise ValueError(f"part names must be unique: {names}")
        if any(c.check == "matches_plain" for c in self.claims) and self.beside != "plain":
            raise ValueError("a 'matches_plain' claim reads each cell's plain loop: the experiment needs "
                             "beside = \"plain\"")
        for i, claim in enumerate(self.claims):
            for side in (claim.a, claim.b):
                if side is not None and side.part not in names:
                    raise ValueError(f"claims.{i}: no part named '{side.part}' (parts: {', '.join(names)})")
        return self


def experiments_dir() -> Path:
    return paths.ROOT / "experiments"


def load_file(path: Path) -> Experiment:
    raw = read_named_toml(path, "experiment")
    try:
        return Experiment.model_validate(raw)
    except ValidationError as exc:
        raise LabInputError(describe_validation_error(path, exc)) from exc


def scan(folder: Path | None = None) -> tuple[dict[str, Experiment], dict[str, str]]:
    """Every experiment file that validates, and for each one that does not, why (by name):
    a broken file is reported, not in the way of the others."""
    return scan_folder(folder or experiments_dir(), load_file)


def discover(folder: Path | None = None) -> Found[Experiment]:
    """The experiments that validate, by name, and why each of the others does not (scan() has
    both by name)."""
    known, broken = scan(folder)
    return Found(list(known.values()), list(broken.values()))


def get(names: list[str], folder: Path | None = None) -> list[Experiment]:
    """The named experiments (or all that validate); a named one that does not validate is an error."""
    known, broken = scan(folder)
    if names == ["all"]:
        return [e for e in known.values() if e.in_all]
    for n in names:
        if n in broken:
            raise LabInputError(broken[n])
    unknown = [n for n in names if n not in known]
    if unknown:
        raise LabInputError(f"unknown experiment(s): {', '.join(map(quote, unknown))} "
                            f"(known: {', '.join(known)}, or all)")
    return [known[n] for n in names]


def get_from(names: list[str], path: Path | None) -> list[Experiment]:
    """The named experiments from `path`: a folder of experiment files (default: experiments/), or
    one file, whose experiment is the only one there is (named, or `all`)."""
    if path is None or path.is_dir():
        return get(names, path)
    if not path.is_file():
        raise LabInputError(f"--experiment-path {path}: no such file or folder")
    experiment = load_file(path)
    unknown = [n for n in names if n not in ("all", experiment.name)]
    if unknown:
        raise LabInputError(f"unknown experiment(s): {', '.join(map(quote, unknown))} "
                            f"({path} holds {quote(experiment.name)} only)")
    return [experiment]


def source_of(name: str, path: Path | None) -> Path:
    """The file an experiment of get_from(…, path) was read from."""
    return path if path is not None and path.is_file() else (path or experiments_dir()) / f"{name}.toml"
