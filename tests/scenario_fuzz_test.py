"""Fuzzing the scenario loader, the -p / -o parsers and parameter expansion (Hypothesis): whatever
the bytes or values, the lab answers with a scenario whose every URL stays on its own server, or
with a LabInputError naming the file and the problem; never a traceback."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clientlab import paths, scenario
from clientlab.drivers.job import same_origin_url
from clientlab.errors import LabInputError
from tests.support.fuzz import (NASTY, anything, document, fuzz_settings, loads_or_explains, maybe, scratch_file,
                                   mutated, texts, toml_document, words)

SHIPPED = sorted(paths.scenarios_dir().glob("*.toml"))
BASES = ("http://127.0.0.1:40001", "https://[::1]:40002")

REQUEST_KEYS = list(scenario.Request.model_fields)
CLIENT_KEYS = list(scenario.Client.model_fields)
SCENARIO_KEYS = list(scenario.Scenario.model_fields)
KEYS = REQUEST_KEYS + CLIENT_KEYS + SCENARIO_KEYS + ["count", "size", "hops"]

PATHS = ["/bytes/{size:bytes}", "/feeds/{index}", "/redirect/{hops}?to=/bytes/{size:bytes}", "/echo", "/login",
         "/private/bytes/{size}", "/{count}", "/redirect/1?to={where:path}", "/json/{size:bytes}?gzip=1",
         "/redirect/2?to=%2F%2Fexample.com", "/a\\b", "//example.com/x", "/x#y", "/%zz", "/{size:kb}"]
param_values = st.one_of(st.integers(min_value=-5, max_value=300), st.integers(min_value=1, max_value=300), texts,
                         st.sampled_from(["10MB", "1.5GB", "64KiB", "/bytes/1", "//x", "1?to=//example.com/x#"]))
request = document({
    "method": maybe(st.sampled_from(["GET", "POST", "PUT", "HEAD", "DELETE", "PATCH", "get", "BREW"])),
    "repeat": maybe(st.one_of(st.integers(min_value=-2, max_value=50), st.sampled_from(["{count}", "{size}", "3"]))),
    "headers": maybe(st.dictionaries(st.one_of(words, texts), st.one_of(words, texts), max_size=2)),
    "form": maybe(st.dictionaries(st.one_of(words, texts), st.one_of(words, texts), max_size=2)),
    "form_encoding": maybe(st.sampled_from(["urlencoded", "multipart", "json"])),
    "upload_size": maybe(st.one_of(st.integers(min_value=-1, max_value=2**40), st.just("{size:bytes}"))),
    "content_type": maybe(st.one_of(words, texts)),
    "follow_redirects": maybe(st.booleans()),
    "sink": maybe(st.sampled_from(["memory", "file", "disk"])),
    "expect_status": maybe(st.integers(min_value=0, max_value=1000)),
}, KEYS, required={"path": maybe(st.one_of(st.sampled_from(PATHS), st.sampled_from(PATHS),
                                           st.one_of(words, texts).map(lambda t: "/" + t)))})
client = document({
    "scheme": maybe(st.sampled_from(["http", "https", "ftp"])),
    "http": maybe(st.sampled_from(["1.1", "2", "h2c", "3"])),
    "concurrency": maybe(st.integers(min_value=-1, max_value=20_000)),
    "keep_alive": maybe(st.booleans()),
    "cookies": maybe(st.booleans()),
    "accept_gzip": maybe(st.booleans()),
    "options": maybe(st.dictionaries(st.sampled_from(["tcp_nodelay", "share", "x", "Bad Name", ""]),
                                     anything(), max_size=3)),
}, KEYS)
scenario_doc = document({
    "name": maybe(st.sampled_from(["fuzz", "fuzz", "other"])),
    "default": maybe(st.booleans()),
    "metric": maybe(st.sampled_from(["requests", "bytes", "joules"])),
    "timeout_s": maybe(st.one_of(st.floats(), st.integers(min_value=-1, max_value=10**6))),

    "client": maybe(client),
}, KEYS, required={"description": maybe(st.one_of(words, texts)),
                   "params": maybe(st.fixed_dictionaries(
                       {"count": param_values, "size": param_values, "hops": param_values},
                       optional={"where": param_values, "index": param_values, "bad key": param_values})),
                   "requests": maybe(st.lists(request, min_size=1, max_size=3))})


FIELD_VALUES = {
    "method": st.sampled_from(["GET", "POST", "PUT", "HEAD", "DELETE", "PATCH", "get", "BREW"]),
    "path": st.one_of(st.sampled_from(PATHS), st.one_of(words, texts).map(lambda t: "/" + t)),
    "repeat": st.one_of(st.integers(min_value=-2, max_value=50), st.sampled_from(["{count}", "{size}", "3"])),
    "count": param_values, "size": param_values, "hops": param_values, "feeds": param_values,
    "scheme": st.sampled_from(["http", "https", "ftp"]), "http": st.sampled_from(["1.1", "2", "h2c", "3"]),
    "concurrency": st.integers(min_value=-1, max_value=20_000), "timeout_s": st.floats(),
    "upload_size": st.one_of(st.integers(min_value=-1, max_value=2**40), st.just("{size:bytes}")),
    "headers": st.dictionaries(st.one_of(words, texts), st.one_of(words, texts), max_size=2),
    "form": st.dictionaries(st.one_of(words, texts), st.one_of(words, texts), max_size=2),
    "expect_status": st.integers(min_value=0, max_value=1000), "description": st.one_of(words, texts),
    "options": st.dictionaries(st.sampled_from(["tcp_nodelay", "share", "x", "Bad Name", ""]), anything(), max_size=2),
}
SHIPPED_DOCS = {p.name: tomllib.loads(p.read_text()) for p in SHIPPED}


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz-scenarios")


def check_loaded(f: scenario.ScenarioFile | None) -> None:
    """A scenario that loads builds URLs that are all on the lab's server (job.plan's check)."""
    if f is None:
        return
    all_on_the_lab_server(f.expand())


def all_on_the_lab_server(sc: scenario.Scenario) -> None:
    for r in sc.requests:
        assert scenario.path_problem(r.path) is None, r.path
        for base in BASES:
            assert same_origin_url(base, r.path) == base + r.path


@fuzz_settings(1000)
@given(data=st.binary(max_size=600))
def test_arbitrary_bytes_never_crash_the_scenario_loader(folder, data):
    loads_or_explains(scenario.load_file, scratch_file(folder, "fuzz.toml"), data)


@fuzz_settings(600)
@given(source=st.sampled_from(SHIPPED), edits=st.lists(st.tuples(st.integers(0, 2000), st.binary(max_size=4)),
                                                        min_size=1, max_size=4))
def test_shipped_scenarios_with_bytes_changed_never_crash_the_loader(folder, source, edits):
    data = bytearray(source.read_bytes())
    for at, new in edits:
        at %= len(data) + 1
        data[at:at + len(new)] = new
    f = loads_or_explains(scenario.load_file, scratch_file(folder, source.name), bytes(data))
    check_loaded(f)


@fuzz_settings(500)
@given(doc=scenario_doc)
def test_structured_scenario_files_load_safely_or_are_explained(folder, doc):
    f = loads_or_explains(scenario.load_file, scratch_file(folder, "fuzz.toml"), toml_document(doc).encode())
    check_loaded(f)


@fuzz_settings(600)
@given(data=st.data(), name=st.sampled_from(sorted(SHIPPED_DOCS)))
def test_shipped_scenarios_with_fields_changed_load_safely_or_are_explained(folder, data, name):
    doc = data.draw(mutated(SHIPPED_DOCS[name], FIELD_VALUES, KEYS))
    f = loads_or_explains(scenario.load_file, scratch_file(folder, name), toml_document(doc).encode())
    check_loaded(f)


@fuzz_settings(800)
@given(name=st.sampled_from([p.stem for p in SHIPPED]),
       values=st.dictionaries(st.sampled_from(["count", "size", "hops", "feeds", "reads", "writes"]),
                              param_values, min_size=1, max_size=3))
def test_any_parameter_value_expands_safely_or_is_explained(name, values):
    files = {f.name: f for f in SHIPPED_FILES}
    f = files[name]
    mine = {k: v for k, v in values.items() if k in f.params}
    try:
        sc = f.expand(mine)
    except LabInputError as exc:
        # the file's own fault names the file; a value it cannot take names the value and the file
        message = str(exc)
        assert message.startswith(str(f.path)) or (message.startswith(f"scenario {f.name} ({f.path})"))
        return
    all_on_the_lab_server(sc)


SHIPPED_FILES = scenario.discover()[0]


@fuzz_settings(1000)
@given(pairs=st.lists(st.one_of(texts, st.tuples(texts, texts).map("=".join),
                                st.tuples(st.sampled_from(["count", "get-small.count", "size", "x.y.z"]),
                                          texts).map("=".join)), max_size=4))
def test_any_parameter_override_parses_or_is_explained(pairs):
    try:
        parsed = scenario.parse_overrides(pairs)
    except LabInputError as exc:
        assert "parameter override" in str(exc)
        return
    for scenario_name, values in parsed.items():
        for name, value in values.items():
            assert name.isidentifier() and isinstance(value, (int, str))
            assert not isinstance(value, int) or abs(value) < 10**19
    try:
        scenario.select(SHIPPED_FILES, None, parsed)
    except LabInputError:
        pass


@fuzz_settings(1000)
@given(pairs=st.lists(st.one_of(texts, st.tuples(texts, texts).map("=".join),
                                st.tuples(st.sampled_from(["tcp_nodelay", "share", "max_host_connections"]),
                                          texts).map("=".join)), max_size=4))
def test_any_client_option_parses_or_is_explained(pairs):
    try:
        options = scenario.parse_options(pairs)
    except LabInputError as exc:
        assert str(exc).startswith("option ")
        return
    base = SHIPPED_FILES[0].expand()
    try:
        changed = base.with_client(options=options)
    except LabInputError as exc:
        assert str(exc).startswith(f"scenario {base.name}: ")
        return
    assert changed.client.options == {**base.client.options, **options}


@pytest.mark.parametrize("value", NASTY)
def test_every_nasty_value_in_every_parameter_of_every_shipped_scenario(value):
    for f in SHIPPED_FILES:
        for name in f.params:
            try:
                sc = f.expand({name: value})
            except LabInputError:
                continue
            all_on_the_lab_server(sc)
