"""Drivers build on first use: set-up builds the default run's, a command builds the rest it needs."""

from __future__ import annotations

from pathlib import Path

from clientlab.drivers import build, manifest

MANIFEST = """\
id = "python-first-use"
language = "python"
library = "http.client"
description = "test driver: built by a command that needs it"
run = ["{here}/program"]
build = ["sh", "-c", "printf '#!/bin/sh\\\\n' > program && chmod +x program && echo once >> builds"]
capabilities = []
"""


def _driver(folder: Path) -> manifest.Driver:
    (folder / "driver.toml").write_text(MANIFEST)
    return manifest.load_manifest(folder / "driver.toml")


def test_a_driver_not_built_is_built_on_first_use_once_with_its_time(tmp_path, monkeypatch):
    monkeypatch.setenv("CLIENTLAB_HOME", str(tmp_path / "home"))
    folder = tmp_path / "driver"
    folder.mkdir()
    driver = _driver(folder)
    assert build.missing(driver) is not None and "not built" in build.missing(driver)
    said: list[str] = []
    build.on_first_use([driver], said.append)
    assert said[0] == "building python-first-use on first use …"
    assert said[1].startswith("python-first-use: built in ") and said[1].endswith(" s")
    assert build.missing(driver) is None
    build.on_first_use([driver], said.append)  # built: nothing to do, nothing said
    assert len(said) == 2 and (folder / "builds").read_text() == "once\n"


def test_a_failed_first_use_build_says_why_and_leaves_the_driver_not_installed(tmp_path, monkeypatch):
    monkeypatch.setenv("CLIENTLAB_HOME", str(tmp_path / "home"))
    folder = tmp_path / "driver"
    folder.mkdir()
    (folder / "driver.toml").write_text(MANIFEST.replace('echo once >> builds"', 'echo no compiler >&2; exit 3"'))
    driver = manifest.load_manifest(folder / "driver.toml")
    said: list[str] = []
    build.on_first_use([driver], said.append)
    assert said[1].startswith("python-first-use: build failed: build exited 3") and "no compiler" in said[1]
    assert build.missing(driver) is not None
