"""Profiles that ask for the link relay: its fields are checked, and refused on the kernel link."""

from __future__ import annotations

import pytest

from clientlab.errors import LabInputError
from clientlab.netlab import profile
from clientlab.netlab.relay import relay_args


def load(tmp_path, text: str) -> profile.Profile:
    path = tmp_path / "p.toml"
    path.write_text('description = "x"\n' + text)
    return profile.load_file(path)


@pytest.mark.parametrize("field", ["jitter_ms = 5", "loss_pct = 1", "reorder_pct = 2", "rate_up_mbit = 10"])
def test_an_impairment_on_the_kernel_link_is_refused_naming_the_field(tmp_path, field):
    name = field.split()[0]
    with pytest.raises(LabInputError, match=rf"field '{name}': .*needs link = \"relay\""):
        load(tmp_path, field + "\n")


def test_a_loss_burst_shorter_than_the_loss_allows_is_refused(tmp_path):
    with pytest.raises(LabInputError, match=r"loss_burst 1: .*at least 1 packet \(and loss_pct/\(100 - loss_pct\)\)"):
        load(tmp_path, 'link = "relay"\nloss_pct = 60\nloss_burst = 1\n')


def test_the_relay_needs_the_namespaces(tmp_path):
    with pytest.raises(LabInputError, match="needs namespaces = true"):
        load(tmp_path, 'link = "relay"\nnamespaces = false\n')


def test_the_shipped_relay_profiles_give_the_relay_half_the_rtt_each_way_and_both_rates():
    args = relay_args(profile.get("mobile-4g"))
    flags = dict(zip(args[::2], args[1::2], strict=True))
    assert flags["--delay-ms"] == "30" and flags["--jitter-ms"] == "5" and flags["--loss-pct"] == "0.5"
    assert flags["--rate-down-mbit"] == "20" and flags["--rate-up-mbit"] == "10"
    lossy = dict(zip(*[iter(relay_args(profile.get("lossy-1pct")))] * 2, strict=True))
    assert lossy["--delay-ms"] == "12.5" and lossy["--loss-pct"] == "1" and "--rate-up-mbit" not in lossy


def test_existing_profiles_keep_the_kernel_link():
    for name in ("wan-50ms", "wan-50ms-capped", "lan-100m", "netns"):
        assert profile.get(name).link == "veth"
