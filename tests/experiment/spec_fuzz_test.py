"""Fuzzing the experiment loader (Hypothesis): any bytes, any structure built from the format's
fields, a shipped experiment with fields changed. An experiment loads and then plans (or says
which scenario it cannot use), or a LabInputError names the file; never a traceback."""

from __future__ import annotations

import tomllib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clientlab import scenario
from clientlab.errors import LabInputError
from clientlab.experiment import plan, spec
from tests.support.fuzz import (anything, document, fuzz_settings, loads_or_explains, maybe, mutated, scratch_file,
                                   texts, toml_document, words)

KEYS = sorted({*spec.Experiment.model_fields, *spec.Part.model_fields, *spec.Claim.model_fields,
               *spec.Select.model_fields, *spec.Sweep.model_fields, *spec.ClientChanges.__annotations__})
SHIPPED_DOCS = {p.name: tomllib.loads(p.read_text()) for p in sorted(spec.experiments_dir().glob("*.toml"))}
values = st.one_of(st.integers(min_value=-3, max_value=5000), st.floats(), st.booleans(), st.one_of(words, texts),
                   st.sampled_from(["1.1", "2", "h2c", "10MB", "dns"]))
FIELD_VALUES = {
    "title": st.one_of(words, texts), "seed": st.one_of(words, texts), "article": words, "says": words,
    "description": st.one_of(words, texts),
    "name": st.sampled_from(["get", "post", "fuzz", "Bad Name"]),
    "drivers": st.lists(st.sampled_from(["python-requests", "c-libcurl", "nope"]), max_size=3),
    "scenarios": st.lists(st.sampled_from(["get-small", "post-form", "download-file", "nope"]), max_size=3),
    "params": st.dictionaries(st.sampled_from(["count", "size", "hops"]), values, max_size=2),
    "quick_params": st.dictionaries(st.sampled_from(["count", "size"]), values, max_size=2),
    "client": st.dictionaries(st.sampled_from(["http", "concurrency", "keep_alive", "options", "colour"]), values,
                              max_size=2),
    "options": st.dictionaries(st.sampled_from(["tcp_nodelay", "share", "Bad"]), values, max_size=2),
    "net": st.sampled_from(["loopback", "wan-50ms", "nope"]),
    "over": st.sampled_from(["param:size", "param:count", "option:tcp_nodelay", "http", "concurrency",
                             "keep_alive", "colour"]),
    "values": st.lists(values, max_size=4), "quick": st.lists(values, max_size=3),
    "check": st.sampled_from(["faster", "similar", "grows", "falls", "flat", "sweet_spot", "maybe"]),
    "metric": st.sampled_from(["wall_s", "throughput", "peak_rss_kb", "cpu_s", "joules"]),
    "ratio": st.one_of(st.floats(), st.integers()), "tolerance": st.one_of(st.floats(), st.integers()),
    "part": st.sampled_from(["get", "post", "nope"]), "value": values,
}
part = document({k: maybe(FIELD_VALUES[k], KEYS) for k in ("params", "quick_params", "client", "net", "description")}
                | {"sweep": maybe(document({"quick": maybe(FIELD_VALUES["quick"])}, KEYS,
                                           required={"over": maybe(FIELD_VALUES["over"]),
                                                     "values": maybe(FIELD_VALUES["values"])}), KEYS),
                   "variants": maybe(st.lists(st.dictionaries(st.sampled_from(["options", "http", "x"]), values,
                                                              max_size=2), max_size=2), KEYS)},
                KEYS, required={k: maybe(FIELD_VALUES[k], KEYS) for k in ("name", "drivers", "scenarios")})
claim = document({k: maybe(FIELD_VALUES[k], KEYS) for k in ("metric", "ratio", "tolerance")}
                 | {"b": maybe(st.fixed_dictionaries({"part": FIELD_VALUES["part"]}), KEYS)},
                 KEYS, required={"says": maybe(FIELD_VALUES["says"]), "check": maybe(FIELD_VALUES["check"]),
                                 "a": maybe(st.fixed_dictionaries({"part": FIELD_VALUES["part"]},
                                                                  optional={"value": values}), KEYS)})
experiment_doc = document({"notes": maybe(st.lists(words, max_size=2), KEYS),
                           "claims": maybe(st.lists(claim, max_size=2), KEYS)}, KEYS,
                          required={k: maybe(FIELD_VALUES[k], KEYS) for k in ("title", "seed", "article")}
                          | {"parts": maybe(st.lists(part, min_size=1, max_size=2), KEYS)})


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz-experiments")


# the scenario files, read once for the whole module: plan() would read them for every example
SCENARIOS = scenario.discover()[0]


def check_loaded(e: spec.Experiment | None) -> None:
    """An experiment that loads plans its cells, or says which scenario or setting it cannot use."""
    if e is None:
        return
    for quick in (False, True):
        try:
            plan.plan(e, quick, SCENARIOS)
        except LabInputError as exc:
            assert str(exc).startswith(("part '", "scenario ", "/")), str(exc)


@fuzz_settings(600)
@given(data=st.binary(max_size=500))
def test_arbitrary_bytes_never_crash_the_experiment_loader(folder, data):
    loads_or_explains(spec.load_file, scratch_file(folder, "fuzz.toml"), data)


@fuzz_settings(400)
@given(doc=experiment_doc)
def test_structured_experiments_load_and_plan_or_are_explained(folder, doc):
    check_loaded(loads_or_explains(spec.load_file, scratch_file(folder, "fuzz.toml"), toml_document(doc).encode()))


@fuzz_settings(400)
@given(data=st.data(), name=st.sampled_from(sorted(SHIPPED_DOCS)))
def test_shipped_experiments_with_fields_changed_load_and_plan_or_are_explained(folder, data, name):
    doc = data.draw(mutated(SHIPPED_DOCS[name], FIELD_VALUES, KEYS))
    check_loaded(loads_or_explains(spec.load_file, scratch_file(folder, name), toml_document(doc).encode()))


def test_a_broken_experiment_file_does_not_hide_the_others(tmp_path):
    good = ('title = "t"\nseed = "000"\narticle = "a"\n[[parts]]\nname = "get"\ndrivers = ["c-libcurl"]\n'
            'scenarios = ["get-small"]\n')
    (tmp_path / "good.toml").write_text(good)
    (tmp_path / "bad.toml").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    known, broken = spec.scan(tmp_path)
    assert list(known) == ["good"] and "bad.toml: cannot read experiment: not UTF-8" in broken["bad"]
    assert [e.name for e in spec.get(["all"], tmp_path)] == ["good"]
    with pytest.raises(LabInputError, match=r"bad\.toml: cannot read experiment"):
        spec.get(["bad"], tmp_path)
