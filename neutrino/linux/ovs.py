"""Open vSwitch: OVSDB through a monitoring IDL, OpenFlow through ``ovs-ofctl``.

``Ovsdb`` holds one connection to ovsdb-server (ovsdbapp's IDL, which keeps a
replica of the tables the server updates as they change): reads are local,
writes are transactions, and every change of an Interface row is handed to a
callback, so the agent hears of a hypervisor plugging a port (``iface-id`` in
its ``external_ids``) at once, without polling names.

``OpenFlow`` programs one bridge's flows in batches: ``ovs-ofctl --bundle``
(one atomic OpenFlow bundle per call, whatever the number of flows). A full
sync replaces the bridge's whole table with ``replace-flows``, which sends
only the difference: a restarted agent that wants the same flows changes
nothing, and traffic never stops. Between full syncs the caller knows the
table it wrote, and ``update`` sends the flow mods that turn it into the
new one, with no dump of the switch's table. Each port's and network's flows
carry a cookie of their own, to tell them apart in a dump.

``ovs-ofctl`` finds a bridge's OpenFlow socket in ``$OVS_RUNDIR`` (default
/var/run/openvswitch), as every OVS tool does.
"""

from __future__ import annotations

import hashlib
import logging
import subprocess
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

# The ovs library imports eventlet wherever it is installed (another package's
# dependency, say), and eventlet warns at import that it is deprecated: a line
# on every start of an agent that never uses eventlet. Only that warning, only
# here; the process's filters are as they were afterwards.
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=r"\s*Eventlet is deprecated", category=Warning)
    from ovsdbapp.backend.ovs_idl import connection
    from ovsdbapp.backend.ovs_idl.transaction import Transaction
    from ovsdbapp.schema.open_vswitch import impl_idl

from neutrino.linux.errors import HostError
from neutrino.linux.ovs_names import DEAD_VLAN, DEFAULT_OVSDB  # noqa: F401 (the agent's)

LOG = logging.getLogger(__name__)
#: the ``external_ids`` key naming the port a QoS row of ours shapes
QOS_NOTE = "neutrino-port"
#: the Interface columns the agent reads
InterfaceCallback = Callable[[str, str, dict[str, str]], None]


class OvsError(HostError):
    """An OVS operation failed; the message says which and why."""


class _MonitoringIdl(connection.OvsdbIdl):
    """The IDL, telling ``on_interface(event, name, external_ids)`` of every
    Interface row created, updated or deleted (from the connection's thread)."""

    on_interface: InterfaceCallback | None = None

    def notify(self, event: str, row: Any, updates: Any = None) -> None:
        if self.on_interface is not None and row._table.name == "Interface":
            try:
                self.on_interface(event, row.name, dict(row.external_ids))
            except Exception:  # the IDL's thread must live on
                LOG.exception("interface event handler failed")


class _Api(impl_idl.OvsdbIdl):
    """ovsdbapp's Open_vSwitch API with a connection of its own: ovsdbapp keeps
    one per class, for the whole process, so a second database (another
    emulated host, a test) would be reached through the first one's."""

    @property
    def ovsdb_connection(self) -> connection.Connection:
        return self._connection

    @ovsdb_connection.setter
    def ovsdb_connection(self, value: connection.Connection) -> None:
        self._connection = value


class PatchPort(NamedTuple):
    """One end of a patch between two bridges, as ``ensure_patches`` makes it:
    with a ``tag``, an access port of that VLAN; with ``external_ids``, these."""

    bridge: str
    name: str
    peer: str
    tag: int | None = None
    external_ids: Mapping[str, str] = {}


