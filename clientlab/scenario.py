"""Scenarios: workloads as data files (`scenarios/<name>.toml`), validated on load.

A scenario says what the client does (requests, client settings) and, through the bench
server's resources, what the server answers; verification derives what to check from it.
The format is documented in docs/scenarios.md.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator, model_validator

from clientlab import paths
from clientlab.datafiles import MAX_INT, Found, read_named_toml
from clientlab.errors import LabInputError, describe_validation_error, did_you_mean, quote, shown
from clientlab.units import parse_size

_PLACEHOLDER = re.compile(r"\{([a-zA-Z_][a-zA-Z0-9_]*)(?::(bytes|path))?\}")
_ANY_BRACES = re.compile(r"\{[^{}]*\}?")
INDEX = "index"  # {index}: the repeat number, which turns one entry into `repeat` distinct URLs
MAX_INDEXED = 100_000  # entries one {index} request may turn into (each is a distinct URL in the job)
MAX_PATH = 4096
# what a plain {name} may put into a path: unreserved characters only, so that a parameter value
# cannot add a segment, a query, a fragment or an escape ({name:path} takes a whole path)
_SEGMENT_SAFE = re.compile(r"[A-Za-z0-9._~-]*")
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_HEADER_BAD = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_OPTION_NAME = re.compile(r"[a-z][a-z0-9_]*")
_PARAM_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")

OptionValue = bool | int | float | str | list[bool | int | float | str]


def path_problem(path: str, _depth: int = 0) -> str | None:
    """Why `path` is not a path on the lab's own server, or None.

    Read the way the strictest clients read URLs (WHATWG: a backslash is a slash, tabs and
    newlines are dropped): a built URL `base + path` must stay on the lab's server. A redirect
    target in the query (`/redirect/1?to=/x`) is checked the same way, after percent-decoding."""
    if not path.startswith("/"):
        return "must start with '/' (a path on the lab's own server)"
    if path.startswith("//"):
        return "starts with '//', which a client reads as another host"
    if "\\" in path:
        return "has a backslash, which browsers and WHATWG URL parsers read as '/' (another host)"
    bad = re.search(r"[^\x21-\x7e]", path)
    if bad:
        return (f"has {bad.group()!r}: a path is printable ASCII without spaces or control characters "
                "(percent-encode the rest)")
    if len(path) > MAX_PATH:
        return f"is {len(path)} characters long (at most {MAX_PATH})"
    if "#" in path:
        return "has '#': a fragment is never sent to the server"
    if re.search(r"%(?![0-9A-Fa-f]{2})", path):
        return "has a '%' that is not a %XX escape"
    if "://" in path or "%3a%2f%2f" in path.lower():
        return "has an absolute URL in it; another host or an absolute URL is refused"
    if re.search(r"[{}<>\"^`|]", path):
        return "has a character that is not allowed in a URL ({ } < > \" ^ ` |); percent-encode it"
    _, _, query = path.partition("?")
    for name, value in parse_qsl(query, keep_blank_values=True):
        if re.search(r"[\x00-\x1f\x7f]", value):
            return f"has a query value '{name}' with a control character once decoded"
        if value.startswith(("/", "\\")):  # a path the server may redirect to: it must stay here too
            inner = path_problem(value, _depth + 1) if _depth < 4 else "nests redirect targets too deeply"
            if inner:
                return f"has a query value '{name}' (a redirect target) that, once decoded, {inner}"
        elif _SCHEME.match(value) and "/" in value:
            return f"has a query value '{name}' that is an absolute URL once decoded (another host)"
    return None


class Request(BaseModel):
    """One request entry of a scenario, after parameters are filled in."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    method: Literal["GET", "POST", "PUT", "HEAD", "DELETE", "PATCH"] = "GET"
    path: str
    repeat: int = Field(default=1, ge=1, le=10_000_000)
    headers: dict[str, str] = {}
    form: dict[str, str] | None = None
    form_encoding: Literal["urlencoded", "multipart"] = "urlencoded"
    upload_size: int | None = Field(default=None, ge=0, le=1 << 36)  # the lab writes the file: 64 GiB at most
    content_type: str = "application/octet-stream"
    follow_redirects: bool = False
    sink: Literal["memory", "file"] = "memory"
    expect_status: int = Field(default=200, ge=100, le=599)

    @field_validator("path")
    @classmethod
    def _own_server_only(cls, path: str) -> str:
        # Drivers only ever talk to the lab's own server: checked on the path as filled in.
        problem = path_problem(path)
        if problem:
            raise ValueError(f"{quote(path)} is refused, drivers only talk to the lab's own server: it {problem}")
        return path

    @field_validator("headers")
    @classmethod
    def _headers_are_headers(cls, headers: dict[str, str]) -> dict[str, str]:
        for name, value in headers.items():
            if not _HEADER_NAME.fullmatch(name):
                raise ValueError(f"header name {quote(name)} is not an HTTP token (letters, digits, - and the like)")
            if _HEADER_BAD.search(value):
                raise ValueError(f"header {name}: a control character or line break in the value")
        return headers

    @field_validator("content_type")
    @classmethod
    def _content_type_is_a_header(cls, value: str) -> str:
        if _HEADER_BAD.search(value):
            raise ValueError("a control character or line break in the value")
        return value

    @model_validator(mode="after")
    def _one_body(self) -> "Request":
        if self.form is not None and self.upload_size is not None:
            raise ValueError("give either 'form' or 'upload_size', not both")
        return self


