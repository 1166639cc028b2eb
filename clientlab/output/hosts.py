"""`clientlab hosts check` and `hosts list` as tables, drawn from the checks' JSON (check.to_dict):
a row a host, each cell a few short lines, so that the table stays readable at 80 columns."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table
from rich.text import Text

from clientlab.hosts.hostsfile import Host

CHECK_COLUMNS = ("host", "reached", "clientlab", "builds", "clock", "quiet")
CLOCK_APART_MS = 100   # beyond this, timestamps there and here do not line up
NAMES_SHOWN = 12       # of the drivers whose builds differ; --json has them all


def _flag(ok: bool, good: str, bad: str) -> Text:
    return Text(good, style="green") if ok else Text(bad, style="bold red")


def _reached(row: dict) -> Text:
    if not row["reached"]:
        return _flag(False, "", f"NO\n{row['error']['kind']}")
    text = _flag(True, "yes", "")
    text.append(f"\n{row['rtt_ms']:.2f} ms RTT" + ("\nby script" if row["facts_by"] == "script" else ""))
    return text


def _version(row: dict) -> Text:
    version = row["version"]
    if not version["same"]:
        return Text(f"DIFFERS\n{version['in_short']}", style="yellow")
    there = version["there"]
    text = _flag(True, "same", "")
    text.append(f"\n{there['commit'][:10]}" + ("\n+ changes" if there["dirty"] else ""))
    return text


def _builds(row: dict) -> Text:
    builds = row["builds"]
    if builds["same"]:
        return _flag(True, f"same ({builds['there']})", "")
    counts = [f"{len(builds[k])} {label}" for k, label in
              (("only_here", "only here"), ("only_there", "only there"), ("different", "other inputs")) if builds[k]]
    return Text("DIFFER\n" + "\n".join(counts), style="yellow")


def _clock(row: dict) -> Text:
    offset = row["clock_offset_ms"]
    return Text(f"{offset:+.2f} ms", style="" if abs(offset) <= CLOCK_APART_MS else "bold yellow")


def _quiet(row: dict) -> Text:
    quiet = row["quiet"]
    text = Text("yes" if quiet["quiet"] else "NO", style="green" if quiet["quiet"] else "yellow")
    text.append(f"\nload {quiet['load'][0]:.2f}" + (f"\n{len(quiet['busy'])} busy" if quiet["busy"] else ""))
    return text


def nic_line(nics: dict) -> str:
    """The devices' speeds (the virtual links' where the host has no device, as a namespace has)."""
    devices = {n: v for n, v in nics.items() if not v["virtual"]} or nics
    known = [f"{n} {v['speed_mbit']} Mb/s" + (" (virtual)" if v["virtual"] else "")
             for n, v in devices.items() if v["speed_mbit"]]
    return "NIC " + (", ".join(known) if known else "speed unknown")


def machine_line(fingerprint: dict) -> str:
    """CPU, cores, memory, kernel, NIC speed: what the host is, on one line."""
    return (f"{fingerprint['cpu_model']}, {fingerprint['cores']} cores, {fingerprint['memory_gib']} GiB, "
            f"kernel {fingerprint['kernel']}, {nic_line(fingerprint.get('nics') or {})}")


def check_table(rows: list[dict]) -> Table:
    table = Table(title="lab hosts, each against this machine")
    for column in CHECK_COLUMNS:
        table.add_column(column, overflow="fold")
    for row in rows:
        host = Text(f"{row['name']}\n", style="bold")
        host.append(", ".join(row["roles"]), style="")
        if not row["reached"]:
            table.add_row(host, _reached(row), *["—"] * (len(CHECK_COLUMNS) - 2))
            continue
        table.add_row(host, _reached(row), _version(row), _builds(row), _clock(row), _quiet(row))
    return table


def check_lines(rows: list[dict]) -> list[str]:
    """What the table has no room for, a line each: what each host is, and why a host was not
    reached, what differs, what keeps it busy, why its facts came by script."""
    lines = []
    for row in rows:
        name = row["name"]
        if row["error"]:
            lines.append(f"{name}: NOT REACHED: {row['error']['message']}")
            continue
        lines.append(f"{name}: {row['target']}: {machine_line(row['fingerprint'])}")
        if row["note"]:
            lines.append(f"{name}: facts sent as a script ({row['note']})")
        if row["version"]["difference"]:
            lines.append(f"{name}: clientlab differs: {row['version']['difference']}")
        for key, label in (("only_here", "built only here"), ("only_there", "built only there"),
                           ("different", "built from other inputs")):
            if drivers := row["builds"][key]:
                more = f" and {len(drivers) - NAMES_SHOWN} more (--json)" if len(drivers) > NAMES_SHOWN else ""
                lines.append(f"{name}: {label}: {', '.join(drivers[:NAMES_SHOWN])}{more}")
        if not row["quiet"]["quiet"]:
            lines.append(f"{name}: not quiet: {row['quiet']['why']}")
    return lines


def list_table(hosts: list[Host], trusted: dict[str, list[str]]) -> tuple[Table, list[str]]:
    """(the hosts file's hosts, a line each for the host keys the lab trusts)."""
    table = Table(title="lab hosts")
    for column in ("host", "ssh", "roles", "lab_dir", "key", "trusted"):
        table.add_column(column, overflow="fold")
    lines = []
    for host in hosts:
        keys = trusted.get(host.name) or []
        table.add_row(escape(host.name), escape(host.target()), ", ".join(host.roles), escape(str(host.lab_dir)),
                      escape(str(host.key)), Text("yes", style="green") if keys else Text("NO", style="yellow"))
        lines += [f"{host.name}: trusted host key {key}" for key in keys]
        if not keys:
            lines.append(f"{host.name}: no host key trusted yet: clientlab hosts trust {host.name}")
    return table, lines