class Ovsdb:
    """One ovsdb-server's Open_vSwitch database."""

    def __init__(self, remote: str = DEFAULT_OVSDB, timeout: int = 10,
                 on_interface: InterfaceCallback | None = None):
        try:
            idl = _MonitoringIdl.from_server(
                remote, "Open_vSwitch",
                helper_tables=("Open_vSwitch", "Bridge", "Port", "Interface", "QoS", "Queue"))
            idl.on_interface = on_interface
            self._conn = connection.Connection(idl, timeout)
            self.api = _Api(self._conn)
        except Exception as error:
            raise OvsError(f"cannot use the OVS database at {remote} (waited up to "
                           f"{timeout} s): {_describe(error.__cause__ or error)}") from None
        self.remote = remote

    def close(self) -> None:
        self._conn.stop()
        self._conn.idl.close()  # its session to the server, which stop() leaves open

    def _run(self, what: str, *commands: Any, wait: bool = True) -> None:
        """``commands`` in one transaction; with ``wait``, until ovs-vswitchd has
        applied it too, as ovs-vsctl does (a busy ovs-vswitchd can take seconds)."""
        kind = impl_idl.OvsVsctlTransaction if wait else Transaction
        txn = kind(self.api, self._conn, check_error=True)
        for command in commands:
            txn.add(command)
        try:
            txn.commit()
        except Exception as error:
            raise OvsError(f"{what} failed: {error}") from error

    # --- bridges and ports -----------------------------------------------------------

    def _row(self, table: str, name: str, *columns: str) -> dict[str, Any] | None:
        """A row's columns by its name, from the replica (no round trip)."""
        rows = self.api.db_find(table, ("name", "=", name), columns=list(columns)).execute(
            check_error=True)
        return rows[0] if rows else None

    def ensure_bridge(self, name: str, datapath_type: str, secure: bool = True) -> None:
        """The bridge, of ``datapath_type``; ``secure``: no flow means drop (not NORMAL).
        Nothing is written when it is so already: every transaction waits for
        ovs-vswitchd, which a full sync of a busy host would feel."""
        row = self._row("Bridge", name, "datapath_type", "fail_mode")
        if row is not None and row["datapath_type"] == datapath_type and (
                not secure or _optional(row["fail_mode"]) == "secure"):
            return
        commands = [self.api.add_br(name, may_exist=True, datapath_type=datapath_type),
                    self.api.db_set("Bridge", name, ("datapath_type", datapath_type))]
        if secure:
            commands.append(self.api.set_fail_mode(name, "secure"))
        self._run(f"setting up bridge {name}", *commands)

    def ensure_port(self, bridge: str, port: str, tag: int | None = None,
                    **interface: Any) -> None:
        """``port`` on ``bridge`` with these Interface columns (``type``, ``options``,
        ``external_ids``...) and, given a ``tag``, that access VLAN; nothing is
        written when it is so already."""
        if bridge in self.bridges() and port in self.ports(bridge):
            row = self._row("Interface", port, *interface)
            port_row = self._row("Port", port, "tag")
            tagged = tag is None or (
                port_row is not None and _optional(port_row["tag"]) == tag)
            if row is not None and tagged and all(
                    _optional(row[key]) == value for key, value in interface.items()):
                return
        commands = [self.api.add_port(bridge, port, may_exist=True)]
        if interface:
            commands.append(self.api.db_set("Interface", port, *interface.items()))
        if tag is not None:
            commands.append(self.api.db_set("Port", port, ("tag", tag)))
        self._run(f"setting up port {port} on {bridge}", *commands)

    def ensure_patch(self, bridge: str, port: str, peer: str) -> None:
        self.ensure_port(bridge, port, type="patch", options={"peer": peer})

    def delete_port(self, port: str, bridge: str | None = None) -> None:
        self._run(f"deleting port {port}", self.api.del_port(port, bridge, if_exists=True))

    def ensure_patches(self, patches: Iterable[PatchPort]) -> int:
        """Patch ports as ``patches`` say, in one transaction (a trunk's fifty
        subports are a hundred ports); those already so are left alone. How
        many were written."""
        bridges = {bridge: set(self.ports(bridge)) for bridge in self.bridges()}
        interfaces = self.interfaces()
        tags = self.port_tags()
        commands: list[Any] = []
        written = 0
        for patch in patches:
            row = interfaces.get(patch.name)
            if (patch.name in bridges.get(patch.bridge, ()) and row is not None
                    and row["type"] == "patch" and row["options"].get("peer") == patch.peer
                    and all(row["external_ids"].get(k) == v
                            for k, v in patch.external_ids.items())
                    and (patch.tag is None or tags.get(patch.name, (None,))[0] == patch.tag)):
                continue
            commands += [self.api.add_port(patch.bridge, patch.name, may_exist=True),
                         self.api.db_set("Interface", patch.name, ("type", "patch"),
                                         ("options", {"peer": patch.peer}))]
            if patch.external_ids:
                commands.append(self.api.db_set("Interface", patch.name,
                                                ("external_ids", dict(patch.external_ids))))
            if patch.tag is not None:
                commands.append(self.api.db_set("Port", patch.name, ("tag", patch.tag)))
            written += 1
        if commands:
            self._run(f"setting up {written} patch ports", *commands)
        return written

    def delete_ports(self, ports: Iterable[tuple[str, str]], bridges: Iterable[str] = ()
                     ) -> None:
        """(bridge, port) pairs, then whole ``bridges``, in one transaction;
        those gone already are passed over."""
        commands = [self.api.del_port(port, bridge, if_exists=True) for bridge, port in ports]
        commands += [self.api.del_br(bridge) for bridge in bridges
                     if bridge in self.bridges()]
        if commands:
            self._run(f"deleting {len(commands)} ports and bridges", *commands)

    def set_tags(self, tags: Mapping[str, tuple[int, Mapping[str, str]]]) -> None:
        """Ports' access VLANs, and notes of ours in their ``other_config``
        (name -> (tag, notes)), in one transaction. Ports that already have them
        are left alone, ports gone meanwhile are passed over."""
        current = self.port_tags()
        commands, changed = [], set()
        for port, (tag, notes) in tags.items():
            if port not in current:
                continue
            now_tag, now_notes = current[port]
            if now_tag != tag:
                commands.append(self.api.db_set("Port", port, ("tag", tag)))
                changed.add(port)
            if any(now_notes.get(key) != value for key, value in notes.items()):
                commands.append(self.api.db_set("Port", port, ("other_config", dict(notes))))
                changed.add(port)
        if commands:  # ovs-vswitchd applies them soon; the OpenFlow ports are waited for
            self._run(f"tagging {len(changed)} ports", *commands, wait=False)

    def port_tags(self) -> dict[str, tuple[int | None, dict[str, str]]]:
        """Every port: name -> (its access VLAN or None, its ``other_config``)."""
        rows = self.api.db_list("Port", columns=["name", "tag", "other_config"]).execute(
            check_error=True)
        return {row["name"]: (_optional(row["tag"]), dict(row["other_config"]))
                for row in rows}

    def ports(self, bridge: str) -> list[str]:
        return list(self.api.list_ports(bridge).execute(check_error=True))

    def bridges(self) -> list[str]:
        return list(self.api.list_br().execute(check_error=True))

    def interfaces(self) -> dict[str, dict[str, Any]]:
        """Every interface: name -> its ``ofport``, ``type``, ``external_ids``, ``options``."""
        rows = self.api.db_list("Interface", columns=[
            "name", "ofport", "type", "external_ids", "options", "error"]).execute(
            check_error=True)
        return {row["name"]: row for row in rows}

    def ofports(self) -> dict[str, int]:
        """Interface name -> its OpenFlow port number, for those that have one."""
        rows = self.api.db_list("Interface", columns=["name", "ofport"]).execute(
            check_error=True)
        numbers = {row["name"]: _optional(row["ofport"]) for row in rows}
        return {name: n for name, n in numbers.items() if isinstance(n, int) and n > 0}

    # --- egress shaping of ports (QoS) -------------------------------------------------

    def shaped_ports(self) -> dict[str, tuple[int, int]]:
        """Port name -> (max-rate in bit/s, burst in bits) of the ``linux-htb`` QoS
        rows made by ``shape_port`` (found by their ``neutrino-port`` note)."""
        queues = {row["_uuid"]: row for row in self.api.db_list(
            "Queue", columns=["_uuid", "other_config"]).execute(check_error=True)}
        found = {}
        for row in self.api.db_list("QoS", columns=["_uuid", "external_ids", "queues"]
                                    ).execute(check_error=True):
            port = row["external_ids"].get(QOS_NOTE)
            queue = queues.get(_uuid_of(row["queues"].get(0)))
            if port and queue is not None:
                config = queue["other_config"]
                found[port] = (int(config.get("max-rate", 0)), int(config.get("burst", 0)))
        return found

    def shape_port(self, port: str, rate: int | None, burst: int = 0) -> None:
        """What leaves through ``port`` shaped to ``rate`` bit/s with ``burst`` bits (the
        tc ``linux-htb`` QoS of ovs-vswitchd, which also serves the userspace
        datapath's Linux devices), or not at all with None; the QoS rows it had
        are replaced, those of ports gone removed."""
        present = {row["name"] for row in self.api.db_list(
            "Port", columns=["name"]).execute(check_error=True)}
        commands: list[Any] = []
        for row in self.api.db_list("QoS", columns=["_uuid", "external_ids", "queues"]
                                    ).execute(check_error=True):
            if row["external_ids"].get(QOS_NOTE) == port:
                if port in present:
                    commands.append(self.api.db_clear("Port", port, "qos"))
                commands.append(self.api.db_destroy("QoS", row["_uuid"]))
                commands += [self.api.db_destroy("Queue", _uuid_of(queue))
                             for queue in row["queues"].values()]
        if rate is not None and port in present:
            queue = self.api.db_create("Queue", other_config={
                "max-rate": str(rate), "burst": str(burst)})
            qos = self.api.db_create("QoS", type="linux-htb", queues={0: queue},
                                     other_config={"max-rate": str(rate)},
                                     external_ids={QOS_NOTE: port})
            commands += [queue, qos, self.api.db_set("Port", port, ("qos", qos))]
        if commands:
            self._run(f"shaping port {port}", *commands)


