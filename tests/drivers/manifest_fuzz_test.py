"""Fuzzing the driver manifest loader (Hypothesis): any bytes, any structure built from the
manifest's fields, a shipped manifest with fields changed; a driver that loads, or a
LabInputError naming the file, never a traceback. Discovery reports a broken manifest and
keeps the others."""

from __future__ import annotations

import tomllib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clientlab import paths
from clientlab.drivers import build as builder
from clientlab.drivers import manifest
from tests.support.fuzz import (anything, document, fuzz_settings, loads_or_explains, maybe, mutated, scratch_file,
                                   texts, toml_document, words)

KEYS = list(manifest.Manifest.model_fields)
SHIPPED = sorted(paths.drivers_dir().glob("*/*/driver.toml"))[:8]
SHIPPED_DOCS = {str(p): tomllib.loads(p.read_text()) for p in SHIPPED}
strings = st.lists(st.one_of(words, texts), min_size=0, max_size=3)
FIELD_VALUES = {
    "id": st.one_of(st.sampled_from(["python-fuzz", "fuzz", "python-", "Python-X", "perl-fuzz"]), texts),
    "language": st.one_of(st.sampled_from(["python", "perl", ""]), texts),
    "library": st.one_of(words, texts), "description": st.one_of(words, texts),
    "run": strings, "build": strings, "build_inputs": strings, "requires": strings, "apt": strings,
    "capabilities": st.lists(st.sampled_from(["tls", "http2", "h2c", "cookies", "telepathy", ""]), max_size=4),
    "default": st.booleans(), "warmup": st.integers(min_value=-2, max_value=50),
}
manifest_doc = document({k: maybe(v, KEYS) for k, v in FIELD_VALUES.items() if k not in ("id", "run")}, KEYS,
                        required={"id": maybe(FIELD_VALUES["id"]), "run": maybe(FIELD_VALUES["run"])})


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz-drivers")


def check_loaded(driver: manifest.Driver | None) -> None:
    if driver is not None:
        assert driver.id.startswith(driver.manifest.language + "-")
        builder.missing(driver)  # says why it cannot run, or None: never raises


@fuzz_settings(800)
@given(data=st.binary(max_size=500))
def test_arbitrary_bytes_never_crash_the_manifest_loader(folder, data):
    loads_or_explains(manifest.load_manifest, scratch_file(folder / "d", "driver.toml"), data)


@fuzz_settings(500)
@given(doc=manifest_doc)
def test_structured_manifests_load_or_are_explained(folder, doc):
    path = scratch_file(folder / "d", "driver.toml")
    check_loaded(loads_or_explains(manifest.load_manifest, path, toml_document(doc).encode()))


@fuzz_settings(400)
@given(data=st.data(), name=st.sampled_from(sorted(SHIPPED_DOCS)))
def test_shipped_manifests_with_fields_changed_load_or_are_explained(folder, data, name):
    doc = data.draw(mutated(SHIPPED_DOCS[name], FIELD_VALUES, KEYS))
    path = scratch_file(folder / "d", "driver.toml")
    check_loaded(loads_or_explains(manifest.load_manifest, path, toml_document(doc).encode()))


def test_a_broken_manifest_among_good_ones_is_reported_and_skipped(tmp_path):
    good = 'id = "python-mine"\nlanguage = "python"\nlibrary = "m"\ndescription = "d"\nrun = ["x"]\ncapabilities = []\n'
    for name, data in {"good": good.encode(), "latin1": "description = 'caf\xe9'\n".encode("latin-1"),
                       "binary": bytes(range(256)), "empty": b"", "deep": b"a = " + b"[" * 5000}.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "driver.toml").write_bytes(data)
    (tmp_path / "folder" / "driver.toml").mkdir(parents=True)
    drivers, problems = manifest.discover([tmp_path])
    assert "python-mine" in [d.id for d in drivers]
    by_folder = {p.split("/driver.toml")[0].rsplit("/", 1)[-1]: p for p in problems}
    assert "not UTF-8" in by_folder["latin1"] and "not UTF-8" in by_folder["binary"]
    assert "empty" in by_folder["empty"] and "nested more than" in by_folder["deep"]
    assert "a folder, not a file" in by_folder["folder"]
