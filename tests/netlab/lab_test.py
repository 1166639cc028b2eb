"""The network lab, for real: namespaces, lab DNS, shaped links, the latency proxy, clean-up.

Needs root (as the lab's set-up and CI run); elsewhere these are skipped with the reason.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clientlab.analysis.stats import StopRule
from clientlab.netlab import namespaces, probe
from clientlab.netlab import profile as netprofile
from clientlab.netlab.lab import NetLab
from clientlab.runner import CellRunner, RunOptions
from tests.support.cli import sigint_as_ctrl_c
from tests.support.fixtures import shipped

# the lab's RTT and rates are measured: run alone (test.sh)
pytestmark = [pytest.mark.serial,
              pytest.mark.skipif(namespaces.why_unavailable() is not None, reason=str(namespaces.why_unavailable()))]


def lab_processes() -> list[str]:
    names = ("clientlab-dns", "toxiproxy-server", "dnsmasq", "clientlab-server", "clientlab-link")
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if any(n in line for n in names) and "10.77." in line]


def nothing_left() -> list[str]:
    left = [ns for ns in namespaces.namespaces() if ns.startswith(namespaces.PREFIX)]
    if subprocess.run(["ip", "link", "show", namespaces.LAB_DEV], capture_output=True).returncode == 0:
        left.append(namespaces.LAB_DEV)
    return left + lab_processes()


def profile(**settings) -> netprofile.Profile:
    return netprofile.Profile(name="test", description="test", **settings)


def test_a_get_over_a_50ms_profile_takes_50_to_60_ms():
    with NetLab(netprofile.get("wan-50ms")) as lab:
        rtt = probe.measure("rtt", lab.endpoint.host, lab.endpoint.http_port, 10)
        offered_h3 = lab.endpoint.h3_port
    assert 50 <= rtt < 60, f"a GET took {rtt:.1f} ms"
    assert offered_h3 == 0, "HTTP/3 would bypass the TCP latency proxy: the lab must not offer it"


def test_the_dns_counter_counts_a_lookup_from_the_client_namespace():
    with NetLab(profile()) as lab:
        lab.reset()
        subprocess.run([*namespaces.in_ns(namespaces.CLIENT_NS), "getent", "ahostsv4", "h7.lab.test"], check=True,
                       capture_output=True)
        counters = lab.dns.counters()
    assert counters["by_name"].get("h7.lab.test.", 0) >= 1


def test_the_client_host_reuses_time_wait_ports_as_loopback_does():
    # without it, thousands of short connections make connect() slow for the cells that follow
    with NetLab(profile()):
        out = subprocess.run([*namespaces.in_ns(namespaces.CLIENT_NS), "sysctl", "-n", "net.ipv4.tcp_tw_reuse"],
                             capture_output=True, text=True, check=True).stdout
    assert out.strip() == "1"


def test_dns_cache_answers_repeated_lookups_without_the_lab_dns():
    with NetLab(profile(dns_cache=True)) as lab:
        lab.reset()
        for _ in range(5):
            subprocess.run([*namespaces.in_ns(namespaces.CLIENT_NS), "getent", "ahostsv4", "h9.lab.test"], check=True,
                           capture_output=True)
        assert lab.dns.counters()["by_name"] == {"h9.lab.test.": 1}  # one lookup reached it; the cache answered the rest


@pytest.mark.parametrize("rate_mbit", [1000, 100])
def test_a_shaped_link_caps_a_100mb_download_within_10_percent(rate_mbit):
    with NetLab(profile(rate_mbit=rate_mbit)) as lab:
        got = probe.measure("download", lab.endpoint.host, lab.endpoint.http_port, 100_000_000)
    assert abs(got - rate_mbit) <= 0.10 * rate_mbit, f"{got:.0f} Mbit/s on a {rate_mbit} Mbit/s link"


def test_a_driver_runs_in_the_client_namespace_by_host_name(store, test_drivers):
    with NetLab(profile()) as lab:
        run_id = store.start_run({}, {})
        options = RunOptions(warmup=0, stop=StopRule(min_trials=1, max_trials=1), placement="free")
        result = CellRunner(lab, store, run_id, options).run_cell(test_drivers["python-fake-reference"],
                                                                  shipped("get-small", count=20))
        trials = store.trials(store.cells(run_id)[-1]["id"])
    assert result.status == "ok", result.reason
    assert all(t["server"]["dns"]["queries"] >= 1 for t in trials)
    assert nothing_left() == []


def _cli(*args: str, home: Path) -> subprocess.Popen:
    """`clientlab ARGS` with a data directory of the test's (lab_home: its own store, a private run lock)."""
    env = {**os.environ, "CLIENTLAB_HOME": str(home)}
    return subprocess.Popen([sys.executable, "-m", "clientlab", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=sigint_as_ctrl_c)


def test_nothing_is_left_after_a_run(lab_home):
    proc = _cli("run", "--net", "netns", "--driver-path", "tests/testdrivers", "-d", "python-fake-reference",
                "-s", "get-small", "-p", "count=10", "--trials", "1", "--warmup", "0", home=lab_home)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "measured RTT" in err
    assert nothing_left() == []


def test_net_clean_leaves_a_live_network_lab_alone_and_names_who_holds_it(lab_home):
    with NetLab(profile()):
        proc = _cli("net", "clean", home=lab_home)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 75, err
        assert "another measuring run holds the network lab: pid" in err and "nothing removed" in err
        assert namespaces.CLIENT_NS in namespaces.namespaces()   # the live lab's hosts are still there
    assert nothing_left() == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_nothing_is_left_after_an_interrupted_run(sig, lab_home):
    proc = _cli("run", "--net", "dns-slow-cached", "--driver-path", "tests/testdrivers", "-d",
                "python-fake-sleep", "-s", "get-small", "-p", "count=10", "--trials", "5", "--warmup", "0",
                home=lab_home)
    deadline = time.monotonic() + 60
    while namespaces.CLIENT_NS not in namespaces.namespaces() or not lab_processes():
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.1)
    time.sleep(1.0)
    proc.send_signal(sig)
    proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert nothing_left() == []


def test_a_killed_runs_leftovers_are_removed_when_the_next_starts(lab_home):
    proc = _cli("run", "--net", "netns", "--driver-path", "tests/testdrivers", "-d", "python-fake-sleep",
                "-s", "get-small", "-p", "count=10", "--trials", "5", "--warmup", "0", home=lab_home)
    deadline = time.monotonic() + 60
    while not lab_processes():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.1)
    time.sleep(1.0)
    proc.kill()
    proc.wait()
    with NetLab(profile()) as lab:
        assert namespaces.CLIENT_NS in lab.leftovers
    assert nothing_left() == []
