"""Scenarios: workloads as data files (`scenarios/<name>.toml`), validated on load.

A scenario says what the client does (requests, client settings) and, through the bench
server's resources, what the server answers; verification derives what to check from it.
The format is documented in docs/scenarios.md.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from clientlab import paths
from clientlab.errors import LabInputError, describe_validation_error, read_named_toml
from clientlab.units import parse_size

_PLACEHOLDER = re.compile(r"\{([a-zA-Z_][a-zA-Z0-9_]*)(?::(bytes))?\}")
INDEX = "index"  # {index}: the repeat number, which turns one entry into `repeat` distinct URLs


class Request(BaseModel):
    """One request entry of a scenario, after parameters are filled in."""

    model_config = ConfigDict(extra="forbid")

    method: Literal["GET", "POST", "PUT", "HEAD", "DELETE", "PATCH"] = "GET"
    path: str = Field(pattern=r"^/")
    repeat: int = Field(default=1, ge=1, le=10_000_000)
    headers: dict[str, str] = {}
    form: dict[str, str] | None = None
    form_encoding: Literal["urlencoded", "multipart"] = "urlencoded"
    upload_size: int | None = Field(default=None, ge=0)
    content_type: str = "application/octet-stream"
    follow_redirects: bool = False
    sink: Literal["memory", "file"] = "memory"
    expect_status: int = Field(default=200, ge=100, le=599)

    @field_validator("path")
    @classmethod
    def _own_server_only(cls, path: str) -> str:
        # Drivers only ever talk to the lab's own server: no scheme, no host, anywhere in the path.
        if path.startswith("//") or "://" in path or "%3a%2f%2f" in path.lower():
            raise ValueError("must be a path on the lab's own server; another host or an absolute URL is refused")
        return path

    @model_validator(mode="after")
    def _one_body(self) -> "Request":
        if self.form is not None and self.upload_size is not None:
            raise ValueError("give either 'form' or 'upload_size', not both")
        return self


class Client(BaseModel):
    """How the client is set up for the whole job."""

    model_config = ConfigDict(extra="forbid")

    scheme: Literal["http", "https"] = "http"
    http: Literal["1.1", "2", "h2c"] = "1.1"
    concurrency: int = Field(default=1, ge=1, le=10_000)
    keep_alive: bool = True
    cookies: bool = False
    accept_gzip: bool = False
    options: dict[str, Any] = {}

    @model_validator(mode="after")
    def _version_fits_scheme(self) -> "Client":
        if self.http == "2" and self.scheme != "https":
            raise ValueError("http = \"2\" is HTTP/2 over TLS: set scheme = \"https\" (or use http = \"h2c\")")
        if self.http == "h2c" and self.scheme != "http":
            raise ValueError("http = \"h2c\" is cleartext: set scheme = \"http\"")
        return self


class Scenario(BaseModel):
    """A validated, parameter-expanded scenario."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    description: str = Field(min_length=1)
    default: bool = True
    metric: Literal["requests", "bytes"] = "requests"
    timeout_s: float = Field(default=120, gt=0)
    params: dict[str, int | str] = {}
    client: Client = Client()
    requests: list[Request] = Field(min_length=1)

    variant: str = ""  # set by with_client(): what the command line changed, shown in the cell's name

    @model_validator(mode="after")
    def _fits_concurrency(self) -> "Scenario":
        problem = concurrency_problem(self.client, self.requests)
        if problem:
            raise ValueError(problem)
        return self

    @property
    def total_requests(self) -> int:
        return sum(r.repeat for r in self.requests)

    @property
    def label(self) -> str:
        """The name a cell carries: the scenario's, plus the client settings changed for this run."""
        return f"{self.name}[{self.variant}]" if self.variant else self.name

    def with_client(self, **changes: Any) -> "Scenario":
        """A copy with client settings changed (None = keep), validated; `options` are merged.

        http = "2" switches to https (HTTP/2 is negotiated over TLS); "h2c" and "1.1" keep the scheme
        unless it was https for HTTP/2.
        """
        changes = {k: v for k, v in changes.items() if v is not None and v != {}}
        if not changes:
            return self
        client = self.client.model_dump()
        if "options" in changes:
            client["options"] = {**client["options"], **changes.pop("options")}
        if changes.get("http") == "2":
            client["scheme"] = "https"
        elif changes.get("http") == "h2c":
            client["scheme"] = "http"
        client.update(changes)
        try:
            new_client = Client.model_validate(client)
        except ValidationError as exc:
            raise LabInputError(f"scenario {self.name}: {exc.errors()[0]['msg']}") from exc
        problem = concurrency_problem(new_client, self.requests)
        if problem:
            raise LabInputError(f"scenario {self.name}: {problem}")
        parts = [f"{k}={_show(v)}" for k, v in changes.items()] + [
            f"{k}={_show(v)}" for k, v in client["options"].items() if self.client.options.get(k) != v]
        variant = ",".join(p for p in [self.variant, *parts] if p)
        return self.model_copy(update={"client": new_client, "variant": variant})


