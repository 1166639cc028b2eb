"""Runtime lines: asked for by name, pinned, each its own driver id, build and environment."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from clientlab import paths
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


ALSO_ON = MANIFEST.replace('runtime = "node"\n', 'runtime = "node"\nalso_on = ["bun", "deno"]\n')


@pytest.fixture
def js_driver(tmp_path: Path) -> manifest.Driver:
    (tmp_path / "driver.toml").write_text(ALSO_ON)
    return manifest.load_manifest(tmp_path / "driver.toml")


def test_bun_and_deno_are_pinned_to_exact_releases_of_their_npm_packages():
    for kind in ("bun", "deno"):
        pinned = runtimes.lines(kind)
        assert pinned, f"no {kind} line pinned"
        for line, version in pinned.items():
            assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"{kind} {line}: {version!r} is not an exact release"
            assert version.startswith(line + "."), f"{kind} line {line} pins {version}, a release of another line"


def test_one_js_spec_names_lines_of_node_bun_and_deno(js_driver):
    chosen = runtimes.parse(["js=node24,bun,deno"])
    assert [r.label for rs in chosen.values() for r in rs] == [
        "node24", f"bun{next(iter(runtimes.lines('bun')))}", f"deno{next(iter(runtimes.lines('deno')))}"]
    cells = manifest.on_runtimes([js_driver], chosen)
    assert [d.id for d in cells] == [f"node-mine@{r.label}" for rs in chosen.values() for r in rs]
    with pytest.raises(LabInputError, match="'ruby' names no JavaScript runtime"):
        runtimes.parse(["js=node24,ruby"])
    with pytest.raises(LabInputError, match="node 19 is not pinned"):
        runtimes.parse(["js=node19"])


def test_a_node_program_on_bun_or_deno_is_started_by_that_runtime_s_binary(js_driver):
    bun, deno = (runtimes.parse([f"{k}={next(iter(runtimes.lines(k)))}"])[k][0] for k in ("bun", "deno"))
    on_bun, on_deno = js_driver.on(bun), js_driver.on(deno)
    assert on_bun.argv[0] == str(bun.executable) and on_bun.argv[1].endswith("/driver.mjs")
    assert on_deno.argv[:3] == [str(deno.executable), "run", "--allow-all"]
    assert on_bun.env()["PATH"].startswith(f"{bun.executable.parent}:")
    assert js_driver.argv[0] == "node"   # the default line: the node on PATH that line puts first
    assert manifest.variant({js_driver.id: js_driver}, on_deno.id) == on_deno


def test_only_a_driver_that_says_also_on_runs_on_bun(driver):
    with pytest.raises(LabInputError, match="none of the chosen drivers runs on bun"):
        manifest.on_runtimes([driver], runtimes.parse([f"bun={next(iter(runtimes.lines('bun')))}"]))


def test_also_on_is_for_node_drivers(tmp_path):
    (tmp_path / "driver.toml").write_text(ALSO_ON.replace('runtime = "node"', 'runtime = "go"'))
    with pytest.raises(LabInputError, match="also_on.*runtime = \"node\""):
        manifest.load_manifest(tmp_path / "driver.toml")


@pytest.mark.parametrize("kind", ["bun", "deno"])
def test_the_pinned_build_installs_under_the_lab_s_home_and_is_that_release(kind):
    """A real install from the npm registry (cached: later runs find it in the lab's home)."""
    runtime = runtimes.parse([f"{kind}={next(iter(runtimes.lines(kind)))}"])[kind][0]
    said = runtime.install()
    assert said == "present" or said.startswith("installed in ")
    assert runtime.missing() is None and runtime.home.is_relative_to(paths.lab_home())
    shown = subprocess.run([str(runtime.executable), "--version"], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and runtime.version in shown.stdout.split("\n")[0]
