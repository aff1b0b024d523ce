"""What L2 agents ask of ML2 over the bus (topic ``q-plugin``).

Agents name devices as they find them on the host: a port id, or a tap
device (``tap`` + the first 11 characters of the port id). Details come in one
read for a whole list; statuses are written in one transaction per call.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.engine import Connection

from neutrino.context import Context
from neutrino.db import models
from neutrino.db.util import now
from neutrino.definitions.portbindings import HOST_ID
from neutrino.plugins.ml2 import segments
from neutrino.rpc.contracts import l2

TAP_PREFIX = "tap"
ADMIN = Context.admin()
P = models.ports


def port_id_prefix(device: str) -> str:
    """The port id, or the part of it a device name carries."""
    return device[len(TAP_PREFIX):] if device.startswith(TAP_PREFIX) else device


def _by_version(ids: list[str], rows: Iterable[Any]) -> dict[str, dict[str, list[str]]]:
    """{id: {"IPv4": [...], "IPv6": [...]}} from (id, address or CIDR) rows."""
    found: dict[str, dict[str, set[str]]] = {i: {"IPv4": set(), "IPv6": set()} for i in ids}
    for owner, address in rows:
        found[owner]["IPv6" if ":" in address else "IPv4"].add(address)
    return {owner: {version: sorted(values) for version, values in by.items()}
            for owner, by in found.items()}


class Ml2RpcCallbacks:
    rpc_version = l2.VERSION

    def __init__(self, plugin: Any):
        self.plugin = plugin
        self.db = plugin.db

    # --- finding ports -----------------------------------------------------------------

    @staticmethod
    def _resolve(conn: Connection, devices: Iterable[str]) -> dict[str, str]:
        """device -> port id, for the devices that name exactly one port."""
        wanted = {device: port_id_prefix(device) for device in devices}
        if not wanted:
            return {}
        clauses = [P.c.id.startswith(prefix, autoescape=True) for prefix in set(wanted.values())
                   if prefix]
        if not clauses:
            return {}
        ids = list(conn.execute(select(P.c.id).where(or_(*clauses))).scalars())
        found = {}
        for device, prefix in wanted.items():
            matches = [port_id for port_id in ids if port_id.startswith(prefix)]
            if len(matches) == 1:
                found[device] = matches[0]
        return found

    def _details(self, conn: Connection, devices: list[str]) -> dict[str, dict[str, Any]]:
        by_device = self._resolve(conn, devices)
        views = {view["id"]: view for view in self.plugin.ports_by_id(
            conn, list(set(by_device.values())))}
        network_ids = list({view["network_id"] for view in views.values()})
        segs = segments.of_networks(conn, network_ids) if network_ids else {}
        mtus = dict(conn.execute(select(models.networks.c.id, models.networks.c.mtu).where(
            models.networks.c.id.in_(network_ids))).all()) if network_ids else {}
        bound = self._bound_segments(conn, views, segs)
        details = {}
        for device, port_id in by_device.items():
            port = views.get(port_id)
            if port is None:
                continue
            choices = segs.get(port["network_id"]) or [{}]
            segment = next((s for s in choices if s.get("id") == bound.get(port_id)),
                           choices[0])
            details[device] = {
                "device": device, "port_id": port["id"], "network_id": port["network_id"],
                "mac_address": port["mac_address"], "admin_state_up": port["admin_state_up"],
                "network_type": segment.get("network_type"),
                "segmentation_id": segment.get("segmentation_id"),
                "physical_network": segment.get("physical_network"),
                "mtu": mtus.get(port["network_id"]), "fixed_ips": port["fixed_ips"],
                "device_owner": port["device_owner"],
                "allowed_address_pairs": port.get("allowed_address_pairs", []),
                "port_security_enabled": port.get("port_security_enabled", True),
                "security_groups": port.get("security_groups", []),
                "profile": port.get("binding:profile", {}),
                # the qos extension driver's (absent without it)
                "qos_policy_id": port.get("qos_policy_id"),
                "network_qos_policy_id": port.get("qos_network_policy_id"),
            }
        return details

    @staticmethod
    def _bound_segments(conn: Connection, views: dict[str, dict[str, Any]],
                        segs: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
        """port id -> the segment its active binding is on, for the ports of
        networks with several segments (a routed network's ports are wired on
        their host's); the others' is their network's only one."""
        several = [port_id for port_id, view in views.items()
                   if len(segs.get(view["network_id"]) or ()) > 1]
        if not several:
            return {}
        b = models.port_bindings
        return {port_id: segment_id for port_id, segment_id in conn.execute(
            select(b.c.port_id, b.c.segment_id).where(
                b.c.port_id.in_(several), b.c.status == "ACTIVE")) if segment_id}

    # --- the agent's calls -------------------------------------------------------------

    def get_device_details(self, context: dict, device: str, agent_id: str = "",
                           host: str | None = None, **_: Any) -> dict[str, Any]:
        return self.get_devices_details_list(context, [device], agent_id, host)[0]

    def get_devices_details_list(self, context: dict, devices: list[str], agent_id: str = "",
                                 host: str | None = None, **_: Any) -> list[dict[str, Any]]:
        with self.db.reader() as conn:
            details = self._details(conn, devices)
        return [details.get(device, {"device": device}) for device in devices]

    def get_devices_details_list_and_failed_devices(
            self, context: dict, devices: list[str], agent_id: str = "",
            host: str | None = None, **_: Any) -> dict[str, list]:
        return {"devices": self.get_devices_details_list(context, devices, agent_id, host),
                "failed_devices": []}

    def _set_status(self, devices: list[str], status: str, host: str | None) -> list[str]:
        """Mark the ports ``status``; those bound elsewhere are left alone (the port
        has moved). The devices whose port exists."""
        return self._set_status_of(devices, status, host)[0]

    def set_status(self, port_ids: list[str], status: str, host: str | None) -> list[str]:
        """As ``_set_status``; the ids of the ports whose status changed."""
        return self._set_status_of(port_ids, status, host)[1] if port_ids else []

    def _set_status_of(self, devices: list[str], status: str, host: str | None
                       ) -> tuple[list[str], list[str]]:
        l2pop = self.plugin.l2pop
        going_down: list[dict[str, Any]] = []

        def work(conn: Connection) -> tuple[list[str], list[str]]:
            by_device = self._resolve(conn, devices)
            ids = list(set(by_device.values()))
            if not ids:
                return [], []
            b = models.port_bindings
            moved = set()
            if host:
                moved = set(conn.execute(select(b.c.port_id).where(
                    b.c.port_id.in_(ids), b.c.status == "ACTIVE", b.c.host != host,
                    b.c.host != "")).scalars())
            candidates = [port_id for port_id in ids if port_id not in moved]
            changing = list(conn.execute(select(P.c.id).where(
                P.c.id.in_(candidates), P.c.status != status)).scalars()) if candidates else []
            if changing:
                if l2pop and status != "ACTIVE":  # as they were, for their entries
                    going_down[:] = self.plugin.ports_by_id(conn, changing)
                conn.execute(update(P).where(P.c.id.in_(changing))
                             .values(status=status, updated_at=now(),
                                     revision_number=P.c.revision_number + 1))
            return list(by_device), changing

        known, changed = self.db.write(work)
        if l2pop and changed:
            with self.db.reader() as conn:
                if status == "ACTIVE":
                    l2pop.ports_up(conn, changed)
                else:
                    for port_host in {port[HOST_ID] for port in going_down if port[HOST_ID]}:
                        l2pop.ports_down(conn, [p for p in going_down
                                                if p[HOST_ID] == port_host], port_host)
        return known, changed

    def update_device_up(self, context: dict, device: str, agent_id: str = "",
                         host: str | None = None, **_: Any) -> None:
        self._set_status([device], "ACTIVE", host)

    def update_device_down(self, context: dict, device: str, agent_id: str = "",
                           host: str | None = None, **_: Any) -> dict[str, Any]:
        known = self._set_status([device], "DOWN", host)
        return {"device": device, "exists": device in known}

    def update_device_list(self, context: dict, devices_up: list[str], devices_down: list[str],
                           agent_id: str = "", host: str | None = None,
                           **_: Any) -> dict[str, list[str]]:
        up = self._set_status(devices_up, "ACTIVE", host) if devices_up else []
        down = self._set_status(devices_down, "DOWN", host) if devices_down else []
        return {"devices_up": up, "failed_devices_up": [],
                "devices_down": down, "failed_devices_down": []}

    def get_fdb_entries(self, context: dict, network_ids: list[str], host: str | None = None,
                        **_: Any) -> dict[str, Any]:
        """Where the ports of these networks are (l2population; {} without it)."""
        if self.plugin.l2pop is None or not network_ids:
            return {}
        with self.db.reader() as conn:
            return self.plugin.l2pop.entries(conn, list(network_ids))

    def security_group_info_for_devices(self, context: dict, devices: list[str],
                                        **_: Any) -> dict[str, Any]:
        """The devices' ports, the rules of their groups (each with its group's
        ``stateful``, as Neutron sends it), the addresses of the members (fixed
        IPs and allowed address pairs) of every group a rule names as its remote
        group, and those of every address group a rule names."""
        s = models.security_group_rules
        b = models.security_group_port_bindings
        ia, ap = models.ip_allocations, models.allowed_address_pairs
        ag = models.address_group_addresses
        with self.db.reader() as conn:
            details = self._details(conn, devices)
            group_ids = sorted({g for d in details.values() for g in d["security_groups"]})
            g = models.security_groups
            rules = conn.execute(select(s, g.c.stateful).join(g, g.c.id == s.c.security_group_id)
                                 .where(s.c.security_group_id.in_(group_ids))
                                 ).all() if group_ids else []
            remotes = sorted({r.remote_group_id for r in rules if r.remote_group_id})
            members = _by_version(remotes, conn.execute(
                select(b.c.security_group_id, ia.c.ip_address)
                .join(ia, ia.c.port_id == b.c.port_id)
                .where(b.c.security_group_id.in_(remotes))
                .union(select(b.c.security_group_id, ap.c.ip_address)
                       .join(ap, ap.c.port_id == b.c.port_id)
                       .where(b.c.security_group_id.in_(remotes)))) if remotes else [])
            address_groups = sorted({r.remote_address_group_id for r in rules
                                     if r.remote_address_group_id})
            ag_addresses = _by_version(address_groups, conn.execute(
                select(ag.c.address_group_id, ag.c.address)
                .where(ag.c.address_group_id.in_(address_groups))) if address_groups else [])
        by_group: dict[str, list[dict[str, Any]]] = {g: [] for g in group_ids}
        for rule in rules:
            by_group[rule.security_group_id].append({
                "direction": rule.direction, "ethertype": rule.ethertype,
                "protocol": rule.protocol, "port_range_min": rule.port_range_min,
                "port_range_max": rule.port_range_max,
                "remote_ip_prefix": rule.remote_ip_prefix,
                "remote_group_id": rule.remote_group_id,
                "remote_address_group_id": rule.remote_address_group_id,
                "security_group_id": rule.security_group_id, "stateful": rule.stateful})
        return {"devices": {d["port_id"]: d for d in details.values()},
                "security_groups": by_group, "sg_member_ips": members,
                "address_group_ips": ag_addresses}
