"""The hosts file: read as the lab's other data files are, a wrong field named with its file."""

from __future__ import annotations

from pathlib import Path

import pytest

from clientlab import paths
from clientlab.errors import LabInputError
from clientlab.hosts import hostsfile
from tests.hosts.nshost import clientlab


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "hosts.toml"
    path.write_text(text)
    return path


def problems(path: Path) -> str:
    with pytest.raises(LabInputError) as refused:
        hostsfile.load(path)
    return str(refused.value)


def test_a_broken_hosts_file_is_refused_naming_the_file_and_field(tmp_path):
    path = write(tmp_path, '[[hosts]]\nname = "a"\naddress = "10.0.0.1"\nkey = "k"\nport = 70000\n')
    done = clientlab("hosts", "list", "--hosts", str(path))
    assert done.returncode == 2
    assert f"{path}: field 'hosts.0.port'" in done.stderr


def test_each_wrong_field_is_named(tmp_path):
    path = write(tmp_path, '[[hosts]]\nname = "a"\naddress = "-oProxyCommand=x"\nkey = "k"\nroles = ["lab", "db"]\n'
                           'lab_dir = "relative"\ncolour = "red"\n')
    said = problems(path)
    for field in ("hosts.0.address", "hosts.0.roles.1", "hosts.0.lab_dir", "hosts.0.colour"):
        assert f"{path}: field '{field}'" in said
    assert "'-oProxyCommand=x' is not a host name or IP address" in said


def test_two_hosts_of_one_name_are_refused(tmp_path):
    host = '[[hosts]]\nname = "a"\naddress = "10.0.0.1"\nkey = "k"\n'
    assert "host name 'a' appears twice" in problems(write(tmp_path, host + host))


def test_a_missing_hosts_file_says_how_to_name_one(tmp_path):
    assert "no hosts file here" in problems(tmp_path / "nope.toml")
    assert "--hosts FILE" in problems(tmp_path / "nope.toml")


def test_defaults_and_paths_relative_to_the_file(tmp_path):
    hosts = hostsfile.load(write(tmp_path, 'known_hosts = "kh"\n[[hosts]]\nname = "a"\naddress = "h.lab"\nkey = "keys/a"\n'))
    (host,) = hosts.hosts
    assert (host.port, host.user, host.roles, host.lab_dir) == (22, "root", ("server", "lab"), paths.ROOT)
    assert host.key == tmp_path / "keys/a" and hosts.known_hosts_path() == tmp_path / "kh"
    assert host.known_hosts_name() == "h.lab" and host.model_copy(update={"port": 2222}).known_hosts_name() == "[h.lab]:2222"


def test_the_known_hosts_file_is_the_labs_own_unless_named(tmp_path, monkeypatch):
    monkeypatch.setenv("CLIENTLAB_HOME", str(tmp_path / "home"))
    hosts = hostsfile.load(write(tmp_path, '[[hosts]]\nname = "a"\naddress = "h.lab"\nkey = "k"\n'))
    assert hosts.known_hosts_path() == tmp_path / "home" / "known_hosts"


def test_the_hosts_file_is_the_option_else_the_environment_else_the_labs(tmp_path, monkeypatch):
    monkeypatch.setenv("CLIENTLAB_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(hostsfile.HOSTS_ENV, raising=False)
    assert hostsfile.chosen_path(None) == tmp_path / "home" / "hosts.toml"
    monkeypatch.setenv(hostsfile.HOSTS_ENV, str(tmp_path / "env.toml"))
    assert hostsfile.chosen_path(None) == tmp_path / "env.toml"
    assert hostsfile.chosen_path(tmp_path / "opt.toml") == tmp_path / "opt.toml"


def test_an_unknown_host_name_lists_the_known_ones(tmp_path):
    hosts = hostsfile.load(write(tmp_path, '[[hosts]]\nname = "a"\naddress = "h.lab"\nkey = "k"\n'))
    with pytest.raises(LabInputError, match=r"no host named 'b' \(hosts: a\)"):
        hosts.select(["b"])
