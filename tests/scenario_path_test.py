"""--scenario-path: a user's own workloads load from their folder with the same validation as
the shipped ones; a missing folder or a name that clashes is a clear error; a broken file in it
is reported and skipped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clientlab import paths, scenario
from clientlab.errors import LabInputError
from tests.support.cli import QUICK, lab  # noqa: F401 - the fixture

MINE = '''description = "my own workload: GETs of a small body"
[params]
count = 10
size = "2KiB"
[[requests]]
path = "/bytes/{size:bytes}"
repeat = "{count}"
'''


@pytest.fixture
def mine(tmp_path) -> Path:
    folder = tmp_path / "my-scenarios"
    folder.mkdir()
    (folder / "my-gets.toml").write_text(MINE)
    return folder


def test_a_users_folder_loads_beside_the_shipped_scenarios(mine):
    files, problems = scenario.discover(extra_paths=[mine])
    names = [f.name for f in files]
    assert problems == [] and "my-gets" in names and "get-small" in names
    s = scenario.select(files, ["my-gets"], scenario.parse_overrides(["count=3"]))[0]
    assert s.requests[0].path == "/bytes/2048" and s.total_requests == 3


def test_a_users_scenario_is_validated_like_a_shipped_one(mine):
    (mine / "bad.toml").write_text(MINE.replace('path = "/bytes/{size:bytes}"', 'path = "//example.com/x"'))
    (mine / "latin.toml").write_bytes(b'description = "caf\xe9"\n')
    files, problems = scenario.discover(extra_paths=[mine])
    assert "my-gets" in [f.name for f in files]
    assert any("bad.toml: field 'requests.0.path'" in p and "another host" in p for p in problems)
    assert any("latin.toml: cannot read scenario: not UTF-8" in p for p in problems)


def test_a_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(LabInputError, match=r"--scenario-path .*nope: no such folder"):
        scenario.discover(extra_paths=[tmp_path / "nope"])
    (tmp_path / "file.toml").write_text(MINE)
    with pytest.raises(LabInputError, match="not a folder"):
        scenario.use_paths([tmp_path / "file.toml"])


def test_a_name_that_clashes_with_another_scenario_is_a_clear_error(mine):
    (mine / "get-small.toml").write_text(MINE)
    with pytest.raises(LabInputError) as info:
        scenario.discover(extra_paths=[mine])
    message = str(info.value)
    assert "scenario 'get-small' is defined twice" in message
    assert str(paths.scenarios_dir() / "get-small.toml") in message and str(mine / "get-small.toml") in message


def test_the_shipped_folder_given_again_is_no_clash(mine):
    files, _ = scenario.discover(extra_paths=[paths.scenarios_dir(), mine, mine])
    assert len([f for f in files if f.name == "get-small"]) == 1


def test_scenarios_and_run_take_the_users_folder(lab, mine):
    listed = lab.run("scenarios", "--json", "--scenario-path", str(mine))
    assert listed.returncode == 0, listed.stderr
    rows = {r["name"]: r for r in json.loads(listed.stdout)["scenarios"]}
    assert rows["my-gets"]["params"] == {"count": 10, "size": "2KiB"}
    run = lab.run("run", *QUICK, "--scenario-path", str(mine), "-s", "my-gets", "--format", "json")
    assert run.returncode == 0, run.stderr
    [cell] = json.loads(run.stdout)["cells"]
    assert (cell["scenario"], cell["status"]) == ("my-gets", "ok")


def test_a_missing_scenario_folder_on_the_command_line_exits_2(lab, tmp_path):
    for command in (["scenarios"], ["run", *QUICK], ["experiment", "--list"]):
        proc = lab.run(*command, "--scenario-path", str(tmp_path / "nope"))
        assert proc.returncode == 2 and "nope: no such folder" in proc.stderr, (command, proc.stderr)


def test_experiment_list_takes_the_users_folder(lab, mine):
    proc = lab.run("experiment", "--list", "--scenario-path", str(mine))
    assert proc.returncode == 0, proc.stderr
    assert "perl-clients" in proc.stdout
