"""Debian's nginx, started by the lab as the reference server people would use instead.

One worker process (the bench server's equal), pinned where the bench server would run, serving
a folder of static files on loopback over HTTP/1.1, and over TLS with HTTP/2 when asked. Its
access log is JSON, one line per request (buffered: see LOG_FLUSH_S), so that the lab can count
what clients did against it (`StaticServer`, used by `clientlab crosscheck`) just as it does with
its own server.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from clientlab import paths
from clientlab.errors import LabError
from clientlab.servers.control import stop
from clientlab.servers.side import Endpoint, local_cpu_ns

LOG_FORMAT = ('{"path":"$uri","status":$status,"resp_body_bytes":$body_bytes_sent,'
              '"conn":$connection,"conn_requests":$connection_requests,"proto":"$server_protocol",'
              '"req_bytes":$request_length,"bytes_out":$bytes_sent}')


# nginx buffers its access log and writes it at least this often: a write per request cost a
# client on nginx's core 11 % of its rate on small GETs (docs/evidence/measurement.md, crosscheck)
LOG_FLUSH_S = 0.1
# how long nginx may take to write its buffered log when told to (StaticServer._log_written)
LOG_REOPEN_S = 5.0


def available() -> str | None:
    """Why nginx cannot be started here, or None."""
    if not shutil.which("nginx") and not Path("/usr/sbin/nginx").exists():
        return "nginx is not installed (./setup.sh installs Debian's nginx)"
    return None


def version() -> str | None:
    """'1.22.1' from `nginx -v`, or None."""
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    try:
        text = subprocess.run([binary, "-v"], capture_output=True, text=True, timeout=10).stderr
    except OSError:
        return None
    return text.strip().rsplit("/", 1)[-1] or None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Nginx:
    """nginx with one worker serving `root` on 127.0.0.1; `http_port`, `https_port` (HTTP/2 + 1.1).
    Its access log is buffered and written at least every `log_flush_s`."""

    def __init__(self, root: Path, cpu: int | None = None, access_log: bool = True, connections: int = 20000,
                 log_flush_s: float = LOG_FLUSH_S):
        reason = available()
        if reason:
            raise LabError(reason)
        self.dir = Path(tempfile.mkdtemp(prefix="clientlab-nginx-", dir=paths.scratch_dir()))
        self.root = root
        self.http_port, self.https_port = _free_port(), _free_port()
        self.log_path = self.dir / "access.log"
        tls = paths.tls_dir()
        log = (f"access_log {self.log_path} lab buffer=64k flush={int(log_flush_s * 1000)}ms;" if access_log
               else "access_log off;")
        affinity = f"worker_cpu_affinity {1 << cpu:b};" if cpu is not None else ""
        user = "user root;" if os.geteuid() == 0 else ""  # the worker reads the lab's own scratch files
        (self.dir / "nginx.conf").write_text(f"""
{user}
worker_processes 1;
{affinity}
worker_rlimit_nofile {connections * 2 + 100};
daemon off;
pid {self.dir}/nginx.pid;
error_log {self.dir}/error.log warn;
events {{ worker_connections {connections + 100}; multi_accept on; }}
http {{
    log_format lab '{LOG_FORMAT}';
    {log}
    # one read and one write per response, as the bench server does: with sendfile, a client on
    # nginx's core got a third of the rate on a 335 KB file (docs/evidence/measurement.md, crosscheck)
    sendfile off; output_buffers 1 512k; open_file_cache max=1000; tcp_nodelay on;
    keepalive_requests 10000000; keepalive_timeout 300s;
    http2_max_requests 10000000;
    types {{ }} default_type application/octet-stream;
    client_body_temp_path {self.dir}/body; proxy_temp_path {self.dir}/proxy;
    fastcgi_temp_path {self.dir}/fastcgi; uwsgi_temp_path {self.dir}/uwsgi; scgi_temp_path {self.dir}/scgi;
    server {{
        listen 127.0.0.1:{self.http_port} backlog=4096;
        listen 127.0.0.1:{self.https_port} ssl http2 backlog=4096;
        ssl_certificate {tls / "server.pem"}; ssl_certificate_key {tls / "server-key.pem"};
        root {root};
        location / {{ }}
        # the files have no extension: their types as the bench server gives them, as a real
        # nginx gives .json and .atom files theirs (mime.types)
        location /json/ {{ default_type application/json; }}
        location /feeds/ {{ default_type application/atom+xml; }}
    }}
}}
""")
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        self.proc = subprocess.Popen([binary, "-p", str(self.dir), "-c", str(self.dir / "nginx.conf")],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._wait_listening()

    def _wait_listening(self, timeout_s: float = 10) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                raise LabError(f"nginx did not start (exit {self.proc.returncode}): {err.strip()[-500:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.http_port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise LabError("nginx did not listen within 10 s")

    def pids(self) -> list[int]:
        """The nginx processes (one: master_process stays on, so the worker is its child)."""
        from clientlab.measuring.procfs import process_tree

        return process_tree(self.proc.pid)

    def stop(self) -> None:
        stop(self.proc)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "Nginx":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _held(pids: list[int], path: Path) -> bool:
    """Whether any of these processes has `path` open."""
    target = str(path)
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue  # gone
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                    return True
            except OSError:
                pass
    return False


class StaticServer:
    """nginx where the runner expects a BenchServer: static files fetched once from the bench
    server (the same bytes), and counters read from nginx's access log since the last reset.

    What nginx cannot tell (read events, stalls, TLS handshakes) is absent from its record; the
    counts, statuses, versions and bodies are checked as on the bench server.
    """

    driver_prefix: list[str] = []

    def __init__(self, source: Any, paths_served: list[str], cpu: int | None = None,
                 log_flush_s: float = LOG_FLUSH_S):
        self.root = Path(tempfile.mkdtemp(prefix="clientlab-static-", dir=paths.scratch_dir()))
        self.digests: dict[str, tuple[int, str]] = {}
        for path in paths_served:
            self._copy(source, path)
        self.nginx = Nginx(self.root, cpu, log_flush_s=log_flush_s)
        self.proc = self.nginx.proc
        self.endpoint = Endpoint(host="127.0.0.1", http_port=self.nginx.http_port, https_port=self.nginx.https_port,
                                 ca_file=source.endpoint.ca_file)
        self._offset = 0
        self._settled = False  # the log was complete when last read, and no trial has run since
        self._log = self.nginx.dir / "collected.log"  # what nginx wrote, moved out of its log (_log_written)
        self._log.touch()
        self._moves = 0

    def _copy(self, source: Any, path: str) -> None:
        """Fetch `path` from the bench server into the static folder, and keep its digest."""
        import http.client

        conn = http.client.HTTPConnection(source.endpoint.host, source.endpoint.http_port, timeout=60)
        target = self.root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        digest, size = hashlib.sha256(), 0
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            if response.status != 200:
                raise LabError(f"bench server answered {response.status} for {path}")
            with open(target, "wb") as f:
                while chunk := response.read(1 << 20):
                    f.write(chunk)
                    digest.update(chunk)
                    size += len(chunk)
        finally:
            conn.close()
        self.digests[path] = (size, digest.hexdigest())

    # -- the BenchServer surface the runner uses --------------------------------------------

    def configure(self, **settings: Any) -> None:
        pass  # digests are known from the files themselves

    def rebind(self) -> None:
        return None  # nginx keeps its ports; its log is read from an offset instead

    def describe(self) -> None:
        return None

    def reset(self) -> None:
        if not self._settled:  # what came before (a failed trial's last requests) is not the next trial's
            self._log_written()
        self._settled = False
        self._offset = self._log.stat().st_size

    @property
    def log_writes(self) -> int:
        """How often nginx was made to write its buffered log (_log_written)."""
        return self._moves

    def _log_written(self) -> None:
        """Have nginx write what it buffered, and wait until it has: its log is moved aside and
        nginx told to reopen it (SIGUSR1); the worker writes its buffer to the moved file before it
        opens the new one, so once no nginx process holds the moved file it is complete, and its
        lines join the lab's copy. nginx's own flush timer ran late on a busy host, and a trial's
        count came up short by a buffer's worth."""
        moved = self.nginx.dir / f"access.{self._moves}.log"
        self._moves += 1
        os.rename(self.nginx.log_path, moved)
        os.kill(self.proc.pid, signal.SIGUSR1)
        deadline = time.monotonic() + LOG_REOPEN_S
        while _held(self.nginx.pids(), moved):
            if time.monotonic() > deadline:
                raise LabError(f"nginx did not write its buffered access log within {LOG_REOPEN_S:.0f} s of SIGUSR1")
            time.sleep(0.001)
        with open(moved, "rb") as src, open(self._log, "ab") as dst:
            shutil.copyfileobj(src, dst)
        moved.unlink()

    def progress(self) -> dict[str, Any]:
        """The counters while a trial runs (a stall watch): the log is not settled by this read."""
        return self._read()

    def counters(self, reset: bool = False) -> dict[str, Any]:
        """The counters at the end of a trial: what nginx logged since the last reset."""
        snapshot = self._read()
        self._settled = True
        if reset:
            self.reset()
        return snapshot

    def _read(self) -> dict[str, Any]:
        self._log_written()
        with open(self._log) as f:
            f.seek(self._offset)
            entries = [json.loads(line) for line in f if line.strip()]
        conns: dict[int, int] = {}
        versions: dict[str, int] = {}
        log = []
        for e in entries:
            conns[e["conn"]] = conns.get(e["conn"], 0) + 1
            version = {"HTTP/2.0": "HTTP/2.0"}.get(e["proto"], e["proto"])
            versions[version] = versions.get(version, 0) + 1
            size, digest = self.digests.get(e["path"], (None, None))
            entry = {"path": e["path"], "status": e["status"], "resp_body_bytes": e["resp_body_bytes"]}
            if e["status"] == 200 and size == e["resp_body_bytes"]:
                entry["resp_sha256"] = digest
            log.append(entry)
        snapshot = {"requests": len(entries), "connections": len(conns), "versions": versions, "log": log,
                    "conns": [{"requests": n} for n in conns.values()],
                    "bytes_out": sum(e["bytes_out"] for e in entries),
                    "bytes_in": sum(e["req_bytes"] for e in entries)}
        return snapshot

    def alive(self) -> bool:
        return self.proc.poll() is None

    def exit_reason(self) -> str:
        return f"nginx exited with code {self.proc.poll()}"

    def cpu_ns(self) -> int | None:
        return local_cpu_ns(self.proc.pid)

    def local_pids(self) -> list[int]:
        return [self.proc.pid]

    def stop(self) -> None:
        self.nginx.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> "StaticServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
