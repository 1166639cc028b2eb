"""The link relay for real: TCP and UDP across it, loss within binomial bounds, reordering only
when asked, and (serial) round trips close to the asked ones. Needs root, like the network lab.

About 15 s together: one lab per module (about 1 s to start), the relay re-configured live
between tests, 1,000–2,000 UDP probes a test, one every millisecond.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from clientlab.netlab import namespaces, probe, udpprobe
from clientlab.netlab import profile as netprofile
from clientlab.netlab.lab import NetLab

pytestmark = [pytest.mark.xdist_group("netlab"),
              pytest.mark.skipif(namespaces.why_unavailable() is not None, reason=str(namespaces.why_unavailable()))]

TAIL = 1e-6   # each bound is missed by chance with at most this probability


def binomial_bounds(n: int, p: float, tail: float = TAIL) -> tuple[int, int]:
    """The smallest and largest counts of a binomial(n, p) with at most `tail` probability
    below / above them (exact, from the log of the probability mass)."""
    def pmf(k: int) -> float:
        if p in (0.0, 1.0):
            return float(k == round(n * p))
        return math.exp(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
                        + k * math.log(p) + (n - k) * math.log1p(-p))
    masses = [pmf(k) for k in range(n + 1)]
    lo, below = 0, 0.0
    while below + masses[lo] <= tail:
        below += masses[lo]
        lo += 1
    hi, above = n, 0.0
    while above + masses[hi] <= tail:
        above += masses[hi]
        hi -= 1
    return lo, hi


def relay_profile(**settings: Any) -> netprofile.Profile:
    return netprofile.Profile(name="relay-test", description="test", link="relay", **settings)


@pytest.fixture(scope="module")
def lab():
    with NetLab(relay_profile(), check_rtt=False) as running, udpprobe.UdpEcho() as echo:
        running.echo_port = echo.port
        yield running


def impair(lab: NetLab, **settings: float) -> None:
    """Both directions of the running relay set to `settings` (everything else off)."""
    direction = {"delay_ms": 0, "jitter_ms": 0, "loss_pct": 0, "loss_burst": 0, "reorder_pct": 0,
                 "reorder_extra_ms": 10, "rate_mbit": 0, "queue_ms": 100, **settings}
    lab.relay.configure(direction, direction)
    lab.relay.counters(reset=True)


def udp(lab: NetLab, count: int) -> dict[str, Any]:
    return udpprobe.measure(lab.endpoint.host, lab.echo_port, count)


def test_the_relay_carries_tcp_and_udp_between_the_namespaces(lab):
    impair(lab)
    rtt = probe.measure("rtt", lab.endpoint.host, lab.endpoint.http_port, 5)      # HTTP over TCP
    got = udp(lab, 200)
    counters = lab.relay.counters()
    assert rtt > 0 and got["received"] == 200, got
    assert lab.endpoint.h3_port, "the relay carries UDP: HTTP/3 is offered"
    assert counters["up"]["sent"] >= 200 + 5 and counters["down"]["sent"] >= 200 + 5, counters


def test_udp_loss_at_5_percent_each_way_is_within_binomial_bounds(lab):
    impair(lab, loss_pct=5)
    n = 2000
    got = udp(lab, n)
    lo, hi = binomial_bounds(n, 1 - 0.95 ** 2)       # a probe is lost on the way out or back
    assert lo <= got["lost"] <= hi, f"{got['lost']} of {n} probes lost, want {lo}..{hi}"
    for name, d in lab.relay.counters().items():
        if name in ("up", "down"):
            lo, hi = binomial_bounds(d["packets"], 0.05)
            assert lo <= d["lost_random"] <= hi, f"{name}: {d['lost_random']} of {d['packets']} dropped"


def test_jitter_alone_keeps_order_and_reordering_happens_when_asked(lab):
    impair(lab, delay_ms=2, jitter_ms=2)      # probes 1 ms apart, delays 0..4 ms: would cross if not kept in order
    kept = udp(lab, 1000)
    assert kept["reordered"] == 0 and lab.relay.counters()["up"]["reordered"] == 0, kept
    impair(lab, delay_ms=2, reorder_pct=10, reorder_extra_ms=10)
    shuffled = udp(lab, 1000)
    held = sum(lab.relay.counters()[d]["reordered"] for d in ("up", "down"))
    lo, _ = binomial_bounds(2 * 1000, 0.10)           # each probe may be held on the way out and back
    assert held >= lo and shuffled["reordered"] > 0, (held, shuffled)


@pytest.mark.serial
@pytest.mark.parametrize("rtt_ms", [2, 50])
def test_round_trips_over_tcp_and_udp_are_close_to_the_asked_one(lab, rtt_ms):
    impair(lab, delay_ms=rtt_ms / 2)
    tcp = probe.measure("rtt", lab.endpoint.host, lab.endpoint.http_port, 10)
    got = udp(lab, 500)["rtt_ms"]["median"]
    # 10 % as the lab's own RTT check, plus 0.5 ms for the hosts' stacks and the probes' Python
    for what, measured in (("TCP (HTTP GET)", tcp), ("UDP", got)):
        assert abs(measured - rtt_ms) <= 0.10 * rtt_ms + 0.5, f"{what}: {measured:.2f} ms for {rtt_ms} ms asked"


def test_binomial_bounds_hold_the_mean_and_narrow_with_the_tail():
    lo, hi = binomial_bounds(2000, 0.05)
    assert lo < 100 < hi and (lo, hi) != binomial_bounds(2000, 0.05, tail=0.01)
    assert binomial_bounds(100, 0.0) == (0, 0)