def _uuid_of(row: Any) -> Any:
    """A reference column's value as the IDL gives it: a row or its uuid."""
    return getattr(row, "uuid", row)


def _describe(error: BaseException) -> str:
    """An error's message; its type when it has none, or when it cannot even
    say it (some of ovsdbapp's timeouts)."""
    try:
        text = str(error)
    except Exception:
        text = ""
    return text or type(error).__name__


def _optional(value: Any) -> Any:
    """An optional column's value: the IDL gives [] when unset, [x] or x when set."""
    if isinstance(value, list):
        return value[0] if value else None
    return value


def cookie_of(key: str) -> int:
    """A stable 63-bit cookie for what ``key`` names (a port, a network)."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") >> 1


def flow_key(flow: str) -> str:
    """What names a flow in its table (table, priority, match): the flow
    without its cookie and actions, written as this module's callers write."""
    head = flow.partition(",actions=")[0]
    return ",".join(part for part in head.split(",") if not part.startswith("cookie="))


def flow_mods(old: list[str], new: list[str]) -> list[str]:
    """The flow mods (``ovs-ofctl add-flows`` lines) that turn ``old`` into ``new``:
    an add for each flow new or changed (it replaces the flow of the same
    match), a strict delete for each flow gone."""
    before = {flow_key(flow): flow for flow in old}
    after = {flow_key(flow): flow for flow in new}
    return ([f"delete_strict {key}" for key in before if key not in after]
            + [f"add {flow}" for key, flow in after.items() if before.get(key) != flow])