class Client(BaseModel):
    """How the client is set up for the whole job."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    scheme: Literal["http", "https"] = "http"
    http: Literal["1.1", "2", "h2c", "3"] = "1.1"
    concurrency: int = Field(default=1, ge=1, le=10_000)
    keep_alive: bool = True
    cookies: bool = False
    accept_gzip: bool = False
    # a time limit the client is given for each request; None: the library's own default (what a
    # plain program gets). The lab's limit on a trial is the scenario's `timeout_s`, not this.
    timeout_s: float | None = Field(default=None, gt=0, le=86_400)
    options: dict[str, OptionValue] = {}

    @field_validator("options")
    @classmethod
    def _option_names(cls, options: dict[str, Any]) -> dict[str, Any]:
        for name in options:
            if not _OPTION_NAME.fullmatch(name):
                raise ValueError(f"option name {quote(name)}: lower-case letters, digits and _ (e.g. tcp_nodelay)")
        return options

    @model_validator(mode="after")
    def _version_fits_scheme(self) -> "Client":
        if self.http == "2" and self.scheme != "https":
            raise ValueError("http = \"2\" is HTTP/2 over TLS: set scheme = \"https\" (or use http = \"h2c\")")
        if self.http == "3" and self.scheme != "https":
            raise ValueError("http = \"3\" is HTTP/3 over QUIC, always encrypted: set scheme = \"https\"")
        if self.http == "h2c" and self.scheme != "http":
            raise ValueError("http = \"h2c\" is cleartext: set scheme = \"http\"")
        return self


class Server(BaseModel):
    """What the bench server does besides serving the resources."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    # the shape of every answer's head: "nginx" (Debian 12's nginx's header set, order and sizes
    # for the same resource) or "minimal" (Content-Length, Content-Type, Date); docs/bench-server.md
    headers: Literal["nginx", "minimal"] = "nginx"


class Scenario(BaseModel):
    """A validated, parameter-expanded scenario."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    description: str = Field(min_length=1)
    default: bool = True
    metric: Literal["requests", "bytes"] = "requests"
    timeout_s: float = Field(default=120, gt=0, le=86_400)
    params: dict[str, int | str] = {}
    client: Client = Client()
    server: Server = Server()
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

        http = "2" and "3" switch to https (HTTP/2 is negotiated over TLS, HTTP/3 runs over QUIC);
        "h2c" switches to http; "1.1" keeps the scheme.
        """
        changes = {k: v for k, v in changes.items() if v is not None and v != {}}
        if not changes:
            return self
        client = self.client.model_dump()
        if "options" in changes:
            client["options"] = {**client["options"], **changes.pop("options")}
        if changes.get("http") in ("2", "3"):
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

    def with_server(self, headers: str | None = None) -> "Scenario":
        """A copy whose bench server answers with heads of this shape (None = keep), named for it."""
        if headers is None or headers == self.server.headers:
            return self
        try:
            server = Server(headers=headers)  # type: ignore[arg-type]
        except ValidationError as exc:
            raise LabInputError(f"scenario {self.name}: {exc.errors()[0]['msg']}") from exc
        variant = ",".join(p for p in [self.variant, f"headers={headers}"] if p)
        return self.model_copy(update={"server": server, "variant": variant})


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