def concurrency_problem(client: Client, requests: list[Request]) -> str | None:
    """Why this work cannot run `client.concurrency` requests at once, or None."""
    if client.concurrency == 1:
        return None
    if client.cookies:
        # the cookie comes from an earlier request: with requests in flight at once, a request
        # that needs it may leave before the one that sets it has come back
        return "a cookie session needs its requests in order: concurrency must be 1"
    if any(r.sink == "file" and r.repeat > 1 for r in requests):
        return "a request repeated into one sink file cannot run in parallel: concurrency must be 1 (or repeat 1)"
    return None


def _show(value: Any) -> str:
    """A setting as it appears in a cell's name: lists as a+b (no commas, which separate settings)."""
    return "+".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


class ScenarioFile(BaseModel):
    """A scenario as written, before parameters are filled in."""

    path: Path
    raw: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.raw.get("name", self.path.stem))

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.raw.get("params", {}))

    def expand(self, overrides: dict[str, Any] | None = None) -> Scenario:
        """Fill in parameters (defaults, then `overrides`) and validate the result."""
        params = {**self.params, **(overrides or {})}
        unknown = set(overrides or {}) - set(self.params)
        if unknown:
            raise LabInputError(
                f"{self.path}: no parameter {', '.join(sorted(unknown))} "
                f"(this scenario has: {', '.join(sorted(self.params)) or 'none'})"
            )
        if "variant" in self.raw:
            raise LabInputError(f"{self.path}: field 'variant': unknown field (the lab sets it from the command line)")
        data = {k: v for k, v in self.raw.items()}
        data["params"] = params
        try:
            data["client"] = _fill(self.raw.get("client", {}), params, "client")
            data["requests"] = _expand_requests(self.raw.get("requests", []), params)
        except _FillError as exc:
            raise LabInputError(f"{self.path}: field '{exc.field}': {exc.message}") from exc
        try:
            return Scenario.model_validate(data)
        except ValidationError as exc:
            raise LabInputError(describe_validation_error(self.path, exc)) from exc


class _FillError(Exception):
    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field, self.message = field, message


def _fill(value: Any, params: dict[str, Any], field: str, index: int | None = None) -> Any:
    """Replace {name} and {name:bytes} in strings; a string that is one placeholder keeps the type."""
    if isinstance(value, dict):
        return {k: _fill(v, params, f"{field}.{k}", index) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, params, f"{field}.{i}", index) for i, v in enumerate(value)]
    if not isinstance(value, str):
        return value

    def lookup(match: re.Match[str]) -> Any:
        name, conv = match.group(1), match.group(2)
        if name == INDEX and index is not None:
            return index
        if name not in params:
            raise _FillError(field, f"unknown parameter '{{{name}}}' (declare it under [params])")
        raw = params[name]
        if conv == "bytes":
            try:
                return parse_size(raw)
            except ValueError as exc:
                raise _FillError(f"params.{name}", str(exc)) from exc
        return raw

    whole = _PLACEHOLDER.fullmatch(value)
    if whole:
        return lookup(whole)
    return _PLACEHOLDER.sub(lambda m: str(lookup(m)), value)


