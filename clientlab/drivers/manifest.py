"""Driver manifests (`driver.toml`): loading, validation, discovery, install status.

A driver is one folder with a manifest; the lab finds them by glob, so adding a client changes
nothing outside its folder. The format is documented in docs/driver-protocol.md.
"""

from __future__ import annotations

import dataclasses
import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from clientlab import paths
from clientlab.datafiles import Found, read_toml
from clientlab.drivers import runtimes
from clientlab.errors import LabInputError, describe_validation_error, did_you_mean, quote, shown

Capability = Literal[
    "http1", "tls", "http2", "h2c", "http3", "cookies", "redirects", "form", "multipart", "upload",
    "sink_file", "gzip", "parallel", "keepalive", "keepalive_off", "fresh_process",
]
MANIFEST_NAME = "driver.toml"


class Recommended(BaseModel):
    """The library's own documented recommendation for production use (`[behaviour.recommended]`):
    the behaviour matrix's second column runs every case with it (docs/behaviour.md)."""

    model_config = ConfigDict(extra="forbid")

    setting: str = Field(min_length=1)   # what the driver sets, in the library's words
    source: str = Field(min_length=1)    # where the library's docs say it: a URL or a doc's section
    why: str = Field(min_length=1)       # one line: what the docs say of it
    # "option": the job's option `recommended` makes the driver set it; "timeout_s": it is the very
    # setting the driver gives the job's timeout_s in every job, so the second column's job is the
    # first's, run once (the cell says "=")
    by: Literal["option", "timeout_s"] = "option"


class BehaviourSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    recommended: Recommended | None = None


class PlainNote(BaseModel):
    """A known cause of the lab's figure missing the library's plain loop (`[[plain_notes]]`), where
    the cause is the library's nature (a JIT that warms up longer than the lab gives, a runtime
    that pools differently in a fresh process): shown beside the ratio, never instead of it
    (docs/driver-protocol.md §9)."""

    model_config = ConfigDict(extra="forbid")

    reason: str = Field(min_length=1)     # one line: the cause, in the library's terms
    evidence: str = Field(min_length=1)   # where it was measured: a docs/evidence page's section, a URL
    # the scenarios it holds for (their names, e.g. "get-json-335k"); empty: every scenario
    scenarios: list[Annotated[str, Field(min_length=1)]] = []

    @field_validator("evidence")
    @classmethod
    def _evidence_found(cls, evidence: str) -> str:
        if not evidence.startswith(("docs/", "http://", "https://")):
            raise ValueError(f"{shown(evidence)}: where the cause was measured, a page under docs/ "
                             "(e.g. 'docs/evidence/truth.md#run-96') or a URL")
        return evidence

    def text(self) -> str:
        return f"{self.reason} ({self.evidence})"


