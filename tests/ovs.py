"""A private Open vSwitch per emulated host, on the userspace datapath.

There is no OVS kernel module here: every bridge is ``datapath_type=netdev``
(docs/ovs-userspace.md). ``OvsHost.start(namespace, workdir)`` runs an
``ovsdb-server`` and an ``ovs-vswitchd`` of their own inside the host's
network namespace (the netdev datapath makes a tap ``ovs-netdev`` there, so
one ``ovs-vswitchd`` per namespace), with nothing in /var/run/openvswitch or
/etc/openvswitch: the database and logs go to ``workdir``, the sockets and
pidfiles to ``rundir``, a short directory of its own (a UNIX socket's path is
at most 107 bytes; pytest's ``tmp_path`` can be longer). Clients reach it from
any namespace: ``db`` (``unix:...``) for ovsdb clients (ovs-vsctl, ovsdbapp),
``env`` (``OVS_RUNDIR``...) for anything that runs ``ovs-ofctl BRIDGE``.

``stop`` leaves no process behind, whatever state the daemons are in; both
run in the host's namespace, so a ``Sandbox`` that removes it kills them too
should a test never get to ``stop``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

TOOLS = ("ip", "ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovs-ofctl",
         "ovs-appctl", "ethtool")
SCHEMA = Path("/usr/share/openvswitch/vswitch.ovsschema")
DAEMONS = ("ovsdb-server", "ovs-vswitchd")
#: the longest name a socket in ``rundir`` gets: ``<bridge, 15 characters>.snoop``
LONGEST_SOCKET = 15 + len(".snoop")
UNIX_PATH_MAX = 107


def skip_unless_ovs(*tools: str) -> None:
    """Skip, saying why, where a private Open vSwitch cannot run."""
    if os.geteuid() != 0:
        pytest.skip("Open vSwitch tests need root (network namespaces, taps)")
    missing = [tool for tool in (*TOOLS, *tools) if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"Open vSwitch tests need {', '.join(missing)} "
                    "(Debian: openvswitch-switch, ethtool; see .ci/run)")
    if not SCHEMA.exists():
        pytest.skip(f"Open vSwitch tests need the database schema {SCHEMA}")


class OvsError(AssertionError):
    """An OVS command failed (an AssertionError: a test that meets one fails)."""


def alive(pid: int) -> bool:
    """Whether ``pid`` runs: a zombie (exited, not reaped yet: detached daemons
    are reparented to PID 1, which reaps lazily) counts as gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _is_ovs(pid: int) -> bool:
    """Whether ``pid`` is still one of OVS's daemons (not a reused pid)."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() in DAEMONS
    except OSError:
        return False


class OvsHost:
    """``ovsdb-server`` and ``ovs-vswitchd`` of one emulated host."""

    def __init__(self, namespace: str, workdir: Path, rundir: Path):
        self.namespace = namespace
        self.workdir = workdir
        self.rundir = rundir
        self.db = f"unix:{rundir / 'db.sock'}"
        self.env = {"OVS_RUNDIR": str(rundir), "OVS_LOGDIR": str(workdir),
                    "OVS_DBDIR": str(workdir), "OVS_SYSCONFDIR": str(workdir)}
        #: daemon name -> pid, as read from its pidfile once it started
        self.pids: dict[str, int] = {}

    @classmethod
    def start(cls, namespace: str, workdir: Path | str) -> OvsHost:
        """Both daemons running in ``namespace`` (which must have none yet);
        on failure, nothing left running and an OvsError with the logs."""
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        rundir = Path(tempfile.mkdtemp(prefix="nt-ovs-"))
        if len(str(rundir)) + 1 + LONGEST_SOCKET > UNIX_PATH_MAX:
            shutil.rmtree(rundir, ignore_errors=True)
            raise OvsError(f"{rundir}: too long for OVS's sockets; set a shorter TMPDIR")
        host = cls(namespace, workdir, rundir)
        try:
            host._start()
        except BaseException:
            host.stop()
            raise
        return host

    def _start(self) -> None:
        conf = self.workdir / "conf.db"
        conf.unlink(missing_ok=True)
        self._run("ovsdb-tool", "create", str(conf), str(SCHEMA))
        self._daemon("ovsdb-server", str(conf), f"--remote=p{self.db}")
        self.vsctl("--no-wait", "init")
        self.start_vswitchd()

    def _daemon(self, name: str, *args: str) -> None:
        self._run("ip", "netns", "exec", self.namespace, name, *args,
                  f"--pidfile={self.rundir / name}.pid", f"--unixctl={self.ctl(name)}",
                  f"--log-file={self.workdir / name}.log", "--detach", "--no-chdir",
                  "-vconsole:off", what=name)
        self.pids[name] = int((self.rundir / f"{name}.pid").read_text())

    def start_vswitchd(self) -> None:
        """(Re)start ``ovs-vswitchd``: bridges and ports come back from the
        database, OpenFlow flows do not."""
        self._daemon("ovs-vswitchd", self.db)

    def stop_vswitchd(self, cleanup: bool = False) -> None:
        """Stop ``ovs-vswitchd`` as an agent's host sees it on a restart
        (``cleanup``: with the bridges' taps removed, as on a shutdown)."""
        self._stop("ovs-vswitchd", "exit", *(("--cleanup",) if cleanup else ()))

    def restart_vswitchd(self) -> None:
        self.stop_vswitchd()
        self.start_vswitchd()

    def stop(self) -> None:
        """Stop both daemons (politely, then SIGTERM, then SIGKILL), and wait
        until neither runs; remove ``rundir``. Safe to call twice."""
        try:
            self._stop("ovs-vswitchd", "exit", "--cleanup")
        finally:
            try:
                self._stop("ovsdb-server", "exit")
            finally:
                shutil.rmtree(self.rundir, ignore_errors=True)

    def _stop(self, name: str, *command: str) -> None:
        pids = {self.pids.pop(name, None)}
        try:  # read before the exit: the daemon removes its pidfile
            pids.add(int((self.rundir / f"{name}.pid").read_text()))
        except (OSError, ValueError):
            pass
        pids = {pid for pid in pids if pid is not None and alive(pid) and _is_ovs(pid)}
        if not pids:
            return
        try:
            asked = subprocess.run(["ovs-appctl", "-t", str(self.ctl(name)), "--timeout=5",
                                    *command], capture_output=True, timeout=10).returncode == 0
        except subprocess.TimeoutExpired:
            asked = False
        for sig in ((None,) if asked else ()) + (signal.SIGTERM, signal.SIGKILL):
            for pid in pids:
                if sig is not None and alive(pid) and _is_ovs(pid):
                    try:
                        os.kill(pid, sig)
                    except ProcessLookupError:
                        pass
            deadline = time.monotonic() + 5
            while any(map(alive, pids)) and time.monotonic() < deadline:
                time.sleep(0.02)
            if not any(map(alive, pids)):
                return
        raise OvsError(f"{name} (pids {sorted(pids)}) survived SIGKILL")

    def ctl(self, daemon: str = "ovs-vswitchd") -> Path:
        """A daemon's control socket (``ovs-appctl -t`` takes it: an absolute
        path, a relative one would be taken for a pidfile's name)."""
        return self.rundir / f"{daemon}.ctl"

    def _run(self, *argv: str, what: str | None = None, timeout: float = 20) -> str:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **self.env})
        if done.returncode != 0:
            log = self.log(what) if what else ""
            raise OvsError(f"{' '.join(argv)}: {done.stderr.strip() or done.stdout.strip()}"
                           + (f"\n{what}.log:\n{log}" if log else ""))
        return done.stdout.strip()

    def vsctl(self, *args: str) -> str:
        """``ovs-vsctl`` against this host's database; its output."""
        return self._run("ovs-vsctl", f"--db={self.db}", "--timeout=10", *args,
                         what="ovs-vswitchd")

    def ofctl(self, *args: str) -> str:
        """``ovs-ofctl`` (``BRIDGE`` names work: ``OVS_RUNDIR`` finds its socket)."""
        return self._run("ovs-ofctl", *args)

    def appctl(self, *args: str, target: str = "ovs-vswitchd") -> str:
        """``ovs-appctl`` to ``target`` (``ovs-vswitchd`` or ``ovsdb-server``)."""
        return self._run("ovs-appctl", "-t", str(self.ctl(target)), "--timeout=10", *args)

    def get(self, table: str, record: str, column: str) -> Any:
        """One column of one row, as Python: a map is a dict, a set a list."""
        done = self.vsctl("--format=json", f"--columns={column}", "list", table, record)
        return _ovsdb_value(json.loads(done)["data"][0][0])

    def add_bridge(self, name: str, *settings: str) -> None:
        """A bridge on the userspace datapath (``settings``: more ``key=value``
        of its Bridge row: ``fail_mode=secure``...), checked: ovs-vsctl says
        nothing (exit 0) when the datapath fails to open."""
        self.vsctl("--may-exist", "add-br", name, "--", "set", "bridge", name,
                   "datapath_type=netdev", *settings)
        self.check_interface(name)
        if not (self.rundir / f"{name}.mgmt").exists():
            raise OvsError(f"{name}: no OpenFlow socket in {self.rundir} (OVS_RUNDIR?)")

    def check_interface(self, name: str) -> int:
        """The interface's OpenFlow port number; OvsError if OVS could not open it."""
        error = self.get("interface", name, "error")
        ofport = self.get("interface", name, "ofport")
        if error or not isinstance(ofport, int) or ofport < 0:
            raise OvsError(f"{name} in {self.namespace}: {error or f'ofport {ofport}'}"
                           f"\novs-vswitchd.log:\n{self.log('ovs-vswitchd')}")
        return ofport

    def log(self, daemon: str = "ovs-vswitchd", lines: int = 30) -> str:
        path = self.workdir / f"{daemon}.log"
        try:
            return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def _ovsdb_value(value: Any) -> Any:
    """OVSDB's JSON (RFC 7047) as Python: ["map", pairs], ["set", items], ["uuid", id]."""
    if isinstance(value, list) and len(value) == 2 and isinstance(value[0], str):
        kind, body = value
        if kind == "map":
            return {_ovsdb_value(k): _ovsdb_value(v) for k, v in body}
        if kind == "set":
            return [_ovsdb_value(item) for item in body]
        if kind in ("uuid", "named-uuid"):
            return body
    return value


@contextmanager
def ovs_host(namespace: str, workdir: Path | str, bridges: tuple[str, ...] = ("br-int",)
             ) -> Iterator[OvsHost]:
    """A started ``OvsHost`` with ``bridges``, stopped at the end whatever happened."""
    host = OvsHost.start(namespace, workdir)
    try:
        for bridge in bridges:
            host.add_bridge(bridge)
        yield host
    finally:
        host.stop()