def _expand_requests(entries: Any, params: dict[str, Any]) -> Any:
    """Fill parameters; an entry whose path uses {index} becomes `repeat` entries, one per index."""
    if not isinstance(entries, list):
        return entries  # let validation say what is wrong
    expanded: list[Any] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            expanded.append(entry)
            continue
        field = f"requests.{i}"
        if "{" + INDEX + "}" in str(entry.get("path", "")):
            repeat = _fill(entry.get("repeat", 1), params, f"{field}.repeat")
            if not isinstance(repeat, int) or repeat < 1:
                raise _FillError(f"{field}.repeat", "must be a positive integer when the path uses {index}")
            for k in range(repeat):
                one = _fill({**entry, "repeat": 1}, params, field, index=k)
                expanded.append(one)
        else:
            expanded.append(_fill(entry, params, field))
    return expanded


def load_file(path: Path) -> ScenarioFile:
    """Read one scenario file and check that it expands with its own defaults."""
    raw = read_named_toml(path, "scenario")
    scenario_file = ScenarioFile(path=path, raw=raw)
    scenario_file.expand()  # validates
    return scenario_file


def discover(folder: Path | None = None) -> tuple[list[ScenarioFile], list[str]]:
    """Every scenario file, plus one problem line for each file that does not validate."""
    folder = folder or paths.scenarios_dir()
    files, problems = [], []
    for path in sorted(folder.glob("*.toml")):
        try:
            files.append(load_file(path))
        except LabInputError as exc:
            problems.append(str(exc))
    return files, problems


def parse_overrides(pairs: list[str]) -> dict[str | None, dict[str, Any]]:
    """`-p count=500` (every scenario with that parameter) or `-p get-small.count=500` (one)."""
    out: dict[str | None, dict[str, Any]] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise LabInputError(f"parameter override '{pair}': write NAME=VALUE or SCENARIO.NAME=VALUE")
        scenario, dot, name = key.rpartition(".")
        parsed: int | str = int(value) if re.fullmatch(r"-?\d+", value) else value
        out.setdefault(scenario if dot else None, {})[name] = parsed
    return out


def parse_options(pairs: list[str]) -> dict[str, Any]:
    """`-o tcp_nodelay=false -o max_host_connections=6 -o share=dns,tls` → typed option values."""
    out: dict[str, Any] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise LabInputError(f"option '{pair}': write NAME=VALUE, e.g. tcp_nodelay=false")
        if value.lower() in ("true", "false"):
            out[name] = value.lower() == "true"
        elif re.fullmatch(r"\d+", value):
            out[name] = int(value)
        elif name == "share":
            out[name] = [v for v in value.split(",") if v]
        else:
            out[name] = value
    return out


def select(
    files: list[ScenarioFile], wanted: list[str] | None, overrides: dict[str | None, dict[str, Any]]
) -> list[Scenario]:
    """Expand the wanted scenarios (the default ones when None) with the overrides applied."""
    by_name = {f.name: f for f in files}
    if wanted:
        unknown = [w for w in wanted if w not in by_name]
        if unknown:
            raise LabInputError(
                f"unknown scenario(s): {', '.join(unknown)} (known: {', '.join(sorted(by_name)) or 'none'})"
            )
        chosen = [by_name[w] for w in wanted]
    else:
        chosen = [f for f in files if f.raw.get("default", True)]
    for name in overrides:
        if name is not None and name not in {f.name for f in chosen}:
            raise LabInputError(f"parameter override names scenario '{name}', which is not selected")
    generic = overrides.get(None, {})
    for key in generic:
        if not any(key in f.params for f in chosen):
            raise LabInputError(f"parameter '{key}' is not a parameter of any selected scenario")
    scenarios = []
    for f in chosen:
        mine = {k: v for k, v in generic.items() if k in f.params}
        mine.update(overrides.get(f.name, {}))
        scenarios.append(f.expand(mine))
    return scenarios
