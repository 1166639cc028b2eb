"""TCP's congestion control in the lab's namespaces: the profile's, never the machine's by accident.

The namespace tests need root (as the lab's set-up and CI run); elsewhere they are skipped with
the reason.
"""

from __future__ import annotations

import subprocess

import pytest

from clientlab.errors import LabError, LabInputError
from clientlab.netlab import namespaces
from clientlab.netlab import profile as netprofile
from clientlab.netlab.lab import NetLab

needs_namespaces = pytest.mark.skipif(namespaces.why_unavailable() is not None, reason=str(namespaces.why_unavailable()))


def load(tmp_path, text: str) -> netprofile.Profile:
    path = tmp_path / "p.toml"
    path.write_text('description = "x"\n' + text)
    return netprofile.load_file(path)


def in_namespace(ns: str) -> str:
    return subprocess.run([*namespaces.in_ns(ns), "sysctl", "-n", "net.ipv4.tcp_congestion_control"],
                          capture_output=True, text=True, check=True).stdout.strip()


def test_a_profile_pins_cubic_unless_it_names_another(tmp_path):
    assert load(tmp_path, "").tcp_congestion == "cubic"
    assert load(tmp_path, 'tcp_congestion = "bbr"\n').tcp_congestion == "bbr"


def test_a_congestion_control_name_that_is_no_name_is_refused_naming_the_field(tmp_path):
    with pytest.raises(LabInputError, match=r"tcp_congestion"):
        load(tmp_path, 'tcp_congestion = "cubic; reboot"\n')


@pytest.mark.serial
@needs_namespaces
@pytest.mark.parametrize("algorithm", ["reno", "cubic"])
def test_both_namespaces_get_the_profiles_congestion_control(algorithm):
    with NetLab(netprofile.Profile(name="t", description="t", tcp_congestion=algorithm)) as lab:
        seen = {ns: in_namespace(ns) for ns in (namespaces.CLIENT_NS, namespaces.SERVER_NS)}
        notes = lab.describe()["notes"]
    assert seen == {namespaces.CLIENT_NS: algorithm, namespaces.SERVER_NS: algorithm}
    assert any(f"TCP congestion control {algorithm}" in note for note in notes)


@pytest.mark.serial
@needs_namespaces
def test_a_congestion_control_the_kernel_lacks_stops_the_lab_naming_it():
    with pytest.raises(LabError, match=r"network profile 't': tcp_congestion 'nosuch' cannot be set .*this kernel has"):
        NetLab(netprofile.Profile(name="t", description="t", tcp_congestion="nosuch"))
