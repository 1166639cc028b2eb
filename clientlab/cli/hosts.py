"""clientlab hosts: the lab's other machines (the hosts file), their host keys, a check of each."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import click
from rich.markup import escape

from clientlab.cli.common import EXIT_FAILED, err, main, out
from clientlab.errors import LabError, LabInputError, shown
from clientlab.hosts import hostsfile, knownhosts
from clientlab.hosts.hostsfile import Host

FINGERPRINT = re.compile(r"SHA256:[A-Za-z0-9+/]{43}")
ON_THE_HOST = "ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub"

hosts_option = click.option(
    "--hosts", "hosts_path", type=click.Path(dir_okay=False, path_type=Path),
    help=f"The hosts file (TOML). Default: ${hostsfile.HOSTS_ENV}, else hosts.toml in the lab's data folder.")


server_host_option = click.option(
    "--server-host", "server_host_name", metavar="NAME",
    help="Run the bench server on this host of the hosts file (role 'server'), across the real network from "
         "here; it serves this machine only, and the path (RTT, rates) is measured first and stored with the "
         "run (docs/many-machines.md).")


def _load(hosts_path: Path | None) -> hostsfile.HostsFile:
    return hostsfile.load(hostsfile.chosen_path(hosts_path))


def chosen_server_host(name: str | None, hosts_path: Path | None, net_name: str = "loopback") -> tuple[Host, Path] | None:
    """(the host --server-host names, the lab's known_hosts), checked before anything runs; None without it."""
    if name is None:
        return None
    from clientlab.hosts.benchserver import server_host

    hosts = _load(hosts_path)
    return server_host(hosts, name, net_name), hosts.known_hosts_path()


@main.group("hosts")
def hosts_group() -> None:
    """The lab's other machines: the hosts file, their SSH host keys, a check of each.

    Hosts are reached with OpenSSH, their host keys checked against the lab's own known_hosts:
    a host whose key is unknown or has changed is refused, never accepted on the way
    (docs/many-machines.md)."""


@hosts_group.command("list")
@hosts_option
@click.option("--json", "as_json", is_flag=True, help="As JSON.")
def hosts_list_cmd(hosts_path: Path | None, as_json: bool) -> None:
    """The hosts in the hosts file, and the host key the lab trusts for each."""
    from clientlab.output.hosts import list_table

    hosts = _load(hosts_path)
    known_hosts = hosts.known_hosts_path()
    trusted = {h.name: [f"{k.kind} {k.fingerprint()}" for k in knownhosts.recorded(known_hosts, h)]
               for h in hosts.hosts}
    if as_json:
        out.print_json(data={"hosts_file": str(hosts.path), "known_hosts": str(known_hosts),
                             "hosts": [{**h.model_dump(mode="json"), "trusted_keys": trusted[h.name]}
                                       for h in hosts.hosts]})
        return
    out.print(f"hosts file {escape(shown(hosts.path))}; known hosts {escape(shown(known_hosts))}", highlight=False,
              soft_wrap=True)
    table, lines = list_table(list(hosts.hosts), trusted)
    out.print(table)
    for line in lines:
        out.print(escape(line), highlight=False, soft_wrap=True)


@hosts_group.command("check", epilog="Exit code 0 when every host was reached; 1 when one was not "
                                     "(unreachable, its key unknown or changed, the lab's key refused).")
@click.argument("names", nargs=-1, metavar="[NAME]...")
@hosts_option
@click.option("--json", "as_json", is_flag=True, help="As JSON: every fact read there, and each comparison.")
def hosts_check_cmd(names: tuple[str, ...], hosts_path: Path | None, as_json: bool) -> None:
    """Over SSH, each host (or those named): reached, and the round trip; the same clientlab
    version (commit, uncommitted changes) and driver builds as here, or what differs; its clock
    against ours; quiet or not (load, processes busy during a 1 s sample); and what it is (CPU,
    cores, memory, kernel, NIC speed). One SSH session a host, all hosts at once."""
    from clientlab.hosts import check
    from clientlab.output.hosts import check_lines, check_table

    started = time.monotonic()
    hosts = _load(hosts_path)
    chosen = hosts.select(list(names))
    if not chosen:
        raise LabInputError(f"{shown(hosts.path)}: no hosts in the file (docs/many-machines.md)")
    ours = check.here()
    checks = check.check(chosen, hosts.known_hosts_path())
    rows = [c.to_dict(ours) for c in checks]
    seconds = time.monotonic() - started
    if as_json:
        out.print_json(data={"hosts_file": str(hosts.path), "known_hosts": str(hosts.known_hosts_path()),
                             "seconds": round(seconds, 2), "here": ours, "hosts": rows})
    else:
        out.print(check_table(rows))
        for line in check_lines(rows):
            out.print(escape(line), highlight=False, soft_wrap=True)
        out.print(f"checked {len(rows)} host(s) in {seconds:.1f} s", highlight=False)
    if not all(c.reached for c in checks):
        raise SystemExit(EXIT_FAILED)


def _fingerprint_option(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None and not FINGERPRINT.fullmatch(value):
        raise click.BadParameter(f"{value!r} is not a SHA256 fingerprint (SHA256: and 43 characters, "
                                 f"as `{ON_THE_HOST}` prints it on the host)")
    return value


@hosts_group.command("trust")
@click.argument("name")
@hosts_option
@click.option("--fingerprint", callback=_fingerprint_option, metavar="SHA256:…",
              help=f"The fingerprint the host itself shows ({ON_THE_HOST}): its key is recorded only "
                   "when the key it offers has this fingerprint. Without it, you are asked to confirm.")
def hosts_trust_cmd(name: str, hosts_path: Path | None, fingerprint: str | None) -> None:
    """Read a host's SSH host key (ssh-keyscan), print its fingerprint, and record it in the lab's
    known_hosts when it is the one given with --fingerprint, or when you confirm it. A key that
    replaces another is said to have CHANGED. Exit code 1 when nothing was recorded."""
    hosts = _load(hosts_path)
    host, known_hosts = hosts.get(name), hosts.known_hosts_path()
    offered = knownhosts.scan(host)
    try:
        key = knownhosts.chosen(host, offered, fingerprint)
    except LabError as exc:
        err.print(f"[bold red]refused:[/] {escape(str(exc))}", highlight=False)
        raise SystemExit(EXIT_FAILED) from None
    before = knownhosts.recorded(known_hosts, host)
    out.print(f"host {escape(host.name)} ({escape(host.target())}) offers its {key.kind} key {key.fingerprint()}",
              highlight=False, soft_wrap=True)
    if key in before:
        out.print(f"already trusted (in {escape(shown(known_hosts))}): nothing to do", highlight=False, soft_wrap=True)
        return
    if before:
        err.print(f"[bold red]its key has CHANGED:[/] the lab trusted {', '.join(k.fingerprint() for k in before)}",
                  highlight=False)
    if fingerprint is None and not _confirmed():
        err.print("not recorded", highlight=False)
        raise SystemExit(EXIT_FAILED)
    knownhosts.record(known_hosts, host, key)
    out.print(f"recorded in {escape(shown(known_hosts))}", highlight=False, soft_wrap=True)


def _confirmed() -> bool:
    if not sys.stdin.isatty():
        raise LabInputError(f"no terminal to confirm the fingerprint on: give it with --fingerprint SHA256:… "
                            f"(as the host shows it: {ON_THE_HOST})")
    return click.confirm(f"Is this the fingerprint the host itself shows ({ON_THE_HOST} on its console)? "
                         "Record it", default=False)
