"""The shape of the bench server's answers, as a scenario asks for it: nginx's by default, the
minimal one with `[server] headers = "minimal"` (docs/scenarios.md, docs/bench-server.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clientlab import scenario
from clientlab.errors import LabInputError
from tests.support.fixtures import shipped

# the head of GET /bytes/1024's answer: nginx's (Debian 12's nginx 1.22.1 for the same file) and
# the minimal one (Content-Length, Content-Type, Date)
NGINX_HEAD, MINIMAL_HEAD = 254, 118


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "shaped.toml"
    path.write_text('description = "x"\n' + text + '[[requests]]\npath = "/bytes/1024"\n')
    return path


def test_answers_are_shaped_like_nginx_unless_the_scenario_asks_otherwise(tmp_path):
    assert shipped("get-small").server.headers == "nginx"
    minimal = scenario.load_file(write(tmp_path, '[server]\nheaders = "minimal"\n')).expand()
    assert minimal.server.headers == "minimal"


def test_an_unknown_shape_is_refused_naming_the_field(tmp_path):
    with pytest.raises(LabInputError, match=r"shaped\.toml.*server\.headers"):
        scenario.load_file(write(tmp_path, '[server]\nheaders = "apache"\n')).expand()


def test_the_minimal_shape_names_its_cells():
    base = shipped("get-small")
    assert base.with_server(headers=None) is base and base.with_server(headers="nginx") is base
    assert base.with_server(headers="minimal").label == "get-small[headers=minimal]"
    with pytest.raises(LabInputError, match="get-small"):
        base.with_server(headers="apache")


def test_each_trial_gets_the_head_its_scenario_asks_for(cell):
    # the same server serves both cells: a minimal cell's trials must not shape the next cell's
    for sc, head in ((shipped("get-small", count=20).with_server(headers="minimal"), MINIMAL_HEAD),
                     (shipped("get-small", count=20), NGINX_HEAD)):
        result, trials = cell("python-fake-reference", sc)
        assert result.status == "ok", result.reason
        for t in trials:
            assert t["server"]["bytes_out"] == 20 * (head + 1024), (sc.label, t["kind"], t["server"]["bytes_out"])


def test_run_asks_every_scenario_for_the_minimal_shape_and_names_its_cells(lab_home, tmp_path):
    from tests.cli.cli_test import TESTDRIVERS, clientlab

    out = tmp_path / "run.json"
    proc = clientlab("run", "--driver-path", str(TESTDRIVERS), "-d", "python-fake-reference", "-s", "get-small",
                     "-p", "count=5", "--trials", "1", "--warmup", "0", "--server-headers", "minimal",
                     "--json", str(out), home=lab_home)
    assert proc.returncode == 0, proc.stderr
    [cell] = json.loads(out.read_text())["cells"]
    assert cell["scenario"] == "get-small[headers=minimal]" and cell["status"] == "ok"
    # every trial (a disturbed one run again too) got the minimal head
    assert {t["server"]["bytes_out"] for t in cell["trials"]} == {5 * (MINIMAL_HEAD + 1024)}
