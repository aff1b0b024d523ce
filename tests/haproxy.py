"""An HAProxy of a test's own in front of servers, as docs/deployment.md runs one.

Roundrobin, ``GET /`` health checks every 200 ms (taken out after 2 failures,
back after 2 successes), a refused connect tried again on another server
(``retries``, ``option redispatch 1``), and each answer's server named in an
``X-Served-By`` header (HAProxy's own error pages have none). Its files and
stats socket are in a short directory of its own (a UNIX socket's path is at
most 107 bytes; pytest's ``tmp_path`` can be longer), removed by ``stop``.
"""

from __future__ import annotations

import csv
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from tests.harness import free_port, terminate, wait_until

BACKEND = "servers"  # the backend's name; its servers are named by the caller

HAPROXY_CONF = """\
global
    stats socket {socket} mode 600 level admin
    maxconn 256

defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    # a connection refused is tried again, on the other server: a request
    # sent to a server that then died is not (it may have been done)
    retries 3
    option redispatch 1

frontend api
    bind 127.0.0.1:{port}
    default_backend {backend}

backend {backend}
    balance roundrobin
    option httpchk GET /
    http-check expect status 200
    default-server check inter 200ms fall 2 rise 2
    http-response set-header X-Served-By %[srv_name]
{servers}
"""


class HaProxy:
    """An haproxy process in front of ``servers`` (name -> port on 127.0.0.1);
    its stats socket tells which servers it sends requests to."""

    def __init__(self, servers: dict[str, int]):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # a directory of its own, short: a UNIX socket's path has a length limit
        self.dir = Path(tempfile.mkdtemp(prefix="neutrino-lb-"))
        self.socket = self.dir / "stats.sock"
        self.conf = self.dir / "haproxy.cfg"
        self.conf.write_text(HAPROXY_CONF.format(
            socket=self.socket, port=self.port, backend=BACKEND,
            servers="\n".join(f"    server {name} 127.0.0.1:{port}"
                              for name, port in servers.items())))
        self.log = self.dir / "haproxy.log"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        checked = subprocess.run(["haproxy", "-c", "-q", "-f", str(self.conf)],
                                 capture_output=True, text=True, timeout=30)
        assert checked.returncode == 0, checked.stderr
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(["haproxy", "-db", "-f", str(self.conf)],
                                         stdout=log, stderr=subprocess.STDOUT)
        wait_until(self.socket.exists, 10, "haproxy's stats socket")

    def stats(self) -> dict[str, dict[str, str]]:
        """``show stat`` of the backend's servers: name -> HAProxy's columns."""
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(str(self.socket))
            sock.sendall(b"show stat\n")
            answer = b"".join(iter(lambda: sock.recv(65536), b"")).decode()
        rows = csv.DictReader(answer.removeprefix("# ").splitlines())
        return {row["svname"]: row for row in rows
                if row["pxname"] == BACKEND and row["svname"] not in ("FRONTEND", "BACKEND")}

    def status(self) -> dict[str, str]:
        """Each server's state as HAProxy sees it: UP, DOWN, or on the way
        (``UP 1/2`` still takes requests, ``DOWN 1/2`` does not yet)."""
        return {name: row["status"] for name, row in self.stats().items()}

    def requests(self) -> dict[str, int]:
        """The HTTP requests each server has been sent (health checks not counted)."""
        return {name: int(row["req_tot"] or 0) for name, row in self.stats().items()}

    def wait_for(self, server: str, state: str, seconds: float = 20) -> float:
        """Wait until HAProxy takes ``server`` for ``state``; the time it was seen."""
        wait_until(lambda: self.status().get(server) == state, seconds,
                   lambda: f"haproxy to take {server} for {state}: {self.status()}")
        return time.monotonic()

    def stop(self) -> None:
        try:
            if self.proc is not None:
                terminate(self.proc)
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
