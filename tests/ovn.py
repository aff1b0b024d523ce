"""Real OVN for tests: central databases, ``ovn-northd`` and chassis.

The ML2/OVN driver is proven against Debian's ``ovn-central`` and
``ovn-host``, not a fake: the Northbound and Southbound ``ovsdb-server``\\ s
and ``ovn-northd`` of ``OvnCentral``, and one ``ovn-controller`` per emulated
chassis (``OvnChassis``) on the chassis' own Open vSwitch (``tests.ovs``,
userspace datapath: docs/ovs-userspace.md).

Where each runs, and why:

- central runs in the root namespace, with every file in a directory of its
  own. Each database listens on a UNIX socket in a short private ``rundir``
  (what ``nbctl``/``sbctl`` and ``ovn-northd`` use) and on
  ``ptcp:0:127.0.0.1``: the kernel picks a free port, read back from the
  server's own listening socket, so parallel tests never race for one. ``nb``
  and ``sb`` (``tcp:127.0.0.1:PORT``) are what a neutrino server and the
  chassis connect to;
- ``ovn-controller`` runs in the root namespace too, not in its chassis'
  one: a namespace cannot reach the root namespace's 127.0.0.1, and it needs
  nothing of the namespace itself. It reaches its Open vSwitch through the
  database's UNIX socket (``OvsHost.db``) and br-int's OpenFlow socket
  (found through ``OVS_RUNDIR``), both reachable from any namespace; the
  datapath, the tunnels and the instances' ports are where ``ovs-vswitchd``
  runs, in the chassis' namespace. The Southbound DB it reaches over TCP, as
  a real chassis does;
- the tunnels: OVS sends tunnel packets itself on this datapath, routed
  through an address on one of its own bridges, so ``underlay`` puts each
  chassis' encap IP on a netdev bridge ``br-phy`` whose port is the
  chassis' leg of a Linux bridge in a namespace of its own (the "fabric").

Processes in the root namespace are not removed with a ``Sandbox``'s
namespaces: ``ovn_central`` and ``ovn_chassis`` stop them whatever happens,
and ``stop`` SIGKILLs what does not exit when asked.
"""

from __future__ import annotations

import hashlib
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

from tests.dataplane import run
from tests.harness import wait_until
from tests.ovs import OvsError, OvsHost, _ovsdb_value, alive, skip_unless_ovs

TOOLS = ("ovn-northd", "ovn-controller", "ovn-nbctl", "ovn-sbctl", "ovsdb-client")
SCHEMAS = {"nb": Path("/usr/share/ovn/ovn-nb.ovsschema"),
           "sb": Path("/usr/share/ovn/ovn-sb.ovsschema")}
UNIX_PATH_MAX = 107
#: Geneve as OVN sends it over IPv4: outer IPv4 20 + UDP 8 + Geneve 8 + OVN's
#: option 8 + inner Ethernet 14 = 58 bytes more than the instance's IP packet
GENEVE_OVERHEAD = 58


def skip_unless_ovn(*tools: str) -> None:
    """Skip, saying why, where OVN cannot run (not root, tools missing)."""
    skip_unless_ovs(*tools)
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"OVN tests need {', '.join(missing)} "
                    "(Debian: ovn-central, ovn-host; see .ci/run)")
    absent = [str(path) for path in SCHEMAS.values() if not path.exists()]
    if absent:
        pytest.skip(f"OVN tests need the schemas {', '.join(absent)}")


class OvnError(OvsError):
    """An OVN command or daemon failed (an AssertionError, as OvsError)."""


def _run(argv: list[str], env: dict[str, str], timeout: float = 20,
         log: Path | None = None) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **env})
    if done.returncode != 0:
        raise OvnError(f"{' '.join(argv)}: {done.stderr.strip() or done.stdout.strip()}"
                       + (f"\n{log.name}:\n{tail(log)}" if log else ""))
    return done.stdout.strip()


def tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _short_rundir(prefix: str) -> Path:
    rundir = Path(tempfile.mkdtemp(prefix=prefix))
    if len(str(rundir)) + len("/ovn-controller.ctl") > UNIX_PATH_MAX:
        shutil.rmtree(rundir, ignore_errors=True)
        raise OvnError(f"{rundir}: too long for UNIX sockets; set a shorter TMPDIR")
    return rundir


def listening_ports(pid: int) -> set[int]:
    """The TCP ports ``pid`` listens on (IPv4, in the caller's namespace)."""
    inodes = set()
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:  # gone: no ports
        return set()
    for fd in fds:
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    ports = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
            ports.add(int(fields[1].split(":")[1], 16))
    return ports


class Daemon:
    """One OVS-library daemon (``--detach``ed, with its own pidfile, control
    socket and log) run with ``argv`` in ``env``; ``stop`` is sure to end it."""

    def __init__(self, name: str, argv: list[str], rundir: Path, logdir: Path,
                 env: dict[str, str], unixctl: bool = True):
        self.name = name
        self.argv = argv
        self.rundir = rundir
        self.pidfile = rundir / f"{name}.pid"
        self.log = logdir / f"{name}.log"
        self.env = env
        #: whether it takes ``--unixctl`` (ovn-controller does not: its socket
        #: is ``<OVN_RUNDIR>/ovn-controller.<pid>.ctl``)
        self.unixctl = unixctl
        self.pid: int | None = None

    @property
    def ctl(self) -> Path:
        """The control socket (for ``ovs-appctl -t``: an absolute path)."""
        if self.unixctl or self.pid is None:
            return self.rundir / f"{self.name}.ctl"
        return self.rundir / f"{self.name}.{self.pid}.ctl"

    def start(self) -> None:
        _run([*self.argv, f"--pidfile={self.pidfile}",
              *((f"--unixctl={self.ctl}",) if self.unixctl else ()),
              f"--log-file={self.log}", "--detach", "--no-chdir", "-vconsole:off"],
             self.env, log=self.log)
        self.pid = int(self.pidfile.read_text())

    def running(self) -> bool:
        return self.pid is not None and alive(self.pid) and self._ours(self.pid)

    def _ours(self, pid: int) -> bool:
        try:  # not a reused pid: comm is the program's name, cut to 15 characters
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            return False
        return Path(self.argv[0]).name.startswith(comm)

    def kill9(self) -> None:
        """SIGKILL, as a crash: the pidfile and control socket stay behind."""
        if self.running():
            assert self.pid is not None
            os.kill(self.pid, signal.SIGKILL)
            wait_until(lambda: not self.running(), 5, f"{self.name} to die")

    def stop(self) -> None:
        """``exit`` through its control socket, then SIGTERM, then SIGKILL; safe
        to call twice."""
        pid = self.pid
        if pid is None or not self.running():
            self.pid = None
            return
        try:
            asked = subprocess.run(["ovs-appctl", "-t", str(self.ctl), "--timeout=5", "exit"],
                                   capture_output=True, timeout=10).returncode == 0
        except subprocess.TimeoutExpired:
            asked = False
        for sig in ((None,) if asked else ()) + (signal.SIGTERM, signal.SIGKILL):
            if sig is not None and alive(pid) and self._ours(pid):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + 5
            while alive(pid) and time.monotonic() < deadline:
                time.sleep(0.02)
            if not alive(pid):
                self.pid = None
                return
        raise OvnError(f"{self.name} (pid {pid}) survived SIGKILL")


