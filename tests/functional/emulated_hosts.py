"""Hosts emulated in network namespaces, for the dataplane's end-to-end tests.

An ``underlay`` namespace holds a bridge; each host is a namespace with a veth
``ul0`` on it carrying the host's ``local_ip`` (their VXLAN traffic crosses
that bridge). The agents run inside their host's namespace (``ip netns
exec``), as on a machine of their own; they reach the test's RabbitMQ vhost
through a UNIX socket (namespaces share the file system, not the loopback):
``socat`` on 127.0.0.1:5672 in each host, to a socket that a ``socat`` in the
root namespace forwards to the broker. Everything is removed at the end.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.dataplane import Sandbox, as_a_host, run, sandbox, wait_until
from tests.harness import Server, create_database, start_server
from tests.ovs import OvsHost

BIN = Path(sys.executable).parent
AMQP_PORT = 5672
PHYSNET, PHYS_INTERFACE = "physnet1", "ph0"


@contextmanager
def deployed(tmp: Path, rabbit_url: str, server_extra: str = "",
             octavia_port: int | None = None, extension_drivers: str = "port_security"
             ) -> Iterator[Deployment]:
    """A Deployment in a sandbox of its own, closed and removed whatever happens."""
    with sandbox() as box:
        deployment = Deployment(box, tmp, rabbit_url, server_extra, octavia_port,
                                extension_drivers)
        try:
            yield deployment
        finally:
            deployment.close()


class Deployment:
    """One server (SQLite, RabbitMQ) and emulated hosts with their agents."""

    def __init__(self, box: Sandbox, tmp: Path, rabbit_url: str, server_extra: str = "",
                 octavia_port: int | None = None, extension_drivers: str = "port_security"):
        """``octavia_port``: where the load-balancer API listens (``server_extra``
        loads the octavia plugin); ``extension_drivers``: ML2's."""
        self.box = box
        self.tmp = tmp
        self.rabbit_url = rabbit_url
        self.procs: list[subprocess.Popen] = []
        self.hosts: dict[str, dict] = {}
        self._remove: list[Path] = []
        self.underlay = box.namespace("ul")
        for bridge in ("br-ul", "br-phys"):  # the tunnels' underlay; physnet1's wire
            run("ip", "link", "add", bridge, "type", "bridge", namespace=self.underlay)
            run("ip", "link", "set", bridge, "up", namespace=self.underlay)
        self.socket = tmp / "amqp.sock"
        self._spawn(["socat", f"UNIX-LISTEN:{self.socket},fork",
                     f"TCP:127.0.0.1:{AMQP_PORT}"], "amqp-forward")
        wait_until(self.socket.exists, 10, "the AMQP forwarder")
        db_url, self._drop = create_database("sqlite", tmp)
        self.server: Server = start_server(tmp, db_url, auth="noauth", extra=(
            f"transport_url = {rabbit_url}\nagent_down_time = 10\n"
            "[ml2]\ntype_drivers = local,flat,vlan,vxlan\ntenant_network_types = vxlan\n"
            "mechanism_drivers = linuxbridge,l2population\n"
            f"extension_drivers = {extension_drivers}\n"
            "[ml2_type_vxlan]\nvni_ranges = 1000:1999\n"
            f"[ml2_type_flat]\nflat_networks = {PHYSNET}\n"
            f"[ml2_type_vlan]\nnetwork_vlan_ranges = {PHYSNET}:100:199\n" + server_extra),
            octavia_port=octavia_port)
        self.api = self.server.client(None)

    def _spawn(self, argv: list[str], name: str, namespace: str | None = None,
               env: dict[str, str] | None = None, agent: bool = False) -> subprocess.Popen:
        prefix = ["ip", "netns", "exec", namespace] if namespace else []
        if namespace and agent:
            anchor = next((host.get("anchor") for host in self.hosts.values()
                           if host["namespace"] == namespace), None)
            prefix = (["nsenter", "-t", str(anchor.pid), "-m", "-n"] if anchor is not None
                      else as_a_host(namespace))
        log = (self.tmp / f"{name}.log").open("wb")
        proc = subprocess.Popen([*prefix, *argv], stdout=log, stderr=subprocess.STDOUT,
                                env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
        self.procs.append(proc)
        return proc

    def add_host(self, name: str, index: int, own_namespaces: bool = False) -> str:
        """A host namespace with ``ul0`` on the underlay (its tunnel address) and
        ``ph0`` on physnet1's wire, and a bus forwarder. ``own_namespaces``: the
        namespaces its agents make (``qrouter-<id>``...) are named in a registry
        of the host's own, as on a machine of its own, so that two hosts can
        hold namespaces of one name (an HA router's): its agents run in the
        mount namespace of an "anchor" process where /run/netns is a tmpfs, and
        ``inside`` runs commands in them."""
        ns = self.box.namespace(name)
        local_ip = f"192.168.200.{index}"
        for inside, outside, bridge in (("ul0", f"ul-{name}", "br-ul"),
                                        (PHYS_INTERFACE, f"ph-{name}", "br-phys")):
            run("ip", "link", "add", inside, "type", "veth", "peer", "name", outside,
                namespace=ns)
            run("ip", "link", "set", outside, "netns", self.underlay, namespace=ns)
            run("ip", "link", "set", outside, "master", bridge, "up",
                namespace=self.underlay)
            run("ip", "link", "set", inside, "up", namespace=ns)
            if shutil.which("ethtool"):
                # checksums made here, not left to a NIC that a veth is not: OVS's
                # userspace datapath drops what arrives with one left undone
                run("ethtool", "-K", inside, "tx", "off", namespace=ns)
        run("ip", "addr", "add", f"{local_ip}/24", "dev", "ul0", namespace=ns)
        self._spawn(["socat", f"TCP-LISTEN:{AMQP_PORT},bind=127.0.0.1,fork,reuseaddr",
                     f"UNIX-CONNECT:{self.socket}"], f"{name}-amqp", namespace=ns)
        self.hosts[name] = {"namespace": ns, "local_ip": local_ip, "host": f"{ns}"}
        if own_namespaces:
            self.hosts[name]["anchor"] = self._anchor(name, ns)
        return ns

    def _anchor(self, name: str, ns: str) -> subprocess.Popen:
        """A process whose mount namespace has a /sys of the host's namespace
        and a /run/netns of its own (made private first: nothing propagates)."""
        anchor = self._spawn(["unshare", "--mount", "--propagation", "unchanged", "sh", "-c",
                              "mount --make-private /run/netns && "
                              "mount -t tmpfs netns /run/netns && exec sleep infinity"],
                             f"{name}-anchor", namespace=ns)
        wait_until(lambda: subprocess.run(
            ["nsenter", "-t", str(anchor.pid), "-m", "findmnt", "-n", "-o", "FSTYPE",
             "/run/netns"], capture_output=True, text=True).stdout.split()[-1:] == ["tmpfs"],
            10, f"{name}'s namespace registry")
        return anchor

    def inside(self, name: str, namespace: str, *argv: str,
               check: bool = True) -> subprocess.CompletedProcess:
        """``argv`` in ``namespace`` of host ``name`` (one of its own registry)."""
        anchor = self.hosts[name]["anchor"]
        done = subprocess.run(["nsenter", "-t", str(anchor.pid), "-m", "-n", "ip", "netns",
                               "exec", namespace, *argv], capture_output=True, text=True,
                              timeout=60)
        if check and done.returncode:
            raise AssertionError(f"{' '.join(argv)} in {name}/{namespace}: {done.stderr}")
        return done

    def namespaces_of(self, name: str) -> list[str]:
        """The namespaces in host ``name``'s own registry."""
        anchor = self.hosts[name]["anchor"]
        listed = subprocess.run(["nsenter", "-t", str(anchor.pid), "-m", "ip", "netns",
                                 "list"], capture_output=True, text=True, timeout=30)
        return [line.split()[0] for line in listed.stdout.splitlines() if line.strip()]

    def remove_own_namespaces(self, name: str) -> None:
        """What runs in a host's own namespaces killed, and they deleted (their
        names live only in its registry: the sandbox cannot see them)."""
        anchor = self.hosts[name]["anchor"]
        enter = ["nsenter", "-t", str(anchor.pid), "-m"]
        for ns in self.namespaces_of(name):
            pids = subprocess.run([*enter, "ip", "netns", "pids", ns], capture_output=True,
                                  text=True, timeout=30).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (OSError, ValueError):
                    pass
            subprocess.run([*enter, "ip", "netns", "del", ns], capture_output=True,
                           timeout=30)

    def add_external_host(self, cidr: str, name: str = "ext") -> str:
        """A namespace on physnet1's wire (``eth0``) with the address ``cidr``
        (a flat external network's upstream router, say)."""
        ns = self.box.namespace(name)
        outside = f"ph-{name}"
        run("ip", "link", "add", "eth0", "type", "veth", "peer", "name", outside, namespace=ns)
        run("ip", "link", "set", outside, "netns", self.underlay, namespace=ns)
        run("ip", "link", "set", outside, "master", "br-phys", "up", namespace=self.underlay)
        run("ip", "link", "set", "eth0", "up", namespace=ns)
        run("ip", "addr", "add", cidr, "dev", "eth0", namespace=ns)
        return ns

    def serve_tcp(self, namespace: str, port: int, shell: str) -> subprocess.Popen:
        """A TCP service in ``namespace`` answering each caller with the output
        of ``shell`` (``$SOCAT_PEERADDR``: the caller's address)."""
        return self._spawn(["socat", f"TCP-LISTEN:{port},fork,reuseaddr", f"SYSTEM:{shell}"],
                           f"listen-{namespace}-{port}", namespace=namespace)

    def config(self, name: str, binary: str, default: str, text: str) -> Path:
        path = self.tmp / f"{name}-{binary}.conf"
        host = self.hosts[name]
        path.write_text(f"[DEFAULT]\nhost = {host['host']}\ntransport_url = "
                        f"{self.rabbit_url}\nstate_path = {self.tmp / name}\n{default}"
                        "[agent]\nreport_interval = 1\npolling_interval = 1\n"
                        # long: what a test sees must come from notifications
                        f"resync_interval = 600\n{text}")
        return path

    def start_agent(self, name: str, binary: str, text: str = "",
                    default: str = "", env: dict[str, str] | None = None
                    ) -> subprocess.Popen:
        """``text``: sections after [agent]; ``default``: more of [DEFAULT];
        ``env``: more of the environment."""
        conf = self.config(name, binary, default, text)
        return self._spawn([str(BIN / binary), "--config-file", str(conf)],
                           f"{name}-{binary}", namespace=self.hosts[name]["namespace"],
                           env=env, agent=True)

    def _interface_driver(self, name: str, text: str) -> tuple[str, str, dict[str, str] | None]:
        """How a DHCP or L3 agent on the host plugs its ports: (its
        ``interface_driver`` line, ``text`` with the ``[ovs]`` section it
        needs, its environment). An OVS host's (``add_ovs``) put them on its
        br-int; any other's are plugged by its Linux bridge agent."""
        ovs: OvsHost | None = self.hosts[name].get("ovs")
        if ovs is None:
            return "interface_driver = linuxbridge\n", text, None
        if text and not text.endswith("\n"):
            text += "\n"
        return ("interface_driver = openvswitch\n",
                f"{text}[ovs]\nintegration_bridge = br-int\novsdb_connection = {ovs.db}\n",
                ovs.env)

    def start_l2_agent(self, name: str, firewall: str = "iptables", text: str = ""
                       ) -> subprocess.Popen:
        """``text``: more sections (a section named again is merged, [agent] too)."""
        host = self.hosts[name]
        return self.start_agent(name, "neutrino-linuxbridge-agent", (
            f"[linux_bridge]\nphysical_interface_mappings = {PHYSNET}:{PHYS_INTERFACE}\n"
            f"[vxlan]\nlocal_ip = {host['local_ip']}\nl2_population = true\n"
            f"[securitygroup]\nfirewall_driver = {firewall}\n{text}"))

    def add_ovs(self, name: str) -> OvsHost:
        """Open vSwitch on the host, userspace datapath. Its tunnels leave from an
        address on one of its bridges: the host's address moves from ``ul0``
        onto ``br-ul``, which holds ``ul0``; ``ph0`` goes into ``br-phys``, the
        bridge of physnet1."""
        host = self.hosts[name]
        ns = host["namespace"]
        ovs = host["ovs"] = OvsHost.start(ns, self.tmp / f"{name}-ovs")
        for bridge, port in (("br-ul", "ul0"), ("br-phys", PHYS_INTERFACE)):
            ovs.add_bridge(bridge)
            ovs.vsctl("add-port", bridge, port)
        run("ip", "addr", "del", f"{host['local_ip']}/24", "dev", "ul0", namespace=ns)
        run("ip", "addr", "add", f"{host['local_ip']}/24", "dev", "br-ul", namespace=ns)
        run("ip", "link", "set", "br-ul", "up", namespace=ns)
        return ovs

    def start_ovs_agent(self, name: str, text: str = "") -> subprocess.Popen:
        """``text``: more sections (a section named again is merged)."""
        host = self.hosts[name]
        ovs: OvsHost = host["ovs"]
        conf = self.config(name, "neutrino-openvswitch-agent", "", (
            "tunnel_types = vxlan,geneve,gre\nl2_population = true\narp_responder = true\n"
            f"[ovs]\nlocal_ip = {host['local_ip']}\ndatapath_type = netdev\n"
            f"ovsdb_connection = {ovs.db}\nbridge_mappings = {PHYSNET}:br-phys\n{text}"))
        return self._spawn([str(BIN / "neutrino-openvswitch-agent"), "--config-file",
                            str(conf)], f"{name}-neutrino-openvswitch-agent",
                           namespace=host["namespace"], env=ovs.env, agent=True)

    def start_dhcp_agent(self, name: str, text: str = "", default: str = ""
                         ) -> subprocess.Popen:
        """``text``, ``default``: more configuration, as for ``start_agent``
        (the interface driver: ``_interface_driver``)."""
        # dnsmasq reads its files as nobody: a directory all may search, not tmp's
        confs = Path(tempfile.mkdtemp(prefix="neutrino-dhcp-"))
        confs.chmod(0o755)
        self._remove.append(confs)
        driver, text, env = self._interface_driver(name, text)
        return self.start_agent(name, "neutrino-dhcp-agent", text=text, default=(
            f"{driver}dhcp_confs = {confs}\n{default}"), env=env)

    def metadata_socket(self, name: str) -> Path:
        """The host's metadata agent socket: short (a UNIX socket path is at most
        107 bytes, pytest's tmp_path can be long), shared by the host's agents."""
        if not hasattr(self, "_sockets"):
            self._sockets = Path(tempfile.mkdtemp(prefix="neutrino-md-"))
            self._remove.append(self._sockets)
        return self._sockets / f"{name}.sock"

    def start_metadata_agent(self, name: str, nova_port: int, secret: str
                             ) -> subprocess.Popen:
        """The host's metadata agent, for a Nova on 127.0.0.1:``nova_port`` of the host."""
        return self.start_agent(name, "neutrino-metadata-agent", default=(
            f"nova_metadata_host = 127.0.0.1\nnova_metadata_port = {nova_port}\n"
            f"metadata_proxy_shared_secret = {secret}\n"
            f"metadata_proxy_socket = {self.metadata_socket(name)}\n"))

    def start_l3_agent(self, name: str, default: str = "", text: str = "") -> subprocess.Popen:
        """The L3 agent of the host; the ``qrouter-`` namespaces it makes are
        removed at the end (it keeps a directory per router under
        ``$state_path/l3``). ``text``: more of [agent], then sections."""
        driver, text, env = self._interface_driver(name, text)
        return self.start_agent(name, "neutrino-l3-agent", text=text, default=(
            f"{driver}send_arp_for_ha = 1\n{default}"), env=env)

    def start_lbaas_agent(self, name: str, default: str = "") -> subprocess.Popen:
        """The host's load-balancer agent; the ``qlbaas-`` namespaces it makes (and
        their HAProxy) are removed at the end (it keeps a directory per load
        balancer under ``$state_path/lbaas``)."""
        driver, text, env = self._interface_driver(name, "")
        return self.start_agent(name, "neutrino-lbaas-agent", text=text,
                                default=f"{driver}periodic_interval = 1\n{default}", env=env)

    def agent_alive(self, name: str, agent_type: str) -> bool:
        found = self.api.get("/v2.0/agents", params={"host": self.hosts[name]["host"],
                                                     "agent_type": agent_type})
        agents = found.json()["agents"] if found.status_code == 200 else []
        return bool(agents) and agents[0]["alive"]

    def plug(self, name: str, port_id: str, dhcp: bool = False) -> str | None:
        """``neutrino-instance plug`` on the host; its namespace is removed at the end."""
        ns = f"inst-{port_id[:11]}"
        self.box.adopt(ns)
        argv = [str(BIN / "neutrino-instance"), "--url", self.server.url, "plug", port_id,
                "--host", self.hosts[name]["host"], "--host-netns",
                self.hosts[name]["namespace"]]
        if not dhcp:
            argv.append("--no-dhcp")
        if "ovs" in self.hosts[name]:
            argv += ["--ovs-db", self.hosts[name]["ovs"].db]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=90)
        assert done.returncode == 0, done.stderr
        parts = done.stdout.split()
        return parts[1] if len(parts) > 1 else None

    def log(self, name: str) -> str:
        path = self.tmp / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def close(self) -> None:
        anchors = [host["anchor"] for host in self.hosts.values() if "anchor" in host]
        for proc in self.procs:  # the agents first: they make no namespace any more
            if proc.poll() is None and proc not in anchors:
                proc.kill()
                proc.wait()
        for name, host in self.hosts.items():
            if "anchor" in host and host["anchor"].poll() is None:
                self.remove_own_namespaces(name)
        for proc in anchors:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for host in self.hosts.values():
            if "ovs" in host:
                host["ovs"].stop()
        for confs in self._remove:  # the DHCP agents' namespaces, dnsmasq with them
            for network_id in os.listdir(confs) if confs.is_dir() else ():
                self.box.adopt(f"qdhcp-{network_id}")
        for name in self.hosts:  # the L3 and load-balancer agents' namespaces
            for kind, prefix in (("l3", "qrouter-"), ("lbaas", "qlbaas-")):
                made = self.tmp / name / kind
                for item_id in os.listdir(made) if made.is_dir() else ():
                    self.box.adopt(f"{prefix}{item_id}")
        self.server.stop()
        self._drop()
        for path in self._remove:
            shutil.rmtree(path, ignore_errors=True)
