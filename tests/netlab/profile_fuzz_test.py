"""Fuzzing the network profile loader (Hypothesis): a profile that loads, or a LabInputError naming
the file; never a traceback. A broken profile does not stop the others (or loopback) from loading."""

from __future__ import annotations

import tomllib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clientlab.netlab import profile
from tests.support.fuzz import (document, fuzz_settings, loads_or_explains, maybe, mutated, scratch_file, texts,
                                   toml_document, words)

KEYS = list(profile.Profile.model_fields)
SHIPPED_DOCS = {p.name: tomllib.loads(p.read_text()) for p in sorted(profile.networks_dir().glob("*.toml"))}
numbers = st.one_of(st.integers(min_value=-5, max_value=200_000), st.floats(),
                    st.sampled_from([0, 2**63, 10**30, float("inf"), float("nan")]))
FIELD_VALUES = {
    "name": st.sampled_from(["fuzz", "other"]), "description": st.one_of(words, texts),
    "namespaces": st.booleans(), "rate_mbit": numbers, "rtt_ms": numbers, "dns_delay_ms": numbers,
    "dns_cache": st.booleans(), "max_conns": numbers, "link": st.sampled_from(["veth", "relay", "wire"]),
    "jitter_ms": numbers, "loss_pct": numbers, "loss_burst": numbers, "reorder_pct": numbers,
    "reorder_extra_ms": numbers, "rate_up_mbit": numbers,
}
profile_doc = document({k: maybe(v, KEYS) for k, v in FIELD_VALUES.items() if k != "description"}, KEYS,
                       required={"description": maybe(FIELD_VALUES["description"])})


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz-networks")


def check_loaded(p: profile.Profile | None) -> None:
    if p is not None:
        p.summary()
        assert p.rtt_ms <= 10_000 and (p.rate_mbit is None or 0 < p.rate_mbit <= 100_000)


@fuzz_settings(600)
@given(data=st.binary(max_size=400))
def test_arbitrary_bytes_never_crash_the_profile_loader(folder, data):
    loads_or_explains(profile.load_file, scratch_file(folder, "fuzz.toml"), data)


@fuzz_settings(500)
@given(doc=profile_doc)
def test_structured_profiles_load_or_are_explained(folder, doc):
    check_loaded(loads_or_explains(profile.load_file, scratch_file(folder, "fuzz.toml"), toml_document(doc).encode()))


@fuzz_settings(400)
@given(data=st.data(), name=st.sampled_from(sorted(SHIPPED_DOCS)))
def test_shipped_profiles_with_fields_changed_load_or_are_explained(folder, data, name):
    doc = data.draw(mutated(SHIPPED_DOCS[name], FIELD_VALUES, KEYS))
    check_loaded(loads_or_explains(profile.load_file, scratch_file(folder, name), toml_document(doc).encode()))


def test_a_broken_profile_does_not_stop_the_others(tmp_path):
    (tmp_path / "loopback.toml").write_text('description = "here"\nnamespaces = false\n')
    (tmp_path / "wan.toml").write_bytes(b'description = "\xff\xfe"\n')
    (tmp_path / "inf.toml").write_text('description = "x"\nrtt_ms = inf\n')
    assert profile.get("loopback", tmp_path).namespaces is False
    with pytest.raises(profile.LabInputError, match=r"wan\.toml: cannot read network profile: not UTF-8"):
        profile.get("wan", tmp_path)
    with pytest.raises(profile.LabInputError, match=r"inf\.toml: field 'rtt_ms': inf is not a number"):
        profile.get("inf", tmp_path)