class Manifest(BaseModel):
    """What a driver folder declares about itself."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    id: str = Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)+$")
    language: str = Field(min_length=1)
    library: str = Field(min_length=1)
    description: str = Field(min_length=1)
    run: list[Annotated[str, Field(min_length=1)]] = Field(min_length=1)
    build: list[Annotated[str, Field(min_length=1)]] | None = None
    build_inputs: list[str] | None = None    # glob patterns relative to the driver's folder
    requires: list[str] = []
    apt: list[str] = []
    capabilities: list[Capability]
    # speaks HTTP/1.1 (the capability `http1`, implied): false for a library of HTTP/3 alone
    # (aioquic), which the lab then gives no HTTP/1.1 job
    http1: bool = True
    # settings the driver needs that are neither the library's defaults nor named by the job, each
    # with its reason; shown beside the driver's figures (docs/driver-protocol.md §8)
    departures: list[Annotated[str, Field(min_length=1)]] = []
    default: bool = True
    # the runtime the driver runs on, when the lab can offer several of its lines (setup/runtimes.toml)
    runtime: Literal["node", "go", "python"] | None = None
    # other runtimes that run the driver's code unchanged (Bun and Deno run Node's), each of their
    # lines its own cell when a run names it (`--runtimes bun=1.4`): `node-fetch@bun1.4`
    also_on: list[Literal["bun", "deno"]] = []
    # JIT runtimes (Java, Node) reach steady state only after some work: at least this many
    # untimed warm-up trials run in the driver's process before the timed ones
    warmup: int = Field(default=1, ge=0, le=20)
    # the library's own plain loop (`plain.<ext>` in the folder, no lab code): argv that starts it;
    # the lab appends URL COUNT MODE WARMUP_S (docs/driver-protocol.md §9)
    plain: list[Annotated[str, Field(min_length=1)]] | None = None
    # known causes of a gap to the plain loop that lie in the library's nature, with their evidence
    plain_notes: list[PlainNote] = []
    # the behaviour matrix's settings: the library's documented recommendation, where it has one
    behaviour: BehaviourSettings = BehaviourSettings()

    @field_validator("build_inputs")
    @classmethod
    def _relative_patterns(cls, patterns: list[str] | None) -> list[str] | None:
        for pattern in patterns or []:
            if not pattern or pattern.startswith("/"):
                raise ValueError(f"{shown(pattern) or 'an empty pattern'}: a glob pattern relative to the "
                                 "driver's folder (e.g. 'src/*.c', '../_lib/*.py')")
        return patterns

    @model_validator(mode="after")
    def _http1_implied(self) -> "Manifest":
        if self.http1 and "http1" not in self.capabilities:
            self.capabilities = ["http1", *self.capabilities]
        elif not self.http1 and "http1" in self.capabilities:
            raise PydanticCustomError("http1", "field 'capabilities': claims http1, and http1 = false says it has none",
                                      {})
        return self

    @model_validator(mode="after")
    def _also_on_node(self) -> "Manifest":
        if self.also_on and self.runtime != "node":
            raise PydanticCustomError("also_on", "field 'also_on': Bun and Deno run code written for Node, so the "
                                      "driver must say runtime = \"node\"", {})
        return self

    @model_validator(mode="after")
    def _id_names_language(self) -> "Manifest":
        if not self.id.startswith(self.language + "-"):
            raise PydanticCustomError(
                "id_language", "field 'id': must start with the language, e.g. {example}",
                {"example": quote(f"{self.language}-{self.library.lower()}")},
            )
        return self


@dataclass(frozen=True)
class Driver:
    """A manifest and the folder it came from."""

    manifest: Manifest
    folder: Path
    variant: runtimes.Runtime | None = None  # a runtime line a run asked for, instead of the default

    @property
    def id(self) -> str:
        return f"{self.manifest.id}@{self.variant.label}" if self.variant else self.manifest.id

    @property
    def runtime(self) -> runtimes.Runtime | None:
        """The runtime build this driver runs on; None: whatever the machine has."""
        if self.variant is not None:
            return self.variant
        return runtimes.default(self.manifest.runtime) if self.manifest.runtime else None

    @property
    def runtime_kinds(self) -> list[str]:
        """The runtimes whose lines this driver can run on: its own and those it is also on."""
        return [self.manifest.runtime, *self.manifest.also_on] if self.manifest.runtime else []

    def also_on_lines(self) -> list["Driver"]:
        """This driver on every pinned line of the other runtimes it is also on (`also_on`)."""
        return [self.on(runtimes.Runtime(kind, line, version))
                for kind in self.manifest.also_on for line, version in runtimes.lines(kind).items()]

    def on(self, runtime: runtimes.Runtime) -> "Driver":
        """This driver on another line of its runtime (its own build, its own cells)."""
        if runtime.kind not in self.runtime_kinds:
            raise LabInputError(f"{self.id} runs on {', '.join(self.runtime_kinds) or 'no selectable runtime'}, "
                                f"not {runtime.kind}")
        return dataclasses.replace(self, variant=runtime)

    def env(self) -> dict[str, str] | None:
        """The environment its build and its process get (None: the lab's own)."""
        runtime = self.runtime
        return runtime.env() if runtime else None

    def expand(self, argv: list[str]) -> list[str]:
        # {variant} keeps a runtime variant's build apart from the default one: ".venv-python3.12"
        variant = f"-{self.variant.label}" if self.variant else ""
        return [a.replace("{here}", str(self.folder)).replace("{root}", str(paths.ROOT)).replace("{variant}", variant)
                for a in argv]

    def _launch(self, argv: list[str]) -> list[str]:
        # a Node program on Bun or Deno: that runtime's binary starts it
        return self.variant.launch(argv) if self.variant else argv

    @property
    def argv(self) -> list[str]:
        return self._launch(self.expand(self.manifest.run))

    @property
    def plain_argv(self) -> list[str] | None:
        """The library's own plain loop (docs/driver-protocol.md §9), or None when it has none."""
        return self._launch(self.expand(self.manifest.plain)) if self.manifest.plain else None

    def plain_note(self, scenario: str) -> str | None:
        """The manifest's known causes of a gap to the plain loop on `scenario` (its name; a
        label's [variant] ignored), with their evidence, or None."""
        name = scenario.split("[", 1)[0]
        notes = [n.text() for n in self.manifest.plain_notes if not n.scenarios or name in n.scenarios]
        return "; ".join(notes) or None


def load_manifest(path: Path) -> Driver:
    """Read and validate one driver.toml; errors name the file and the field."""
    data = read_toml(path, "driver manifest")
    try:
        manifest = Manifest.model_validate(data)
    except ValidationError as exc:
        raise LabInputError(describe_validation_error(path, exc)) from exc
    return Driver(manifest=manifest, folder=path.parent.resolve())


def _manifest_paths(folder: Path) -> list[Path]:
    if (folder / MANIFEST_NAME).is_file():
        return [folder / MANIFEST_NAME]
    found = sorted(folder.glob(f"*/{MANIFEST_NAME}")) + sorted(folder.glob(f"*/*/{MANIFEST_NAME}"))
    return [p for p in found if not any(part.startswith((".", "_")) for part in p.relative_to(folder).parts)]


def discover(extra_paths: list[Path] | None = None) -> Found[Driver]:
    """Every driver in drivers/ and in the given folders, plus the problems found on the way.

    A broken manifest does not hide the others: it is reported and skipped.
    """
    drivers: dict[str, Driver] = {}
    problems: list[str] = []
    sources = [paths.drivers_dir(), *(extra_paths or [])]
    for source in sources:
        if not source.is_dir():
            problems.append(f"{shown(source)}: not a folder")
            continue
        manifest_paths = _manifest_paths(source)
        if source != paths.drivers_dir() and not manifest_paths:
            problems.append(f"{shown(source)}: no {MANIFEST_NAME} in it or in its sub-folders")
        for manifest_path in manifest_paths:
            try:
                driver = load_manifest(manifest_path)
            except LabInputError as exc:
                problems.append(str(exc))
                continue
            if driver.id in drivers and drivers[driver.id].folder != driver.folder:
                problems.append(
                    f"{shown(manifest_path)}: id '{driver.id}' is already used by {shown(drivers[driver.id].folder)}"
                )
                continue
            drivers[driver.id] = driver
    return Found(sorted(drivers.values(), key=lambda d: d.id), problems)


def on_runtimes(drivers: list[Driver], chosen: dict[str, list[runtimes.Runtime]]) -> list[Driver]:
    """Each driver that runs on a kind named in `chosen`, once per line asked for; the others as
    they are. A kind that none of the drivers runs on is an error (it would measure nothing)."""
    for kind in chosen:
        if not any(kind in d.runtime_kinds for d in drivers):
            raise LabInputError(f"--runtimes {kind}=…: none of the chosen drivers runs on {kind} "
                                f"(drivers say so with runtime = \"{kind}\" in driver.toml"
                                + (", or also_on for Bun and Deno)" if kind in ("bun", "deno") else ")"))
    out: list[Driver] = []
    for d in drivers:
        lines = [r for kind in d.runtime_kinds for r in chosen.get(kind, [])]
        out.extend(d.on(r) for r in lines) if lines else out.append(d)
    return out


def variant(drivers: dict[str, Driver], driver_id: str) -> Driver | None:
    """The driver a cell id names: `node-fetch` as it is, `node-fetch@node22` on that pinned line;
    None when there is no such driver or line."""
    base_id, at, label = driver_id.partition("@")
    base = drivers.get(base_id)
    if base is None or not at:
        return base
    for kind in base.runtime_kinds:
        version = runtimes.lines(kind).get(label[len(kind):]) if label.startswith(kind) else None
        if version:
            return base.on(runtimes.Runtime(kind, label[len(kind):], version))
    return None


EVERY = "all"   # -d all: every driver found


def is_pattern(name: str) -> bool:
    """Whether a -d name stands for several drivers (`all`, or a glob such as `python-*`)."""
    return name == EVERY or any(ch in name for ch in "*?[")


def names_each(wanted: list[str] | None) -> bool:
    """Whether `wanted` names each driver by its id (no `all`, no glob, not the default set):
    a command then runs those drivers or says why not, where it would skip an uninstalled one
    of a set it chose itself."""
    return bool(wanted) and not any(is_pattern(w) for w in wanted)  # type: ignore[union-attr]


def select(drivers: list[Driver], wanted: list[str] | None) -> list[Driver]:
    """The drivers named in `wanted` (all default ones when None), in the order named, each once:
    an id, `all` (every driver found, in the order found) or a glob of ids (`python-*`, fnmatch's
    rules, those it matches in the order found). An unknown id, or a glob that matches none, is
    an error. `run`, `behave` and the checks all choose their drivers here."""
    if not wanted:
        return [d for d in drivers if d.manifest.default]
    by_id = {d.id: d for d in drivers}
    chosen: dict[str, Driver] = {}
    unknown: list[str] = []
    for w in wanted:
        if w == EVERY:
            matched = list(by_id)
        elif is_pattern(w):
            matched = [i for i in by_id if fnmatch.fnmatchcase(i, w)]
            if not matched:
                unknown.append(f"{w} (a pattern that matches no driver)")
        else:
            matched = [w] if w in by_id else []
            if not matched:
                unknown.append(f"{w}{did_you_mean(w, by_id)}")
        chosen.update((i, by_id[i]) for i in matched if i not in chosen)
    if unknown:
        raise LabInputError(f"unknown driver(s): {'; '.join(unknown)}. `clientlab drivers` lists the {len(by_id)} "
                            "there are")
    return list(chosen.values())
