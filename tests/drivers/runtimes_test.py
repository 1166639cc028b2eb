"""Runtime lines: asked for by name, pinned, each its own driver id, build and environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from clientlab.drivers import build, manifest, runtimes
from clientlab.errors import LabInputError

MANIFEST = '''id = "node-mine"
language = "node"
library = "mine"
description = "d"
run = ["node", "{here}/driver.mjs", "{here}/out{variant}"]
build = ["true"]
runtime = "node"
capabilities = ["tls"]
'''


@pytest.fixture
def driver(tmp_path: Path) -> manifest.Driver:
    (tmp_path / "driver.toml").write_text(MANIFEST)
    return manifest.load_manifest(tmp_path / "driver.toml")


def test_lines_asked_for_become_their_own_drivers_with_their_own_builds(driver):
    chosen = runtimes.parse(["node=20,22", "node=22"])
    variants = manifest.on_runtimes([driver], chosen)
    assert [d.id for d in variants] == ["node-mine@node20", "node-mine@node22"]
    assert variants[0].argv[-1].endswith("/out-node20") and driver.argv[-1].endswith("/out")
    assert build.fingerprint(variants[0]) != build.fingerprint(variants[1])
    node20 = variants[0].env()
    assert node20 is not None and node20["PATH"].startswith(str(variants[0].runtime.node_bin) + ":")


def test_a_driver_without_a_variant_runs_on_its_kind_s_default_line(driver):
    assert driver.runtime == runtimes.default("node")
    assert driver.id == "node-mine"


def test_unknown_kinds_and_unpinned_lines_are_refused_with_what_is_pinned():
    with pytest.raises(LabInputError, match="unknown runtime 'ruby'"):
        runtimes.parse(["ruby=3.3"])
    with pytest.raises(LabInputError, match="node '19' is not pinned.*pinned: 20"):
        runtimes.parse(["node=19"])
    with pytest.raises(LabInputError, match="KIND=LINE"):
        runtimes.parse(["node"])


def test_a_kind_no_chosen_driver_runs_on_is_an_error(driver):
    with pytest.raises(LabInputError, match="none of the chosen drivers runs on go"):
        manifest.on_runtimes([driver], runtimes.parse(["go=1.26"]))


def test_go_and_python_lines_reach_the_build_through_its_environment():
    go = runtimes.parse(["go=1.26"])["go"][0]
    python = runtimes.parse(["python=3.12"])["python"][0]
    assert go.env({})["GOTOOLCHAIN"] == f"go{go.version}"
    assert python.env({})["CLIENTLAB_PYTHON"].endswith(f"/{python.version}/bin/python3.12")


def test_a_cell_s_driver_id_names_its_runtime_line_and_resolves_back(driver):
    known = {driver.id: driver}
    assert manifest.variant(known, "node-mine") is driver
    on22 = manifest.variant(known, "node-mine@node22")
    assert on22 is not None and on22.runtime == runtimes.parse(["node=22"])["node"][0]
    assert manifest.variant(known, "node-mine@node19") is None   # not pinned
    assert manifest.variant(known, "node-mine@go1.26") is None   # another runtime
    assert manifest.variant(known, "node-other@node22") is None
