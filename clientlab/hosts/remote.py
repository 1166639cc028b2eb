"""A host's facts over one SSH session: its clock read a few times against ours, then what
clientlab.hosts.facts finds there. The host runs the facts module from its own checkout, or, where
clientlab is not there, the module's text sent over the session's stdin."""

from __future__ import annotations

import dataclasses
import json
import shlex
import time
from pathlib import Path

from clientlab.hosts import facts, ssh
from clientlab.hosts.hostsfile import Host

CLOCK_READINGS = 5        # the reading with the shortest round trip is the one used
SESSION_DEADLINE_S = 30   # connect (5 s), the quiet sample, git on a large tree


@dataclasses.dataclass(frozen=True)
class Reading:
    """What a host said about itself, and how it was heard."""

    source: str              # "module": the host's clientlab; "script": the facts sent over stdin
    note: str | None         # why the script was sent
    rtt_ms: float            # the shortest round trip of a line over the session
    clock_offset_ms: float   # the host's clock minus ours, half that round trip taken off
    facts: dict              # clientlab.hosts.facts.gather() on the host
    seconds: float           # the whole session, connecting included


def remote_command(host: Host, sample_s: float) -> str:
    """The shell command the host runs: the facts module of its checkout (its venv's python, else
    python3), else a python3 that reads the module's text from stdin (it asks for it first)."""
    lab = shlex.quote(str(host.lab_dir))
    args = f'--lab-dir "$L" --sample-s {sample_s:g}'
    bootstrap = ("import sys; n = int(sys.stdin.buffer.readline()); "
                 "exec(compile(sys.stdin.buffer.read(n), 'clientlab-facts', 'exec'))")
    return (f'L={lab}; P="$L/.venv/bin/python"; [ -x "$P" ] || P=python3; '
            f'if [ -f "$L/clientlab/hosts/facts.py" ] && cd "$L"; then '
            f'exec "$P" -m clientlab.hosts.facts {args} --source module; fi; '
            f"echo '{json.dumps({'protocol': facts.FACTS_PROTOCOL, 'send': 'script'})}'; "
            f"exec python3 -c {shlex.quote(bootstrap)} {args} --source script "
            f'--note "no clientlab at $L"')


def _message(session: ssh.Session, deadline: float) -> dict:
    line = session.read_line(deadline)
    try:
        message = json.loads(line)
    except ValueError:
        message = None
    if not isinstance(message, dict):
        said = line.decode(errors="replace")[:100]
        raise ssh.HostError(session.host, "failed", f"the host answered {said!r}, not clientlab's facts: "
                            "does a shell start-up file there print something?")
    if message.get("protocol", facts.FACTS_PROTOCOL) != facts.FACTS_PROTOCOL:
        raise ssh.HostError(session.host, "failed", f"its clientlab speaks facts protocol {message['protocol']}, "
                            f"this one {facts.FACTS_PROTOCOL}: bring the two checkouts to the same version")
    return message


def _clock(session: ssh.Session, deadline: float) -> tuple[float, float]:
    """(round trip, the host's clock minus ours) in seconds, from the quickest of a few readings:
    the host read its clock about half a round trip after we asked."""
    best: tuple[float, float] | None = None
    for _ in range(CLOCK_READINGS):
        asked_at, start = time.time(), time.perf_counter()
        session.send(b"\n")
        theirs = _message(session, deadline)["t"]
        rtt = time.perf_counter() - start
        if best is None or rtt < best[0]:
            best = (rtt, theirs - (asked_at + rtt / 2))
    assert best is not None
    return best


def read(host: Host, known_hosts: Path, sample_s: float = 1.0) -> Reading:
    """The host's facts over one SSH session, or a HostError saying why not."""
    started = time.monotonic()
    deadline = started + SESSION_DEADLINE_S + sample_s
    with ssh.Session(host, known_hosts, remote_command(host, sample_s)) as session:
        hello = _message(session, deadline)
        if hello.get("send") == "script":
            text = Path(facts.__file__).read_bytes()
            session.send(b"%d\n" % len(text) + text)
            hello = _message(session, deadline)
        rtt, offset = _clock(session, deadline)
        session.send(b"done\n")
        answer = _message(session, deadline)
    return Reading(source=hello.get("source", "?"), note=hello.get("note"), rtt_ms=rtt * 1000,
                   clock_offset_ms=offset * 1000, facts=answer["facts"], seconds=time.monotonic() - started)


def fingerprint(host: Host, known_hosts: Path) -> dict:
    """The host's machine, to store with a run made there: the keys of clientlab.measuring.machine.describe()
    (a run's `machine`) plus its network interfaces, so runs here and there compare like with like."""
    return read(host, known_hosts, sample_s=0).facts["fingerprint"]