class OpenFlow:
    """The flows of one bridge, through ``ovs-ofctl``."""

    def __init__(self, bridge: str, env: Mapping[str, str] | None = None):
        self.bridge = bridge
        self.env = dict(env) if env is not None else None

    def _ofctl(self, *args: str, flows: Iterable[str] | None = None) -> str:
        text = "".join(f"{flow}\n" for flow in flows) if flows is not None else None
        done = subprocess.run(["ovs-ofctl", "-O", "OpenFlow13", *args], input=text,
                              capture_output=True, text=True, env=self.env, timeout=60)
        if done.returncode != 0:
            raise OvsError(f"ovs-ofctl {' '.join(args[:2])} on {self.bridge}: "
                           f"{done.stderr.strip()}")
        return done.stdout

    def add(self, flows: list[str]) -> None:
        """Add (or overwrite) ``flows`` in one bundle."""
        if flows:
            self._ofctl("--bundle", "add-flows", self.bridge, "-", flows=flows)

    def update(self, old: list[str], new: list[str]) -> int:
        """Turn the table from ``old`` (as last written) into ``new`` in one bundle
        that holds only the flows added, changed and removed: no dump, no diff by
        ovs-ofctl. The number of flow mods sent."""
        changes = flow_mods(old, new)
        if changes:
            self._ofctl("--bundle", "add-flows", self.bridge, "-", flows=changes)
        return len(changes)

    def replace(self, flows: list[str]) -> None:
        """Make the bridge's table exactly ``flows``: only the difference is sent,
        in one bundle, so flows that stay are never missing."""
        self._ofctl("--bundle", "replace-flows", self.bridge, "-", flows=flows)

    def dump(self, match: str = "") -> list[str]:
        """The flows (those ``match`` matches) as ``ovs-ofctl dump-flows`` shows
        them, without statistics."""
        out = self._ofctl("--no-stats", "dump-flows", self.bridge, *((match,) if match else ()))
        return [line.strip() for line in out.splitlines() if line.strip()
                and not line.startswith(("OFPST_FLOW", "NXST_FLOW"))]

    # --- meters ------------------------------------------------------------------------

    def meters(self) -> dict[int, tuple[str, int, int]]:
        """Meter id -> (unit: ``kbps`` or ``pktps``, rate, burst) of each meter
        with one drop band (those ``set_meter`` makes)."""
        out = self._ofctl("dump-meters", self.bridge)
        found: dict[int, tuple[str, int, int]] = {}
        for block in out.split("meter=")[1:]:
            words = block.split()
            fields = dict(word.split("=", 1) for word in words if "=" in word)
            try:
                meter_id = int(words[0])
                unit = "pktps" if "pktps" in words else "kbps"
                found[meter_id] = (unit, int(fields.get("rate", 0)),
                                   int(fields.get("burst_size", 0)))
            except ValueError:
                continue
        return found

    def set_meter(self, meter_id: int, unit: str, rate: int, burst: int, new: bool) -> None:
        """Meter ``meter_id`` drops beyond ``rate`` (``unit``: kbps or pktps) with
        ``burst``; ``new``: added, else modified."""
        spec = (f"meter={meter_id},{unit},burst,stats,"
                f"band=type=drop,rate={rate},burst_size={burst}")
        self._ofctl("add-meter" if new else "mod-meter", self.bridge, spec)

    def delete_meter(self, meter_id: int) -> None:
        self._ofctl("del-meter", self.bridge, f"meter={meter_id}")