class OvnCentral:
    """The Northbound and Southbound databases and ``ovn-northd``."""

    def __init__(self, workdir: Path, rundir: Path):
        self.workdir = workdir
        self.rundir = rundir
        self.env = {"OVN_RUNDIR": str(rundir), "OVS_RUNDIR": str(rundir),
                    "OVN_LOGDIR": str(workdir), "OVS_LOGDIR": str(workdir),
                    "OVN_DBDIR": str(workdir), "OVS_DBDIR": str(workdir)}
        #: ``unix:...`` of each database (for local clients: nbctl, northd)
        self.local = {db: f"unix:{rundir / db}.sock" for db in SCHEMAS}
        self.ports: dict[str, int] = {}
        self.servers = {db: Daemon(f"ovsdb-server-{db}", [
            "ovsdb-server", str(workdir / f"{db}.db"), f"--remote=p{self.local[db]}",
            "--remote=ptcp:0:127.0.0.1"], rundir, workdir, self.env) for db in SCHEMAS}
        self.northd = Daemon("ovn-northd", [
            "ovn-northd", f"--ovnnb-db={self.local['nb']}", f"--ovnsb-db={self.local['sb']}"],
            rundir, workdir, self.env)

    @property
    def nb(self) -> str:
        """The Northbound DB for a server or a client: ``tcp:127.0.0.1:PORT``."""
        return f"tcp:127.0.0.1:{self.ports['nb']}"

    @property
    def sb(self) -> str:
        """The Southbound DB for chassis and agents: ``tcp:127.0.0.1:PORT``."""
        return f"tcp:127.0.0.1:{self.ports['sb']}"

    @classmethod
    def start(cls, workdir: Path | str) -> OvnCentral:
        """Both databases (new, empty) and ``ovn-northd`` running; on failure,
        nothing left running and an OvnError with the logs."""
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        central = cls(workdir, _short_rundir("nt-ovn-"))
        try:
            for db, schema in SCHEMAS.items():
                path = workdir / f"{db}.db"
                path.unlink(missing_ok=True)
                _run(["ovsdb-tool", "create", str(path), str(schema)], central.env)
                central._start_server(db)
            central.northd.start()
            central.nbctl("--wait=sb", "sync")  # northd has met both databases
        except BaseException:
            central.stop()
            raise
        return central

    def _start_server(self, db: str) -> None:
        server = self.servers[db]
        if db in self.ports:  # a restart listens where clients expect it
            server.argv[-1] = f"--remote=ptcp:{self.ports[db]}:127.0.0.1"
        server.start()
        assert server.pid is not None
        pid = server.pid
        ports = wait_until(lambda: listening_ports(pid), 5,
                           lambda: f"{server.name} to listen:\n{tail(server.log)}")
        [port] = ports
        if self.ports.setdefault(db, port) != port:
            raise OvnError(f"{server.name} listens on {port}, not {self.ports[db]}")

    def stop_nb(self) -> None:
        """Stop the Northbound ``ovsdb-server`` alone; its database file stays."""
        self.servers["nb"].stop()

    def start_nb(self) -> None:
        """Start it again, on the same port, with the data it had."""
        self._start_server("nb")

    def stop(self) -> None:
        """Stop all three (safe twice) and remove ``rundir``."""
        try:
            for daemon in (self.northd, *self.servers.values()):
                daemon.stop()
        finally:
            shutil.rmtree(self.rundir, ignore_errors=True)

    def nbctl(self, *args: str) -> str:
        return _run(["ovn-nbctl", f"--db={self.local['nb']}", "--timeout=20", *args],
                    self.env, timeout=30)

    def sbctl(self, *args: str) -> str:
        return _run(["ovn-sbctl", f"--db={self.local['sb']}", "--timeout=20", *args],
                    self.env, timeout=30)

    def nb_get(self, table: str, record: str, column: str) -> Any:
        return self._get(self.nbctl, table, record, column)

    def sb_get(self, table: str, record: str, column: str) -> Any:
        return self._get(self.sbctl, table, record, column)

    def sb_rows(self, table: str, *conditions: str) -> list[dict[str, Any]]:
        """Rows of a Southbound table (``find`` with ``conditions``), as Python."""
        done = json.loads(self.sbctl("--format=json", "find", table, *conditions))
        return [dict(zip(done["headings"], map(_ovsdb_value, row), strict=True))
                for row in done["data"]]

    @staticmethod
    def _get(ctl: Any, table: str, record: str, column: str) -> Any:
        done = json.loads(ctl("--format=json", f"--columns={column}", "list", table, record))
        return _ovsdb_value(done["data"][0][0])


