"""A lab host for tests, on this machine: a network namespace joined to ours by a veth pair on a
private /30, running Debian's OpenSSH server with a host key and an authorized key made for it.

Names are `clab-h<pid>-<n>` and addresses 10.250.x.y, both from the test process's pid, so that
parallel test workers never collide; `clientlab net clean` finds what a killed test left.
Below it, what the tests do with one: trust its key, name it in a hosts file, run `clientlab`."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from clientlab.hosts import knownhosts
from clientlab.hosts.hostsfile import Host

SSHD = Path("/usr/sbin/sshd")
PRIVSEP_DIR = Path("/run/sshd")   # Debian's sshd refuses to start without it (systemd makes it)
BLOCKS = 1 << 14                  # the /30s in 10.250.0.0/16
_made = itertools.count()


def why_unavailable() -> str | None:
    if os.geteuid() != 0:
        return "namespace hosts need root (network namespaces, veth, sshd)"
    if not SSHD.exists():
        return f"namespace hosts need Debian's OpenSSH server ({SSHD}; apt install openssh-server)"
    for tool in ("ip", "ssh", "ssh-keygen", "ssh-keyscan"):
        if shutil.which(tool) is None:
            return f"namespace hosts need `{tool}`"
    return None


def _sh(*argv: str) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


def _free_block(n: int) -> tuple[str, str]:
    """(our address, the host's) on a /30 no interface here uses yet."""
    used = _sh("ip", "-4", "-o", "addr", "show")
    for step in range(BLOCKS):
        third, fourth = divmod((os.getpid() * 8 + n + step) % BLOCKS * 4, 256)
        ours, theirs = f"10.250.{third}.{fourth + 1}", f"10.250.{third}.{fourth + 2}"
        if f" {ours}/" not in used and f" {theirs}/" not in used:
            return ours, theirs
    raise RuntimeError("no free /30 in 10.250.0.0/16")


def keygen(path: Path) -> Path:
    """A new ed25519 key pair at `path` (and `path`.pub), no passphrase."""
    path.unlink(missing_ok=True)
    path.with_suffix(".pub").unlink(missing_ok=True)
    _sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "clientlab-test", "-f", str(path))
    return path


class NamespaceHost:
    """One namespace host: `start_sshd()` to answer SSH, `stop()` (always) to remove it all."""

    def __init__(self, folder: Path, with_address: bool = True):
        n = next(_made)
        self.folder, self.port, self.sshd = folder, 22, None
        self.name = f"clab-h{os.getpid()}-{n}"
        self.link = f"clab-{os.getpid():x}-{n}"   # our end of the veth: at most 15 characters
        self.local_address, self.address = _free_block(n)
        folder.mkdir(parents=True, exist_ok=True)
        self.client_key = keygen(folder / "client_ed25519")
        self.host_key = keygen(folder / "ssh_host_ed25519_key")
        _sh("ip", "netns", "add", self.name)
        try:
            _sh("ip", "link", "add", self.link, "type", "veth", "peer", "name", "eth0", "netns", self.name)
            _sh("ip", "addr", "add", f"{self.local_address}/30", "dev", self.link)
            _sh("ip", "link", "set", self.link, "up")
            if with_address:  # without, nobody answers for the host's address: ARP goes unanswered
                _sh("ip", "-n", self.name, "addr", "add", f"{self.address}/30", "dev", "eth0")
            _sh("ip", "-n", self.name, "link", "set", "eth0", "up")
            _sh("ip", "-n", self.name, "link", "set", "lo", "up")
        except BaseException:
            self.stop()
            raise

    def host(self, **fields: object) -> Host:
        """This host as the hosts file describes it (fields override)."""
        return Host(**{"name": "nshost", "address": self.address, "port": self.port,
                       "key": self.client_key, **fields})

    def _config(self) -> Path:
        (self.folder / "authorized_keys").write_text(self.client_key.with_suffix(".pub").read_text())
        config = self.folder / "sshd_config"
        config.write_text(
            f"ListenAddress {self.address}:{self.port}\nHostKey {self.host_key}\n"
            f"AuthorizedKeysFile {self.folder / 'authorized_keys'}\nPidFile none\n"
            "PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            "UsePAM no\nStrictModes no\nPrintMotd no\nPrintLastLog no\nLogLevel INFO\n"
            # namespace hosts share this machine: each its own run lock, as separate machines have
            f"SetEnv CLIENTLAB_LOCK={self.folder / 'run.lock'}\n")
        return config

    def start_sshd(self) -> None:
        """sshd in the namespace, answering on the host's address once this returns."""
        PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)
        with open(self.folder / "sshd.log", "ab") as log:
            self.sshd = subprocess.Popen(["ip", "netns", "exec", self.name, str(SSHD), "-D", "-e", "-f",
                                          str(self._config())], stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.sshd.poll() is not None:
                raise RuntimeError(f"sshd exited {self.sshd.returncode}: {(self.folder / 'sshd.log').read_text()}")
            try:
                socket.create_connection((self.address, self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"sshd did not answer on {self.address}:{self.port} within 10 s")

    def stop_sshd(self) -> None:
        if self.sshd is not None and self.sshd.poll() is None:
            self.sshd.terminate()
            try:
                self.sshd.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.sshd.kill()
                self.sshd.wait()
        self.sshd = None

    def new_host_key(self) -> None:
        """The host reinstalled: a new host key, sshd started again with it."""
        self.stop_sshd()
        keygen(self.host_key)
        self.start_sshd()

    def crash(self) -> None:
        """The host dies: every process in it killed at once (sshd and what it started); the
        kernel closes their connections."""
        pids = subprocess.run(["ip", "netns", "pids", self.name], check=False, capture_output=True, text=True).stdout.split()
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass

    def stop(self) -> None:
        """Kill sshd and whatever else runs in the namespace, remove the namespace (its veth goes
        with it) and our end if it is still there."""
        self.stop_sshd()
        self.crash()
        subprocess.run(["ip", "netns", "delete", self.name], check=False, capture_output=True)
        subprocess.run(["ip", "link", "delete", self.link], check=False, capture_output=True)


def trust(host: NamespaceHost, known_hosts: Path) -> None:
    """Record the host's key as `hosts trust` would after the user confirmed it."""
    kind, blob = host.host_key.with_suffix(".pub").read_text().split()[:2]
    knownhosts.record(known_hosts, host.host(), knownhosts.HostKey(kind, blob))


def write_hosts_file(folder: Path, *hosts: Host) -> Path:
    """A hosts file naming these hosts, with its own known_hosts beside it."""
    lines = ['known_hosts = "known_hosts"']
    for h in hosts:
        lines += ["[[hosts]]", f"name = {json.dumps(h.name)}", f"address = {json.dumps(h.address)}",
                  f"port = {h.port}", f"key = {json.dumps(str(h.key))}", f"lab_dir = {json.dumps(str(h.lab_dir))}"]
    path = folder / "hosts.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def clientlab(*args: str, columns: int = 200, stdin: int | None = subprocess.DEVNULL) -> subprocess.CompletedProcess:
    """The `clientlab` command, as a user runs it (the machine's lab data, the hosts file given)."""
    env = {k: v for k, v in os.environ.items() if k not in ("CLIENTLAB_HOSTS", "CLIENTLAB_HOME")}
    return subprocess.run([sys.executable, "-m", "clientlab", *args], check=False, capture_output=True, text=True,
                          env={**env, "COLUMNS": str(columns)}, stdin=stdin, timeout=120)
