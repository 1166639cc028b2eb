"""`clientlab experiment … --on`: whole experiments shared out over namespace lab hosts (Debian's
sshd, Debian's redis-server as the broker), each stored here once with its findings section and
verdicts naming the host that measured it; what cannot go with --on is refused at once."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clientlab import paths
from clientlab.fleet.experiments import opening_line
from clientlab.fleet.batchrun import BATCH_DIR, batch_argv
from tests.fleet.fleet_test import _processes
from tests.hosts.nshost import trust, write_hosts_file
from tests.support import TESTDRIVERS


def _experiment(folder: Path, name: str, scenario: str) -> Path:
    """An experiment of one fake driver on two workloads (seconds in its quick form), with a claim."""
    folder.mkdir(exist_ok=True)
    path = folder / f"{name}.toml"
    path.write_text(f'title = "The fleet\'s test {name}"\nseed = "000"\narticle = "two workloads of a fake driver"\n'
                    '[[parts]]\nname = "small"\ndrivers = ["python-fake-reference"]\nscenarios = ["get-small"]\n'
                    'params = { count = 20 }\n'
                    f'[[parts]]\nname = "other"\ndrivers = ["python-fake-reference"]\nscenarios = ["{scenario}"]\n'
                    'params = { count = 20 }\n'
                    f'[[claims]]\nsays = "{name}: the small GET runs alike"\ncheck = "similar"\na = {{ part = "small" }}\n')
    return path


def _cli(home: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    env = {**os.environ, "CLIENTLAB_HOME": str(home), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "clientlab", "experiment", *args], check=False, capture_output=True,
                          text=True, env=env, timeout=timeout, cwd=paths.ROOT)


def _runs(home: Path) -> list[dict]:
    with sqlite3.connect(home / "results.sqlite") as db:
        db.row_factory = sqlite3.Row
        rows = db.execute("SELECT r.uid, r.status, r.config, COUNT(c.id) AS cells FROM runs r "
                          "LEFT JOIN cells c ON c.run_id = r.id GROUP BY r.id ORDER BY r.id").fetchall()
    return [{**dict(r), "config": json.loads(r["config"])} for r in rows]


@pytest.mark.xdist_group("netlab")
def test_experiments_over_two_lab_hosts_are_stored_once_with_findings_here_naming_each_host(
        ns_hosts, lab_home, tmp_path):
    made = [ns_hosts() for _ in range(2)]
    hosts_file = write_hosts_file(tmp_path, *(h.host(name=f"lab{n}") for n, h in enumerate(made, start=1)))
    for h in made:
        trust(h, tmp_path / "known_hosts")
    folder = tmp_path / "experiments"
    _experiment(folder, "tiny-a", "post-form")
    _experiment(folder, "tiny-b", "get-small")
    findings = tmp_path / "findings.md"
    checkout_findings = paths.ROOT / "docs" / "findings.md"
    done = _cli(lab_home, "all", "--on", "lab1,lab2", "--hosts", str(hosts_file), "--experiment-path", str(folder),
                "--quick", "--driver-path", str(TESTDRIVERS), "--findings", str(findings))
    assert done.returncode == 0, done.stdout + done.stderr
    runs = _runs(lab_home)
    assert len(runs) == 2 and len({r["uid"] for r in runs}) == 2, "each experiment stored once"
    assert {r["status"] for r in runs} == {"complete"} and {r["cells"] for r in runs} == {2}
    host_of = {r["config"]["experiment"]: r["config"]["fleet"]["host"] for r in runs}
    assert set(host_of) == {"tiny-a", "tiny-b"} and set(host_of.values()) == {"lab1", "lab2"}, host_of
    assert all(r["config"]["quick"] for r in runs), "the options given here were passed on to the batch"
    text = findings.read_text()
    for name, host in host_of.items():
        section = text.split(f"<!-- experiment:{name} start -->")[1].split(f"<!-- experiment:{name} end -->")[0]
        assert f"on lab host {host}: " in section and f"{name}: the small GET runs alike" in section
        assert f"{name}: the article's claims (run" in done.stdout and f"measured on lab host {host})" in done.stdout
        assert f"{name}: measured on {host}, run" in done.stderr
    assert "each measured whole by one host" in done.stderr
    # the batches wrote their own findings in their folders, never into the checkout (which the namespace hosts share)
    assert "experiment:tiny-a" not in (checkout_findings.read_text() if checkout_findings.exists() else "")


@pytest.mark.xdist_group("netlab")
def test_an_experiment_whose_only_host_is_lost_is_stored_as_failed_cells_with_its_findings_section(
        ns_hosts, lab_home, tmp_path):
    (made,) = [ns_hosts()]
    hosts_file = write_hosts_file(tmp_path, made.host(name="lab1"))
    trust(made, tmp_path / "known_hosts")
    path = _experiment(tmp_path / "experiments", "tiny", "post-form")
    findings = tmp_path / "findings.md"
    env = {**os.environ, "CLIENTLAB_HOME": str(lab_home), "COLUMNS": "200"}
    proc = subprocess.Popen([sys.executable, "-m", "clientlab", "experiment", "tiny", "--on", "lab1", "--hosts",
                             str(hosts_file), "--experiment-path", str(path), "--quick", "--trials", "50",
                             "--driver-path", str(TESTDRIVERS), "--findings", str(findings)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=paths.ROOT)
    deadline = time.monotonic() + 60
    while not _processes(made, b"clientlab", b"experiment") and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    (worker,) = _processes(made, b"clientlab", b"worker")
    assert _processes(made, b"clientlab", b"experiment"), "the batch never started on lab1"
    os.kill(worker, signal.SIGKILL)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 1, stdout + stderr
    assert "lab1: its session ended" in stderr and "FAILED on every host" in stderr
    assert "tiny: no host measured it" in stderr
    (run,) = _runs(lab_home)
    assert run["status"] == "failed" and run["cells"] == 2 and run["config"]["fleet"]["host"] is None
    text = findings.read_text()
    assert "<!-- experiment:tiny start -->" in text and "The run did not finish (failed)" in text
    assert "failed on every host: lab1: lost mid-batch" in text


@pytest.mark.parametrize("args, says", [
    (["--server-host", "srv"], "--server-host cannot go with --on"),
    (["--driver-path", "{tmp}"], "outside the clientlab checkout, so a lab host would not have it"),
])
def test_what_a_lab_host_would_not_have_is_refused_with_on(lab_home, tmp_path, args, says):
    path = _experiment(tmp_path / "experiments", "tiny", "post-form")
    done = _cli(lab_home, "tiny", "--on", "lab1", "--experiment-path", str(path),
                *(a.replace("{tmp}", str(tmp_path)) for a in args), timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert says in done.stderr and "Traceback" not in done.stderr


def test_one_experiment_over_several_hosts_says_one_host_measures_it():
    one = opening_line("f" * 32, ["tiny"], ["lab1", "lab2", "lab3"], "results.sqlite")
    assert "1 experiment(s) (tiny) on lab1, lab2, lab3: one host measures it; 2 host(s) stand by" in one
    two = opening_line("f" * 32, ["a", "b"], ["lab1", "lab2"], "results.sqlite")
    assert "each measured whole by one host, one at a time a host" in two and "stand by" not in two


def test_a_batch_writes_its_files_into_its_folder_and_runs_only_a_clientlab_measuring_command(tmp_path):
    batch = {"command": "experiment", "args": ["tiny", "--experiment-path", f"{BATCH_DIR}/tiny.toml"],
             "files": {"../../escape/tiny.toml": "title = 't'\n"}}
    argv = batch_argv(batch, tmp_path)
    assert argv[-4:] == ["experiment", "tiny", "--experiment-path", f"{tmp_path}/tiny.toml"]
    assert (tmp_path / "tiny.toml").read_text() == "title = 't'\n", "written by its bare name, inside the folder"
    assert batch_argv({"args": ["-d", "x"]}, tmp_path)[-3:] == ["run", "-d", "x"], "a batch of `run --on` as before"
    with pytest.raises(ValueError, match="not 'worker'"):
        batch_argv({"command": "worker", "args": []}, tmp_path)