class OvnChassis:
    """``ovn-controller`` of one emulated chassis, on that chassis' ``OvsHost``."""

    def __init__(self, ovs: OvsHost, central: OvnCentral, name: str):
        self.ovs = ovs
        self.central = central
        self.name = name
        self.env = {**ovs.env, "OVN_RUNDIR": str(ovs.rundir), "OVN_LOGDIR": str(ovs.workdir)}
        self.controller = Daemon("ovn-controller", ["ovn-controller", ovs.db], ovs.rundir,
                                 ovs.workdir, self.env, unixctl=False)

    @classmethod
    def start(cls, ovs: OvsHost, central: OvnCentral, encap_ip: str,
              encap_type: str = "geneve", name: str | None = None,
              bridge_mappings: dict[str, str] | None = None,
              gateway: bool = False) -> OvnChassis:
        """Configure ``ovs`` as OVN's chassis ``name`` (the namespace's name by
        default) with tunnel address ``encap_ip`` and start ``ovn-controller``.
        br-int is made here, on the netdev datapath, before ovn-controller
        starts (``ovn-bridge-datapath-type`` would make it so too).
        ``bridge_mappings``: physical network -> a bridge of ``ovs`` (made here);
        ``gateway``: the chassis offers itself to carry routers' gateway ports."""
        chassis = cls(ovs, central, name or ovs.namespace)
        mappings = bridge_mappings or {}
        try:
            for bridge in mappings.values():
                ovs.add_bridge(bridge)
            pairs = ",".join(f"{net}:{bridge}" for net, bridge in mappings.items())
            extra = [f"external_ids:ovn-bridge-mappings={pairs}"] if mappings else []
            if gateway:
                extra.append("external_ids:ovn-cms-options=enable-chassis-as-gw")
            ovs.add_bridge("br-int", "fail_mode=secure", "other_config:disable-in-band=true")
            ovs.vsctl("set", "open_vswitch", ".",
                      f"external_ids:system-id={chassis.name}",
                      f"external_ids:hostname={chassis.name}",
                      f"external_ids:ovn-remote={central.sb}",
                      f"external_ids:ovn-encap-type={encap_type}",
                      f"external_ids:ovn-encap-ip={encap_ip}",
                      "external_ids:ovn-bridge=br-int",
                      "external_ids:ovn-bridge-datapath-type=netdev",
                      "external_ids:ovn-remote-probe-interval=5000", *extra)
            chassis.controller.start()
        except BaseException:
            chassis.stop()
            raise
        return chassis

    def start_controller(self) -> None:
        """(Re)start ``ovn-controller`` (after ``kill9``, say)."""
        self.controller.start()

    def kill9(self) -> None:
        """``ovn-controller`` dies as in a crash: flows stay in ovs-vswitchd."""
        self.controller.kill9()

    def stop(self) -> None:
        """Stop ``ovn-controller`` (safe twice); the OvsHost is the caller's."""
        self.controller.stop()

    def log(self, lines: int = 30) -> str:
        return tail(self.controller.log, lines)

    def plug(self, port_name: str, namespace: str, mac: str, cidr: str | None = None,
             mtu: int = 1500 - GENEVE_OVERHEAD) -> str:
        """An instance: ``namespace``'s ``eth0`` (``mac``, ``cidr`` if given,
        ``mtu``) a veth whose other end is on br-int as the port of logical
        switch port ``port_name`` (``external_ids:iface-id``). Checksum offload
        is off on ``eth0``: on the netdev datapath a veth's partial checksums
        would reach the other side unfinished (docs/ovs-userspace.md). The
        device's name on br-int is returned."""
        device = "ovn" + hashlib.sha256(port_name.encode()).hexdigest()[:11]
        run("ip", "link", "add", device, "netns", self.ovs.namespace, "mtu", str(mtu),
            "type", "veth", "peer", "name", "eth0", "netns", namespace, "address", mac,
            "mtu", str(mtu))
        run("ip", "link", "set", device, "up", namespace=self.ovs.namespace)
        run("ethtool", "-K", "eth0", "tx", "off", namespace=namespace)
        if cidr:
            run("ip", "addr", "add", cidr, "dev", "eth0", namespace=namespace)
        run("ip", "link", "set", "eth0", "up", namespace=namespace)
        self.ovs.vsctl("add-port", "br-int", device, "--", "set", "interface", device,
                       f"external_ids:iface-id={port_name}", f"external_ids:attached-mac={mac}",
                       "external_ids:iface-status=active")
        self.ovs.check_interface(device)
        return device


