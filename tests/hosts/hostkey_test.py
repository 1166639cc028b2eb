"""A host's SSH key is never accepted on the way: unknown and changed keys are refused with a
message that says which, and `hosts trust` records a key only with its fingerprint confirmed."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from clientlab.hosts import knownhosts, ssh
from tests.hosts.nshost import clientlab, keygen, trust, write_hosts_file

# namespace hosts hold the network lab's claim: on the worker that runs the network lab's tests
pytestmark = pytest.mark.xdist_group("netlab")


def ssh_keygen_fingerprint(public_key: Path) -> str:
    """The fingerprint as OpenSSH itself prints it (`ssh-keygen -l`), not as the lab computes it."""
    return subprocess.run(["ssh-keygen", "-lf", str(public_key)], capture_output=True, text=True,
                          check=True).stdout.split()[1]


def test_an_unknown_host_key_is_refused_and_says_run_hosts_trust(ns_host, tmp_path):
    hosts_file = write_hosts_file(tmp_path, ns_host.host())
    done = clientlab("hosts", "check", "--hosts", str(hosts_file))
    assert done.returncode == 1
    assert "not in the lab's known hosts" in done.stdout and "clientlab hosts trust nshost" in done.stdout
    assert knownhosts.recorded(tmp_path / "known_hosts", ns_host.host()) == [], "nothing accepted on the way"


def test_a_changed_host_key_is_refused_saying_it_changed(ns_host, tmp_path):
    known_hosts = tmp_path / "known_hosts"
    trust(ns_host, known_hosts)
    assert ssh.run(ns_host.host(), known_hosts, "echo reached").stdout == "reached\n"
    trusted = known_hosts.read_text()
    ns_host.new_host_key()
    with pytest.raises(ssh.HostError) as refused:
        ssh.run(ns_host.host(), known_hosts, "echo reached")
    assert refused.value.kind == "changed-key"
    assert "host key has CHANGED" in str(refused.value) and "REFUSED" in str(refused.value)
    done = clientlab("hosts", "check", "--hosts", str(write_hosts_file(tmp_path, ns_host.host())))
    assert done.returncode == 1 and "CHANGED" in done.stdout
    assert known_hosts.read_text() == trusted, "the new key was not recorded"


def test_hosts_trust_refuses_a_wrong_fingerprint_and_records_the_right_one(ns_host, tmp_path):
    hosts_file = write_hosts_file(tmp_path, ns_host.host())
    wrong = ssh_keygen_fingerprint(keygen(tmp_path / "another").with_suffix(".pub"))
    done = clientlab("hosts", "trust", "nshost", "--hosts", str(hosts_file), "--fingerprint", wrong)
    assert done.returncode == 1 and "NOT recorded" in done.stderr
    assert not (tmp_path / "known_hosts").exists()
    right = ssh_keygen_fingerprint(ns_host.host_key.with_suffix(".pub"))
    done = clientlab("hosts", "trust", "nshost", "--hosts", str(hosts_file), "--fingerprint", right)
    assert done.returncode == 0, done.stderr
    assert right in done.stdout and "recorded in" in done.stdout
    assert ssh.run(ns_host.host(), tmp_path / "known_hosts", "echo reached").stdout == "reached\n"


def test_hosts_trust_replacing_a_changed_key_says_it_changed(ns_host, tmp_path):
    hosts_file = write_hosts_file(tmp_path, ns_host.host())
    trust(ns_host, tmp_path / "known_hosts")
    ns_host.new_host_key()
    new = ssh_keygen_fingerprint(ns_host.host_key.with_suffix(".pub"))
    done = clientlab("hosts", "trust", "nshost", "--hosts", str(hosts_file), "--fingerprint", new)
    assert done.returncode == 0, done.stderr
    assert "its key has CHANGED" in done.stderr
    assert [k.fingerprint() for k in knownhosts.recorded(tmp_path / "known_hosts", ns_host.host())] == [new]


def test_hosts_trust_without_a_terminal_wants_the_fingerprint_given(ns_host, tmp_path):
    hosts_file = write_hosts_file(tmp_path, ns_host.host())
    done = clientlab("hosts", "trust", "nshost", "--hosts", str(hosts_file))
    assert done.returncode == 2 and "--fingerprint" in done.stderr
    assert not (tmp_path / "known_hosts").exists()


def test_a_key_the_host_does_not_authorize_is_an_auth_failure(ns_host, tmp_path):
    trust(ns_host, tmp_path / "known_hosts")
    stranger = ns_host.host(key=keygen(tmp_path / "stranger"))
    with pytest.raises(ssh.HostError) as refused:
        ssh.run(stranger, tmp_path / "known_hosts", "true")
    assert refused.value.kind == "auth" and "refused the lab's key" in str(refused.value)


def test_the_lab_computes_fingerprints_as_ssh_keygen_prints_them(tmp_path):
    public = keygen(tmp_path / "k").with_suffix(".pub")
    kind, blob = public.read_text().split()[:2]
    assert knownhosts.HostKey(kind, blob).fingerprint() == ssh_keygen_fingerprint(public)