_PARAMS = TypeAdapter(dict[str, int | str])


class ScenarioFile(BaseModel):
    """A scenario as written, before parameters are filled in."""

    path: Path
    raw: dict[str, Any]
    default: bool = True      # the expanded scenario's `default` (set by load_file)

    @property
    def name(self) -> str:
        return str(self.raw.get("name", self.path.stem))

    @property
    def params(self) -> dict[str, Any]:
        value = self.raw.get("params", {})
        return dict(value) if isinstance(value, dict) else {}

    def _declared_params(self) -> dict[str, int | str]:
        """The [params] table, checked: NAME = integer or string."""
        try:
            return _PARAMS.validate_python(self.raw.get("params", {}))
        except ValidationError as exc:
            fields = dict.fromkeys(".".join(["params", *map(str, e["loc"][:1])]) for e in exc.errors())
            raise LabInputError("\n".join(
                f"{shown(self.path)}: field '{shown(f)}': "
                + ("must be an integer or a string" if f != "params" else "must be a table: [params] NAME = value")
                for f in fields)) from exc

    def expand(self, overrides: dict[str, Any] | None = None) -> Scenario:
        """Fill in parameters (defaults, then `overrides`) and validate the result. A value given on
        the command line that the scenario cannot take is blamed on that parameter, not the file."""
        try:
            return self._expand(overrides)
        except LabInputError as exc:
            if not overrides:
                raise
            try:
                self._expand(None)
            except LabInputError:
                raise exc from None  # the file itself is broken: say so as it is
            for key, value in overrides.items():
                try:
                    self._expand({key: value})
                except LabInputError as mine:
                    why = str(mine).split(": ", 1)[-1]
                    default = self._declared_params().get(key)
                    raise LabInputError(f"scenario {self.name} ({shown(self.path)}) cannot take {key}={value} for its "
                                        f"parameter '{key}' ({why}; its default is {default!r})") from None
            raise

    def _expand(self, overrides: dict[str, Any] | None = None) -> Scenario:
        declared = self._declared_params()
        params = {**declared, **(overrides or {})}
        unknown = set(overrides or {}) - set(declared)
        if unknown:
            raise LabInputError(
                f"{shown(self.path)}: no parameter {', '.join(quote(u) for u in sorted(unknown))} "
                f"(this scenario has: {', '.join(sorted(declared)) or 'none'})"
            )
        if "variant" in self.raw:
            raise LabInputError(f"{shown(self.path)}: field 'variant': unknown field (the lab sets it from the command line)")
        data = {k: v for k, v in self.raw.items()}
        data["params"] = params
        try:
            data["client"] = _fill(self.raw.get("client", {}), params, "client")
            data["requests"] = _expand_requests(self.raw.get("requests", []), params)
        except _FillError as exc:
            raise LabInputError(f"{shown(self.path)}: field '{exc.field}': {exc.message}") from exc
        try:
            return Scenario.model_validate(data)
        except ValidationError as exc:
            raise LabInputError(describe_validation_error(self.path, exc)) from exc


class _FillError(Exception):
    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field, self.message = field, message


def _lookup(match: re.Match[str], params: dict[str, Any], field: str, index: int | None) -> Any:
    """The value of one {name} / {name:bytes} / {name:path}."""
    name, conv = match.group(1), match.group(2)
    if name == INDEX and index is not None:
        return index
    if name not in params:
        raise _FillError(field, f"unknown parameter '{{{name}}}' (declare it under [params])")
    raw = params[name]
    if conv == "bytes":
        try:
            size = parse_size(raw)
        except (ValueError, OverflowError) as exc:
            raise _FillError(f"params.{name}", f"not a size: {quote(raw)} (write e.g. 1024, 10MB, 1.5GB, 64KiB)"
                             if isinstance(exc, OverflowError) else str(exc)) from exc
        if size > MAX_INT:
            raise _FillError(f"params.{name}", f"the size {quote(raw)} is too large")
        return size
    return raw


