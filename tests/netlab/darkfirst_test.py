"""The dark-first host name's namespace (netlab/darkfirst.py): the resolver gives the dark
address first, a connect to it gets no answer and is counted, the bench server answers on the
second address, and nothing is left after.

The namespace tests need root (as the lab's set-up and CI run); elsewhere they are skipped with
the reason."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from clientlab.netlab import darkfirst, namespaces
from tests.support.netlab import leftovers

needs_namespaces = pytest.mark.skipif(namespaces.why_unavailable() is not None, reason=str(namespaces.why_unavailable()))
on_the_netlab = pytest.mark.xdist_group("netlab")   # the namespaces hold the network lab's claim


def test_the_hosts_file_keeps_the_machines_names_and_lists_the_dark_address_first():
    machine = "127.0.0.1 localhost\n10.0.0.9 buildhost\n10.1.1.1 dark-first.lab.test  # an old entry\n"
    lines = darkfirst.hosts_file(machine).splitlines()
    assert "10.0.0.9 buildhost" in lines and "10.1.1.1 dark-first.lab.test  # an old entry" not in lines
    named = [line.split()[0] for line in lines if line.endswith(darkfirst.HOST) and not line.startswith("#")]
    assert named == [darkfirst.DARK_IP, darkfirst.SERVER_IP]


def in_namespace(*argv: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([*namespaces.in_ns(namespaces.CLIENT_NS), *argv], capture_output=True, text=True,
                          timeout=timeout)


@needs_namespaces
@on_the_netlab
def test_getaddrinfo_gives_the_dark_address_first_and_only_the_second_answers():
    machine_hosts = Path("/etc/hosts").read_text()
    with darkfirst.DarkFirstHost() as lab:
        assert lab.server is not None
        port = lab.server.info["fault_a"]
        # glibc's getaddrinfo, sorted by RFC 6724 (its rule 9 too), as most drivers' resolvers get it
        order = in_namespace(sys.executable, "-c", "import socket; print(' '.join(a[4][0] for a in socket.getaddrinfo("
                             f"'{darkfirst.HOST}', {port}, type=socket.SOCK_STREAM)))")
        assert order.stdout.split() == [darkfirst.DARK_IP, darkfirst.SERVER_IP], order.stderr
        assert lab.dark_packets() == 0
        dark = in_namespace(sys.executable, "-c", "import socket; socket.create_connection("
                            f"('{darkfirst.DARK_IP}', {port}), timeout=0.5)")
        assert "timed out" in dark.stderr   # no answer, no refusal: the SYN vanished
        assert lab.dark_packets() >= 1
        second = in_namespace(sys.executable, "-c", "import urllib.request; print(urllib.request.urlopen("
                              f"'http://{darkfirst.SERVER_IP}:{port}/fault/landing', timeout=10).status)")
        assert second.stdout.strip() == "200", second.stderr
        assert Path("/etc/hosts").read_text() == machine_hosts   # the name is the namespace's alone
    assert leftovers() == []


def test_the_v6_hosts_file_lists_the_ipv4_address_first():
    lines = darkfirst.hosts_file("127.0.0.1 localhost\n", v6=True).splitlines()
    named = [line.split()[0] for line in lines if line.endswith(darkfirst.HOST) and not line.startswith("#")]
    assert named == [darkfirst.SERVER_IP, darkfirst.DARK_IP6]


@needs_namespaces
@on_the_netlab
def test_rfc_6724_puts_the_dark_ipv6_address_first_and_only_the_ipv4_one_answers():
    with darkfirst.DarkFirstHost(v6=True) as lab:
        assert lab.server is not None
        port = lab.server.info["fault_a"]
        # the file lists the IPv4 address first: glibc's sort (precedence 40 against 35, the IPv6
        # destination usable from the namespace's global source) puts the IPv6 one first
        order = in_namespace(sys.executable, "-c", "import socket; print(' '.join(a[4][0] for a in socket.getaddrinfo("
                             f"'{darkfirst.HOST}', {port}, type=socket.SOCK_STREAM)))")
        assert order.stdout.split() == [darkfirst.DARK_IP6, darkfirst.SERVER_IP], order.stderr
        assert lab.dark_packets() == 0   # the dark end sends nothing of its own (no RS, DAD, MLD)
        dark = in_namespace(sys.executable, "-c", "import socket; socket.create_connection("
                            f"('{darkfirst.DARK_IP6}', {port}), timeout=0.5)")
        assert "timed out" in dark.stderr
        assert lab.dark_packets() >= 1
        second = in_namespace(sys.executable, "-c", "import urllib.request; print(urllib.request.urlopen("
                              f"'http://{darkfirst.SERVER_IP}:{port}/fault/landing', timeout=10).status)")
        assert second.stdout.strip() == "200", second.stderr
    assert leftovers() == []


@needs_namespaces
@on_the_netlab
def test_nothing_is_left_when_the_set_up_fails_half_way(monkeypatch):
    def broken_server(**_kw):
        raise RuntimeError("the bench server would not start")

    monkeypatch.setattr(darkfirst, "BenchServer", broken_server)
    with pytest.raises(RuntimeError):
        darkfirst.DarkFirstHost()
    assert leftovers() == []
