"""The experiment file format: parts (what to run) and claims (what the article said)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from clientlab import paths
from clientlab.errors import LabInputError, describe_validation_error, read_named_toml

Value = int | float | str | bool


class Sweep(BaseModel):
    """One setting stepped through its values: `param:NAME` (a scenario parameter),
    `option:NAME` (a driver option), or a client setting (`http`, `concurrency`, `keep_alive`)."""

    model_config = ConfigDict(extra="forbid")

    over: str = Field(pattern=r"^(param:[a-z_]+|option:[a-z_0-9]+|http|concurrency|keep_alive)$")
    values: list[Value] = Field(min_length=1)
    quick: list[Value] | None = None     # the values of the --quick form (default: first and last)

    def values_for(self, quick: bool) -> list[Value]:
        if not quick:
            return self.values
        return self.quick if self.quick is not None else list(dict.fromkeys([self.values[0], self.values[-1]]))


class Part(BaseModel):
    """Drivers × scenarios on one network, with client settings, optionally swept over one setting."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    description: str = ""
    drivers: list[str] = Field(min_length=1)
    scenarios: list[str] = Field(min_length=1)
    params: dict[str, int | str] = {}
    quick_params: dict[str, int | str] = {}       # replaces `params` entries in the --quick form
    client: dict[str, Any] = {}                   # http, concurrency, keep_alive, options
    net: str = "loopback"
    sweep: Sweep | None = None
    variants: list[dict[str, Any]] = []           # client settings, each a set of cells (e.g. nodelay on / off)

    @model_validator(mode="after")
    def _one_kind_of_variation(self) -> "Part":
        if self.sweep and self.variants:
            raise ValueError("give either 'sweep' or 'variants', not both")
        return self


class Select(BaseModel):
    """Which cells of the run a claim reads."""

    model_config = ConfigDict(extra="forbid")

    part: str
    driver: str | None = None            # None: every driver of the part
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
    """

    model_config = ConfigDict(extra="forbid")

    says: str                            # the claim in the article's words, with its numbers
    check: Literal["faster", "similar", "grows", "falls", "flat", "sweet_spot"]
    metric: Literal["wall_s", "throughput", "peak_rss_kb", "cpu_s"] = "wall_s"
    a: Select
    b: Select | None = None
    ratio: float = Field(default=1.2, ge=1)
    tolerance: float = Field(default=0.15, gt=0, lt=10)

    @model_validator(mode="after")
    def _b_for_faster(self) -> "Claim":
        if (self.check == "faster") != (self.b is not None):
            raise ValueError("'faster' compares 'a' with 'b'; the other checks read 'a' only")
        return self


class Experiment(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    title: str
    seed: str                            # the article's file in ../shared/seeds (its number)
    article: str                         # what the article measured, in a sentence
    notes: list[str] = []                # what the lab cannot do as the article did, and why
    parts: list[Part] = Field(min_length=1)
    claims: list[Claim] = []

    @model_validator(mode="after")
    def _claims_name_parts(self) -> "Experiment":
        names = [p.name for p in self.parts]
        if len(set(names)) != len(names):
            raise ValueError(f"part names must be unique: {names}")
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


def discover(folder: Path | None = None) -> dict[str, Experiment]:
    folder = folder or experiments_dir()
    return {p.stem: load_file(p) for p in sorted(folder.glob("*.toml"))}


def get(names: list[str], folder: Path | None = None) -> list[Experiment]:
    known = discover(folder)
    if names == ["all"]:
        return list(known.values())
    unknown = [n for n in names if n not in known]
    if unknown:
        raise LabInputError(f"unknown experiment(s): {', '.join(unknown)} (known: {', '.join(known)}, or all)")
    return [known[n] for n in names]