def underlay(fabric: str, hosts: list[tuple[OvsHost, str]], mtu: int = 1500) -> None:
    """Join ``hosts`` (each an OvsHost and its tunnel address as a CIDR) on one
    L2 segment: a Linux bridge in namespace ``fabric``, a veth leg per host,
    the host's end on a netdev bridge ``br-phy`` that holds the address (OVS
    routes its tunnels only through its own bridges' addresses). The first
    packet to a peer whose underlay MAC OVS has not learnt yet is dropped while
    it asks (``tnl/neigh``): wait for traffic with repeated pings."""
    run("ip", "link", "add", "fabric", "type", "bridge", namespace=fabric)
    run("ip", "link", "set", "fabric", "up", namespace=fabric)
    for index, (ovs, cidr) in enumerate(hosts):
        leg = f"leg{index}"
        run("ip", "link", "add", leg, "netns", fabric, "mtu", str(mtu), "type", "veth",
            "peer", "name", "eth1", "netns", ovs.namespace, "mtu", str(mtu))
        run("ip", "link", "set", leg, "master", "fabric", "up", namespace=fabric)
        run("ip", "link", "set", "eth1", "up", namespace=ovs.namespace)
        ovs.add_bridge("br-phy")
        ovs.vsctl("--may-exist", "add-port", "br-phy", "eth1")
        ovs.check_interface("eth1")
        run("ip", "link", "set", "br-phy", "mtu", str(mtu), "up", namespace=ovs.namespace)
        run("ip", "addr", "add", cidr, "dev", "br-phy", namespace=ovs.namespace)


def external_host(ovs: OvsHost, bridge: str, namespace: str, cidr: str) -> None:
    """A host on the physical network behind ``bridge`` of ``ovs``: ``namespace``'s
    ``eth0`` (``cidr``), a veth whose other end is a port of the bridge."""
    leg = "ext" + hashlib.sha256(namespace.encode()).hexdigest()[:8]
    run("ip", "link", "add", leg, "netns", ovs.namespace, "type", "veth",
        "peer", "name", "eth0", "netns", namespace)
    run("ip", "link", "set", leg, "up", namespace=ovs.namespace)
    run("ethtool", "-K", "eth0", "tx", "off", namespace=namespace)
    run("ip", "addr", "add", cidr, "dev", "eth0", namespace=namespace)
    run("ip", "link", "set", "eth0", "up", namespace=namespace)
    ovs.vsctl("--may-exist", "add-port", bridge, leg)
    ovs.check_interface(leg)


@contextmanager
def ovn_central(workdir: Path | str) -> Iterator[OvnCentral]:
    """A started ``OvnCentral``, stopped at the end whatever happened."""
    central = OvnCentral.start(workdir)
    try:
        yield central
    finally:
        central.stop()


@contextmanager
def ovn_chassis(ovs: OvsHost, central: OvnCentral, encap_ip: str,
                encap_type: str = "geneve", bridge_mappings: dict[str, str] | None = None,
                gateway: bool = False) -> Iterator[OvnChassis]:
    """A started ``OvnChassis``, its ``ovn-controller`` stopped at the end."""
    chassis = OvnChassis.start(ovs, central, encap_ip, encap_type,
                               bridge_mappings=bridge_mappings, gateway=gateway)
    try:
        yield chassis
    finally:
        chassis.stop()


__all__ = ["GENEVE_OVERHEAD", "OvnCentral", "OvnChassis", "OvnError", "external_host",
           "ovn_central", "ovn_chassis", "skip_unless_ovn", "underlay"]
