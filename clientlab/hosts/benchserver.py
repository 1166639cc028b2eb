"""The bench server on a host of its own (`clientlab run --server-host NAME`).

The lab ships its built server and a certificate for the host's address there (once per build:
the folder is named by their digest), starts it over SSH with the control secret on its stdin,
and reaches the control port only through a port forwarded over a second SSH session: the
control port listens on the host's loopback, never on the network. The public ports serve only
the lab host's address (the address the host sees the SSH session come from); any other client
is closed at once. The server exits when its SSH session ends, so it never outlives the run.

Figures stay one host's: drivers are timed here, by this host's clock; the server's CPU per
trial comes from the server itself (its control port's /cpu), read before and after each trial.
Before the run, the path is measured the way a client sees it (RTT, rates), and stored with
the run like a network profile."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import ipaddress
import json
import secrets
import shlex
import socket
import subprocess
import tarfile
import time
from pathlib import Path
from typing import Any, Self

from clientlab import paths
from clientlab.servers import binary as server_binary
from clientlab.errors import LabError, LabInputError
from clientlab.hosts import ssh
from clientlab.hosts.hostsfile import Host, HostsFile
from clientlab.netlab import probe
from clientlab.servers.bench import SECRET_HEADER, BenchControl
from clientlab.servers.control import ControlClient
from clientlab.servers.side import Endpoint

START_DEADLINE_S = 30            # connect (5 s), unpack, the server's first line
FORWARD_DEADLINE_S = 15          # the control port answering through the forward
PATH_RTT_COUNT = 20
PATH_RATE_BYTES = 64 << 20       # half a second at 1 Gbit/s
REMOTE_CACHE = "${XDG_CACHE_HOME:-$HOME/.cache}/clientlab"


def server_host(hosts: HostsFile, name: str, net_name: str) -> Host:
    """The host `--server-host NAME` names: in the hosts file, with the server role, and not
    combined with a network profile of this machine's network lab."""
    host = hosts.get(name)
    if "server" not in host.roles:
        raise LabInputError(f"host {name} has roles {', '.join(host.roles)}: --server-host needs one with the "
                            "'server' role (the hosts file's `roles`)")
    if net_name != "loopback":
        raise LabInputError(f"--server-host {name} measures across the real network to that host; --net {net_name} "
                            "shapes this machine's own network lab: use one or the other")
    return host


def host_address(host: Host) -> str:
    """The host's IP address as this machine reaches it (the hosts file may give a name)."""
    try:
        return str(ipaddress.ip_address(host.address))
    except ValueError:
        pass
    try:
        return socket.getaddrinfo(host.address, None, type=socket.SOCK_STREAM)[0][4][0]
    except OSError as exc:
        raise ssh.HostError(host, "unreachable", f"its address does not resolve ({exc})") from None


def certificate_for(address: str, name: str) -> tuple[Path, Path]:
    """(certificate, key) for the bench server at `address`, issued by the lab's CA once and kept:
    drivers check the server's name against it as they would anywhere."""
    tls = paths.tls_dir()
    folder = tls / "hosts"
    cert, key = folder / f"{address}.pem", folder / f"{address}-key.pem"
    if cert.exists() and key.exists() and cert.stat().st_mtime >= (tls / "ca.pem").stat().st_mtime:
        return cert, key   # issued by the lab's CA as it is now
    if not (tls / "ca-key.pem").exists():
        raise LabError(f"the lab's CA key is missing in {tls} (run ./setup.sh)")
    folder.mkdir(parents=True, exist_ok=True)
    names = f"IP:{address}" + (f",DNS:{name}" if name != address else "")
    extensions = ("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                  f"extendedKeyUsage=serverAuth\nsubjectAltName={names}\n")
    (folder / "server.ext").write_text(extensions)
    csr = folder / f"{address}.csr"
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN=clientlab bench server {address}",
        "-keyout", str(key), "-out", str(csr))
    _openssl("x509", "-req", "-in", str(csr), "-CA", str(tls / "ca.pem"), "-CAkey", str(tls / "ca-key.pem"),
        "-CAcreateserial", "-CAserial", str(folder / "ca.srl"), "-days", "3650",
        "-extfile", str(folder / "server.ext"), "-out", str(cert))
    csr.unlink()
    return cert, key


