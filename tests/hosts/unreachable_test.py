"""A host that cannot be reached is a clear error within 10 s, whatever the reason."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from clientlab.hosts import ssh
from clientlab.hosts.hostsfile import Host
from tests.hosts.nshost import clientlab, write_hosts_file

# namespace hosts hold the network lab's claim: on the worker that runs the network lab's tests
pytestmark = pytest.mark.xdist_group("netlab")

LIMIT_S = 10   # the requirement


def check_timed(tmp_path: Path, host: Host) -> tuple[subprocess.CompletedProcess, float]:
    hosts_file = write_hosts_file(tmp_path, host)
    started = time.monotonic()
    done = clientlab("hosts", "check", "--hosts", str(hosts_file))
    return done, time.monotonic() - started


def test_an_address_nobody_answers_on_is_unreachable_within_10_s(ns_hosts, tmp_path):
    silent = ns_hosts(with_address=False, sshd=False)
    done, seconds = check_timed(tmp_path, silent.host())
    assert done.returncode == 1
    assert f"unreachable within {ssh.CONNECT_TIMEOUT_S} s" in done.stdout, done.stdout
    assert seconds < LIMIT_S


def test_a_closed_port_is_unreachable_within_10_s(ns_hosts, tmp_path):
    closed = ns_hosts(sshd=False)
    done, seconds = check_timed(tmp_path, closed.host())
    assert done.returncode == 1
    assert "connection refused: nothing listens on port 22" in done.stdout, done.stdout
    assert seconds < LIMIT_S


def test_a_host_that_takes_the_connection_and_never_speaks_is_unreachable_within_10_s(ns_hosts, tmp_path):
    hung = ns_hosts(sshd=False)
    listener = subprocess.Popen(
        ["ip", "netns", "exec", hung.name, sys.executable, "-c",
         "import socket, sys, time; s = socket.create_server((sys.argv[1], 22)); print(flush=True); time.sleep(60)",
         hung.address], stdout=subprocess.PIPE)
    try:
        listener.stdout.readline()
        done, seconds = check_timed(tmp_path, hung.host())
    finally:
        listener.kill()
        listener.wait()
    assert done.returncode == 1
    assert "no SSH server spoke" in done.stdout, done.stdout
    assert seconds < LIMIT_S