def _fill(value: Any, params: dict[str, Any], field: str, index: int | None = None) -> Any:
    """Replace {name} and {name:bytes} in strings; a string that is one placeholder keeps the type."""
    if isinstance(value, dict):
        return {k: _fill(v, params, f"{field}.{k}", index) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, params, f"{field}.{i}", index) for i, v in enumerate(value)]
    if not isinstance(value, str):
        return value
    whole = _PLACEHOLDER.fullmatch(value)
    if whole:
        return _lookup(whole, params, field, index)
    return _PLACEHOLDER.sub(lambda m: str(_lookup(m, params, field, index)), value)


def _fill_path(template: Any, params: dict[str, Any], field: str, index: int | None = None) -> Any:
    """A request's path with its parameters filled in, each value checked for what it may put there.

    A plain {name} may hold letters, digits, '.', '_', '~', '-' only: a value cannot add a segment,
    a query, a fragment, an escape or another host. {name:path} takes a whole path (checked as one:
    same origin), {name:bytes} a size, {index} the repeat number. The result is checked as a whole
    by the Request model."""
    if not isinstance(template, str):
        return template  # let validation say what is wrong
    for braces in _ANY_BRACES.finditer(template):
        if not _PLACEHOLDER.fullmatch(braces.group()):
            raise _FillError(field, f"{quote(braces.group())} is not a placeholder: write {{name}}, {{name:bytes}} "
                                    "or {name:path}")

    def one(match: re.Match[str]) -> str:
        name, conv = match.group(1), match.group(2)
        value = _lookup(match, params, field, index)
        if conv == "path":
            problem = path_problem(value) if isinstance(value, str) else "must be a string"
            if problem:
                raise _FillError(field, f"parameter '{name}' = {quote(value)} (a path): {problem}")
            return value
        text = str(value)
        if not _SEGMENT_SAFE.fullmatch(text) or text in (".", ".."):
            bad = next((c for c in text if not _SEGMENT_SAFE.fullmatch(c)), None)
            what = f"{bad!r}" if bad is not None else "a dot segment"
            raise _FillError(field, f"parameter '{name}' = {quote(value)} would put {what} into the path: a "
                                    "parameter there may hold letters, digits, '.', '_', '~' and '-' only "
                                    f"(a scenario that takes a path writes {{{name}:path}})")
        return text

    return _PLACEHOLDER.sub(one, template)


def _fill_request(entry: dict, params: dict[str, Any], field: str, index: int | None = None) -> dict:
    filled = {k: _fill(v, params, f"{field}.{k}", index) for k, v in entry.items() if k != "path"}
    if "path" in entry:
        filled["path"] = _fill_path(entry["path"], params, f"{field}.path", index)
    return filled


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
            if isinstance(repeat, str) and re.fullmatch(r"[0-9]{1,9}", repeat):
                repeat = int(repeat)
            if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
                raise _FillError(f"{field}.repeat", "must be a positive integer when the path uses {index}")
            if repeat > MAX_INDEXED or len(expanded) + repeat > MAX_INDEXED:
                raise _FillError(f"{field}.repeat", f"{repeat} distinct URLs from {{index}}: at most {MAX_INDEXED}")
            for k in range(repeat):
                expanded.append(_fill_request({**entry, "repeat": 1}, params, field, index=k))
        else:
            expanded.append(_fill_request(entry, params, field))
    return expanded


def load_file(path: Path) -> ScenarioFile:
    """Read one scenario file and check that it expands with its own defaults."""
    raw = read_named_toml(path, "scenario")
    scenario_file = ScenarioFile(path=path, raw=raw)
    scenario_file.default = scenario_file.expand().default  # validates
    return scenario_file


# Folders given with --scenario-path, for every discover() in this process that names none
# (the command line sets them once: `clientlab run`, `scenarios`, `experiment`).
_extra_paths: list[Path] = []


def use_paths(folders: list[Path] | tuple[Path, ...]) -> None:
    """Also load scenarios from these folders, from now on (checked here: each must be a folder)."""
    for folder in folders:
        _check_folder(folder)
    _extra_paths[:] = list(folders)


def _check_folder(folder: Path) -> None:
    if not folder.exists():
        raise LabInputError(f"--scenario-path {shown(folder)}: no such folder")
    if not folder.is_dir():
        raise LabInputError(f"--scenario-path {shown(folder)}: not a folder (give the folder the .toml files are in)")


