"""`clientlab store push`: finished runs copied once, whatever runs at once; clear words when the
team store cannot be used."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest
import sqlalchemy as sa

from clientlab.errors import LabError
from clientlab.store import Store
from clientlab.store import schema
from clientlab.store.push import push
from clientlab.store.schema import cells, runs, trials
from tests.store.testruns import MACHINE, copies, finished_run, template

CLI = [sys.executable, "-m", "clientlab"]


def _cli(tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "CLIENTLAB_HOME": str(tmp_path / "home"), "COLUMNS": "200"}
    env.pop("CLIENTLAB_STORE", None)
    env.pop("CLIENTLAB_TEAM_STORE", None)
    return subprocess.run([*CLI, *args], check=False, capture_output=True, text=True, env=env, timeout=300)


def _counts(store: Store) -> tuple[int, int, int]:
    with store.engine.connect() as conn:
        return tuple(conn.execute(sa.select(sa.func.count()).select_from(t)).scalar() for t in (runs, cells, trials))


def test_push_copies_finished_runs_once_and_skips_a_running_one(store_url, tmp_path):
    local = Store(tmp_path / "local.sqlite")
    done = [finished_run(local), finished_run(local, status="interrupted")]
    running = local.start_run(MACHINE, {})
    team = Store(store_url)
    first = push(local, team)
    assert (first.added, first.already, first.running) == (done, [], [running])
    assert push(local, team).summary() == "0 added, 2 already there, 1 skipped (running)"
    local.finish_run(running, "complete")
    assert push(local, team, [running]).added == [running] and _counts(team) == (3, 4, 12)


def test_store_push_on_the_command_line_says_what_it_did(store_url, tmp_path):
    local = tmp_path / "local.sqlite"
    finished_run(Store(local))
    pushed = _cli(tmp_path, "store", "push", "--from", str(local), "--to", store_url)
    assert pushed.returncode == 0 and "1 added, 0 already there, 0 skipped (running)" in pushed.stdout, pushed.stderr
    again = _cli(tmp_path, "store", "push", "last", "--from", str(local), "--to", store_url)
    assert "0 added, 1 already there" in again.stdout, again.stderr
    info = _cli(tmp_path, "store", "info", "--store", store_url)
    assert f"revision: {schema.HEAD}" in info.stdout and "runs:     1" in info.stdout and "clientlab-test" not in info.stdout
    shown = _cli(tmp_path, "show", "last", "--format", "json", "--store", store_url)
    assert shown.returncode == 0 and '"driver-1"' in shown.stdout, shown.stderr
    nowhere = _cli(tmp_path, "store", "push", "--from", str(local))
    assert nowhere.returncode != 0 and "give --to URL (or set $CLIENTLAB_TEAM_STORE)" in nowhere.stderr


@pytest.mark.xdist_group("postgres")
def test_four_hosts_pushing_100_runs_each_at_once_lose_nothing(pg_url, tmp_path):
    writers = []
    for n in range(4):
        local = Store(tmp_path / f"host{n}.sqlite")
        copies(local, template(local), 99)
        writers.append(tmp_path / f"host{n}.sqlite")
    per_host = _counts(Store(writers[0]))
    assert per_host == (100, 200, 600)
    Store(pg_url).close()  # the schema first: the four race over runs, not over creating tables
    env = {**os.environ, "CLIENTLAB_HOME": str(tmp_path / "home")}
    procs = [subprocess.Popen([*CLI, "store", "push", "--from", str(w), "--to", pg_url], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for w in writers]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, [e for _, e in outputs]
    assert all("100 added, 0 already there" in out for out, _ in outputs), outputs
    team = Store(pg_url)
    assert _counts(team) == (400, 800, 2400)
    local_uids = {Store(w).run(i)["uid"] for w in writers for i in Store(w).run_ids()}
    with team.engine.connect() as conn:
        assert set(conn.execute(sa.select(runs.c.uid)).scalars()) == local_uids
    assert sum(len(push(Store(w), team).added) for w in writers) == 0 and _counts(team) == (400, 800, 2400)


def test_an_unreachable_team_store_is_named_with_its_host_and_port(tmp_path):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(LabError, match=f"cannot reach PostgreSQL at 127.0.0.1:{port}"):
        Store(f"postgresql://lab@127.0.0.1:{port}/clientlab")
    failed = _cli(tmp_path, "runs", "--store", f"postgresql://lab:secret@127.0.0.1:{port}/clientlab")
    assert failed.returncode == 3 and f"127.0.0.1:{port}" in failed.stderr and "secret" not in failed.stderr


def test_a_team_store_that_never_answers_is_given_up_within_seconds():
    with socket.socket() as silent:  # accepts connections (the kernel does) and never says a word
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        started = time.monotonic()
        with pytest.raises(LabError, match=f"cannot reach PostgreSQL at 127.0.0.1:{silent.getsockname()[1]}"):
            Store(f"postgresql://lab@127.0.0.1:{silent.getsockname()[1]}/clientlab")
        assert time.monotonic() - started < 60  # the connect timeout (5 s), not TCP's minutes


@pytest.mark.xdist_group("postgres")
def test_a_refused_password_is_said_so(pg_cluster):
    with pytest.raises(LabError, match="refused user 'postgres'.*password authentication failed"):
        Store(pg_cluster.url("postgres", password="wrong"))
