"""clientlab net: the network lab's profiles, a check of their links, clean-up."""

from __future__ import annotations

import click
from rich.markup import escape
from rich.table import Table

from clientlab.cli.common import EXIT_BUSY, err, main, out
from clientlab.errors import LabInputError
from clientlab.runner import stop_on_sigterm
from clientlab.wrap import print_wrapped


@main.group("net")
def net_group() -> None:
    """The network lab: profiles, a check of the links they give, clean-up."""


@net_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="As JSON.")
def net_list_cmd(as_json: bool) -> None:
    """The network profiles (networks/*.toml)."""
    from clientlab.netlab import namespaces
    from clientlab.netlab import profile as netprofile

    profiles, broken = netprofile.scan()
    for problem in broken.values():
        err.print(f"[red]invalid network profile:[/] {escape(problem)}", highlight=False)
    if as_json:
        out.print_json(data=[p.model_dump() for p in profiles.values()])
        return
    table = Table(title="network profiles")
    for column in ("name", "link", "description"):
        table.add_column(column, overflow="fold")
    for p in profiles.values():
        table.add_row(escape(p.name), escape(p.summary()), escape(p.description))
    out.print(table)
    reason = namespaces.why_unavailable()
    if reason:
        err.print(f"[yellow]only loopback can run here: {reason}[/]", highlight=False)


@net_group.command("check")
@click.argument("profile_name", metavar="PROFILE")
@click.option("--size", default="100MB", show_default=True, help="Bytes moved each way for the rate figures.")
@click.option("--udp-probes", default=2000, show_default=True, type=click.IntRange(min=10, max=1_000_000),
              help="UDP probes (one a millisecond) for the round trip, its spread and the loss.")
def net_check_cmd(profile_name: str, size: str, udp_probes: int) -> None:
    """Put a profile's network up, measure RTT and throughput each way from the client's
    namespace, the round trip and loss of UDP probes beside the asked values, and take it
    down again."""
    from clientlab.netlab import probe, udpprobe
    from clientlab.netlab import profile as netprofile
    from clientlab.netlab.lab import NetLab
    from clientlab.units import parse_size

    profile = netprofile.get(profile_name)
    if not profile.namespaces:
        raise LabInputError("loopback has no link to check: name a network lab profile")
    nbytes = parse_size(size)
    with stop_on_sigterm(), NetLab(profile, check_rtt=False) as lab:
        host, port = lab.endpoint.host, lab.endpoint.http_port
        with udpprobe.UdpEcho() as echo:
            if lab.relay is not None:
                lab.relay.counters(reset=True)
            udp = udpprobe.measure(host, echo.port, udp_probes)
            link = lab.relay.counters() if lab.relay is not None else None
        down = probe.measure("download", host, port, nbytes)
        up = probe.measure("upload", host, port, nbytes)
        figures = {**lab.describe(), "asked": asked(profile), "udp": {
                       **udp, "loss_pct_each_way": round(udpprobe.one_way_loss_pct(udp["loss_pct"]), 3)},
                   "download_mbit": round(down, 1), "upload_mbit": round(up, 1),
                   "dns_queries": lab.dns.counters()["queries"]}
        if link is not None:
            figures["relay_during_udp"] = link
    out.print_json(data=figures)


def asked(profile) -> dict[str, float]:
    """What the profile asks of the link, in the units the probes measure. Jitter is uniform in
    ±jitter_ms each way, so the round trip's standard deviation is jitter_ms·√(2/3) (for probes
    sparse enough that the relay's order keeping does not shift them)."""
    survive = (1 - profile.loss_pct / 100) ** 2
    return {"rtt_ms": profile.rtt_ms, "jitter_ms_each_way": profile.jitter_ms,
            "rtt_sd_ms": round(profile.jitter_ms * (2 / 3) ** 0.5, 3), "loss_pct_each_way": profile.loss_pct,
            "loss_pct_round_trip": round(100 * (1 - survive), 3), "reorder_pct_each_way": profile.reorder_pct}


@net_group.command("clean")
def net_clean_cmd() -> None:
    """Remove what a killed run left behind (namespaces, links, processes inside). A network lab
    that a live run holds is not touched: this says which run."""
    from clientlab.netlab import namespaces
    from clientlab.measuring.runlock import LabBusy

    try:
        claim = namespaces.claim(wait=False)
    except LabBusy as exc:
        print_wrapped(err, f"busy: {exc}; nothing removed")
        raise SystemExit(EXIT_BUSY) from None
    try:
        removed = namespaces.remove_all()
    finally:
        claim.release()
    err.print(f"removed: {', '.join(removed)}" if removed else "nothing to remove", highlight=False)