def discover(folder: Path | None = None, extra_paths: list[Path] | None = None) -> Found[ScenarioFile]:
    """Every scenario file (the shipped ones, or `folder`'s, then those of the extra folders),
    plus one problem line for each file that does not validate: a broken file is reported and
    skipped, the others load. Two files of the same name in different folders are an error."""
    folders = [folder or paths.scenarios_dir()]
    for extra in _extra_paths if extra_paths is None else extra_paths:
        _check_folder(extra)
        if all(extra.resolve() != f.resolve() for f in folders):
            folders.append(extra)
    by_name: dict[str, Path] = {}
    files, problems = [], []
    for source in folders:
        try:
            found = sorted(source.glob("*.toml"))
        except OSError as exc:
            problems.append(f"{shown(source)}: cannot list the folder: {exc.strerror or exc}")
            continue
        for path in found:
            if path.stem in by_name:
                raise LabInputError(f"scenario '{shown(path.stem)}' is defined twice: {shown(by_name[path.stem])} and "
                                    f"{shown(path)} (rename one: the name is the file name)")
            by_name[path.stem] = path
            try:
                files.append(load_file(path))
            except LabInputError as exc:
                problems.append(str(exc))
    return Found(files, problems)


def _typed(value: str) -> int | str:
    """An integer when the value is one (ASCII digits, at most 18 of them), else the string."""
    return int(value) if re.fullmatch(r"-?[0-9]{1,18}", value) else value


def _check_value(what: str, pair: str, value: str) -> None:
    if re.search(r"[\x00-\x1f\x7f-\x9f]", value):
        raise LabInputError(f"{what} {quote(pair)}: a control character in the value")
    if len(value) > MAX_PATH:
        raise LabInputError(f"{what} {quote(pair)}: the value is {len(value)} characters long (at most {MAX_PATH})")


def parse_overrides(pairs: list[str]) -> dict[str | None, dict[str, Any]]:
    """`-p count=500` (every scenario with that parameter) or `-p get-small.count=500` (one)."""
    out: dict[str | None, dict[str, Any]] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise LabInputError(f"parameter override {quote(pair)}: write NAME=VALUE or SCENARIO.NAME=VALUE")
        scenario, dot, name = key.rpartition(".")
        if not _PARAM_NAME.fullmatch(name) or (dot and not scenario):
            raise LabInputError(f"parameter override {quote(pair)}: a parameter name is letters, digits and _ "
                                "(write NAME=VALUE or SCENARIO.NAME=VALUE)")
        _check_value("parameter override", pair, value)
        out.setdefault(scenario if dot else None, {})[name] = _typed(value)
    return out


def parse_options(pairs: list[str]) -> dict[str, Any]:
    """`-o tcp_nodelay=false -o max_host_connections=6 -o share=dns,tls` → typed option values."""
    out: dict[str, Any] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise LabInputError(f"option {quote(pair)}: write NAME=VALUE, e.g. tcp_nodelay=false")
        if not _OPTION_NAME.fullmatch(name):
            raise LabInputError(f"option {quote(pair)}: an option name is lower-case letters, digits and _ "
                                "(e.g. tcp_nodelay)")
        _check_value("option", pair, value)
        if value.lower() in ("true", "false"):
            out[name] = value.lower() == "true"
        elif re.fullmatch(r"[0-9]{1,18}", value):
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
            named = "; ".join(f"{shown(w)}{did_you_mean(w, by_name)}" for w in unknown)
            raise LabInputError(f"unknown scenario(s): {named} (known: {', '.join(sorted(by_name)) or 'none'})")
        chosen = [by_name[w] for w in wanted]
    else:
        chosen = [f for f in files if f.default]
    for name in overrides:
        if name is not None and name not in {f.name for f in chosen}:
            raise LabInputError(f"parameter override names scenario {quote(name)}, which is not selected")
    generic = overrides.get(None, {})
    for key in generic:
        if not any(key in f.params for f in chosen):
            params = {p for f in chosen for p in f.params}
            raise LabInputError(f"parameter '{key}' is not a parameter of any selected scenario"
                                f"{did_you_mean(key, params)} (they have: {', '.join(sorted(params)) or 'none'})")
    scenarios = []
    for f in chosen:
        mine = {k: v for k, v in generic.items() if k in f.params}
        mine.update(overrides.get(f.name, {}))
        scenarios.append(f.expand(mine))
    return scenarios
