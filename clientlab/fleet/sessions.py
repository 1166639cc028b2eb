"""A lab host's worker in an SSH session that lends it the broker: ssh forwards a Unix socket on
the host (readable by the lab's user only) to the broker's port here, so nothing listens on any
network for the queue. The session's end is the worker's end, and the coordinator sees it."""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path

from clientlab.errors import LabError
from clientlab.fleet.broker import Broker
from clientlab.fleet.queue import host_queue
from clientlab.hosts import ssh
from clientlab.hosts.hostsfile import Host

READY_TIMEOUT_S = 60   # connect (5 s), then the host's Python imports Celery and joins the queue


def worker_command(host: Host, socket_path: str) -> str:
    """The worker from the host's checkout; the shell stays to remove the forwarded socket after it
    (sshd leaves it behind), however the worker ended, and exits with the worker's code."""
    lab = shlex.quote(str(host.lab_dir))
    return (f'cd {lab} 2>/dev/null || {{ echo "no clientlab checkout at {lab}" >&2; exit 3; }}; '
            f'[ -x .venv/bin/python ] || {{ echo "no clientlab venv at {lab}/.venv (run setup.sh there)" >&2; '
            f'exit 3; }}; .venv/bin/python -m clientlab worker; code=$?; rm -f {shlex.quote(socket_path)}; exit $code')


class HostWorker:
    """One lab host's worker, started at once; `wait_ready()` before sending it batches."""

    def __init__(self, host: Host, known_hosts: Path, broker: Broker, fleet_uid: str):
        self.host, self.queue = host, host_queue(fleet_uid, host.name)
        self.socket_path = f"/tmp/clientlab-fleet-{fleet_uid[:12]}-{host.name}.sock"
        self.pid: int | None = None
        forward = ("-R", f"{self.socket_path}:127.0.0.1:{broker.port}")
        self.session = ssh.Session(host, known_hosts, worker_command(host, self.socket_path), forwards=forward)
        settings = {"broker": broker.url_for(self.socket_path), "queue": self.queue, "host": host.name,
                    "fleet": fleet_uid}
        self.session.send(json.dumps(settings).encode() + b"\n")

    def wait_ready(self, deadline: float) -> None:
        """Until the worker says it takes batches; a HostError saying why it did not."""
        line = self.session.read_line(deadline)
        try:
            said = json.loads(line)
        except ValueError:
            said = None
        if not isinstance(said, dict) or not said.get("ready"):
            raise ssh.HostError(self.host, "failed", f"its worker said {line[:100]!r}, not that it is ready")
        self.pid = said.get("pid")

    def alive(self) -> bool:
        return self.session.alive()

    def why_ended(self) -> str:
        return str(self.session.ended())

    def stop(self) -> None:
        """End the session: the worker sees its stdin close and leaves, stopping any batch."""
        self.session.close()
        self.session.__exit__()


def start_all(hosts: list[Host], known_hosts: Path, broker: Broker, fleet_uid: str) -> list[HostWorker]:
    """Every host's worker, started together and ready; else a LabError naming each host that
    could not be started and why (the others are stopped): a fleet run starts with all its hosts."""
    workers: list[HostWorker] = []
    problems: list[str] = []
    try:
        for host in hosts:
            workers.append(HostWorker(host, known_hosts, broker, fleet_uid))
        deadline = time.monotonic() + READY_TIMEOUT_S
        for worker in workers:
            try:
                worker.wait_ready(deadline)
            except ssh.HostError as exc:
                problems.append(str(exc))
    except BaseException:
        for worker in workers:
            worker.stop()
        raise
    if problems:
        for worker in workers:
            worker.stop()
        raise LabError("the fleet cannot start: " + "; ".join(problems))
    return workers