def _openssl(*args: str) -> None:
    done = subprocess.run(["openssl", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise LabError(f"openssl {args[0]} failed making a host's certificate: {done.stderr.strip()[-300:]}")


def _bundle(address: str, name: str) -> tuple[str, bytes]:
    """(digest, tar) of what the host needs: the server binary and its certificate."""
    binary = server_binary.current()
    cert, key = certificate_for(address, name)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path, arcname in ((binary, "clientlab-server"), (cert, "server.pem"), (key, "server-key.pem")):
            tar.add(path, arcname=arcname)
    data = buf.getvalue()
    return hashlib.sha256(data).hexdigest()[:16], data


def ship(host: Host, known_hosts: Path, address: str) -> str:
    """The folder on the host holding this build of the server (sent only when not there yet)."""
    digest, data = _bundle(address, host.name)
    folder = f"{REMOTE_CACHE}/server-{digest}"
    command = (f'D="{folder}"; if [ -x "$D/clientlab-server" ]; then cat >/dev/null; else '
               f'umask 077 && mkdir -p "$D.part" && tar -xf - -C "$D.part" && rm -rf "$D" && mv "$D.part" "$D"; fi '
               f'&& cd "$D" && pwd')
    argv = ssh.ssh_argv(host, known_hosts, command)
    try:
        done = subprocess.run(argv, input=data, capture_output=True, timeout=120, check=False)
    except subprocess.TimeoutExpired:
        raise ssh.HostError(host, "failed", "sending the bench server did not end within 120 s") from None
    if done.returncode == ssh.SSH_FAILED:
        raise ssh.failure(host, known_hosts, done.stderr.decode(errors="replace"))
    if done.returncode != 0:
        raise ssh.HostError(host, "failed", "could not unpack the bench server there: "
                            + done.stderr.decode(errors="replace").strip()[-300:])
    return done.stdout.decode().strip()


def _free_local_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclasses.dataclass(frozen=True)
class PathFigures:
    """The path between the lab host and the server host, as a client sees it."""

    rtt_ms: float
    download_mbit: float
    upload_mbit: float


def measure_path(address: str, port: int) -> PathFigures:
    return PathFigures(rtt_ms=probe.rtt_ms(address, port, PATH_RTT_COUNT),
                       download_mbit=probe.download_mbit(address, port, PATH_RATE_BYTES),
                       upload_mbit=probe.upload_mbit(address, port, PATH_RATE_BYTES))


class ServerHost(BenchControl):
    """The bench server running on `host`, as the runner's server side (clientlab.servers.side)."""

    driver_prefix: list[str] = []  # noqa: RUF012 - drivers run here, as on loopback

    def __init__(self, host: Host, known_hosts: Path, measure: bool = True):
        self.host, self.known_hosts = host, known_hosts
        self.address = host_address(host)
        folder = ship(host, known_hosts, self.address)
        secret = secrets.token_urlsafe(32)
        self._server = ssh.Session(host, known_hosts, self._command(folder))
        self._forward: ssh.Session | None = None
        try:
            self._server.send(secret.encode() + b"\n")
            self.info = json.loads(self._server.read_line(time.monotonic() + START_DEADLINE_S))
            if self.info.get("type") != "listening":
                raise ssh.HostError(host, "failed", f"the bench server there printed {self.info!r}")
            self.lab_address = self.info["serve_only"]
            self._control = self._forwarded_control(secret)
            self.endpoint = Endpoint(host=self.address, http_port=self.info["http"], https_port=self.info["https"],
                                     ca_file=paths.tls_dir() / "ca.pem", h3_port=self.info.get("h3", 0))
            self.path = measure_path(self.address, self.endpoint.http_port) if measure else None
        except BaseException:
            self.stop()
            raise

    def _command(self, folder: str) -> str:
        """Start the server: public ports on the host's address for the SSH client's address only,
        control on loopback; its first line says where, and which client it serves."""
        return (f'cd {shlex.quote(folder)} && exec ./clientlab-server --listen {shlex.quote(self.address)} '
                '--serve-only "${SSH_CLIENT%% *}" --control-listen 127.0.0.1 '
                '--tls-cert server.pem --tls-key server-key.pem')

    def _forwarded_control(self, secret: str) -> ControlClient:
        port = _free_local_port()
        forward = f"127.0.0.1:{port}:127.0.0.1:{self.info['control']}"
        self._forward = ssh.Session(self.host, self.known_hosts, "exec cat >/dev/null", forwards=("-L", forward))
        control = ControlClient(f"bench server on {self.host.name}", "127.0.0.1", port,
                                headers={SECRET_HEADER: secret})
        deadline = time.monotonic() + FORWARD_DEADLINE_S
        while True:
            try:
                control.request("GET", "/health")
                return control
            except LabError:
                if not self._forward.alive():
                    raise self._forward.ended() from None
                if time.monotonic() > deadline:
                    raise ssh.HostError(self.host, "failed", "its control port did not answer through the SSH "
                                        f"forward within {FORWARD_DEADLINE_S} s") from None
                time.sleep(0.1)

    # -- the runner's server side (the control endpoint's calls come from BenchControl) ----

    def cpu_ns(self) -> int | None:
        return self.server_cpu_ns()

    def local_pids(self) -> list[int]:
        return []

    def describe(self) -> dict[str, Any]:
        """The path, stored with the run as a network profile is."""
        summary = f"bench server on host {self.host.name} ({self.address}), across the network"
        described: dict[str, Any] = {"profile": f"server-host:{self.host.name}", "summary": summary,
                                     "host": self.address, "lab_address": self.lab_address,
                                     "server_host": self.host.name, "notes": []}
        if self.path is not None:
            described.update(measured_rtt_ms=round(self.path.rtt_ms, 3),
                             measured_download_mbit=round(self.path.download_mbit, 1),
                             measured_upload_mbit=round(self.path.upload_mbit, 1))
        return described

    def alive(self) -> bool:
        return self._server.alive() and (self._forward is None or self._forward.alive())

    def exit_reason(self) -> str:
        for session, what in ((self._server, "the server's SSH session"), (self._forward, "the control forward")):
            if session is not None and not session.alive():
                return f"{what} to {self.host.name} ended: {session.ended()}"
        return "it is running"

    def stop(self) -> None:
        control = getattr(self, "_control", None)
        if control is not None:
            control.close()
        for session in (self._forward, self._server):
            if session is not None:
                session.close()  # the server's stdin closes with its session: it exits

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
