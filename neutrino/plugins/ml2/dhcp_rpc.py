"""What DHCP agents ask of the core plugin over the bus: Neutron's DHCP agent
RPC API (the server side Neutron calls DhcpRpcCallback), version 1.8, in the
``dhcp`` namespace on topic ``q-plugin`` (beside the L2 agents' API, which has
no namespace).

An agent asks for its work (``get_active_networks_info``: the networks its
host serves, each with its subnets and ports, in a handful of queries however
many networks there are), for one network at a time, and for its DHCP ports.
Ports are made, changed and removed through the plugin's own methods, as
admin, so quotas, IPAM, mechanism drivers and notifications all apply.

As in Neutron, races are tolerated: a network or subnet deleted while an agent
works on it makes the answer None, never an error. Malformed requests (a
missing argument, an unknown port attribute, a value of the wrong kind) raise
``ValueError``; the plugin's own errors (``InvalidInput``, ``PortNotFound``, ...)
reach the agent as they are.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from neutrino import exceptions as exc
from neutrino.context import Context
from neutrino.db.query import CollectionQuery
from neutrino.db.util import chunked
from neutrino.definitions import port as port_def
from neutrino.definitions import portbindings
from neutrino.definitions.base import Attr
from neutrino.definitions.portbindings import HOST_ID
from neutrino.ipam import routed
from neutrino.rpc.contracts import dhcp
from neutrino.rpc.contracts.dhcp import DHCP_OWNER, RESERVED_DHCP_PORT, dhcp_device_id

LOG = logging.getLogger(__name__)
ADMIN = Context.admin()

# The port attributes an agent may send: the port's own and the binding's.
_PORT_ATTRS: dict[str, Attr] = {**port_def.RESOURCE.attrs,
                                **portbindings.EXTENSION.attributes["ports"]}
_CREATE_KEYS = frozenset(name for name, attr in _PORT_ATTRS.items() if attr.allow_post)
# network_id is not updatable; agents send it to say which network they mean
_UPDATE_KEYS = frozenset({*(name for name, attr in _PORT_ATTRS.items() if attr.allow_put),
                          "network_id"})


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string, not {value!r}")
    return value


def _port_body(port: Any, allowed: frozenset[str]) -> dict[str, Any]:
    """The attributes of ``{"port": {...}}``, converted and validated as the API
    would; ValueError for anything else."""
    body = port.get("port") if isinstance(port, dict) else None
    if not isinstance(body, dict):
        raise ValueError(f"port must be {{'port': {{...}}}}, not {port!r}")
    unknown = sorted(key for key in body if key not in allowed)
    if unknown:
        raise ValueError(f"unknown or read-only port attribute(s): {', '.join(unknown)}")
    data = {}
    for key, value in body.items():
        attr = _PORT_ATTRS[key]
        if attr.convert is not None:
            value = attr.convert(value)
        error = attr.validate(value) if attr.validate is not None else None
        if error:
            raise ValueError(f"invalid {key}: {error}")
        data[key] = value
    return data


def _by_network(items: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        grouped.setdefault(item["network_id"], []).append(item)
    return grouped


class DhcpRpcCallback:
    """API history, as Neutron's: 1.1 get_active_networks_info, create_dhcp_port
    and update_dhcp_port; 1.5 dhcp_ready_on_ports; 1.7 get_networks; 1.8
    get_dhcp_port. ``get_active_networks`` (dropped from the reference agent
    long ago) is still answered for old agents."""

    rpc_version = dhcp.VERSION
    rpc_namespace = dhcp.NAMESPACE

    def __init__(self, plugin: Any):
        self.plugin = plugin

    # --- networks --------------------------------------------------------------------------

    def _active_networks(self, host: str) -> list[dict[str, Any]]:
        """The enabled networks the DHCP agent on ``host`` serves (scheduling it
        networks that lack agents first, when configured)."""
        ids = self.plugin.dhcp.active_networks(host)
        found: list[dict[str, Any]] = []
        for chunk in chunked(sorted(set(ids))):
            found += self.plugin.get_networks(ADMIN, CollectionQuery(
                filters={"id": list(chunk), "admin_state_up": [True]}))
        return found

    def _with_contents(self, nets: list[dict[str, Any]], dhcp_only: bool,
                       host: str | None) -> list[dict[str, Any]]:
        """``nets`` with their subnets (sorted by id: agents number them by
        position), non-local subnets and ports: three listings per chunk of
        networks, however many there are. On a routed network the subnets are
        those of the segments ``host`` reaches, the others non-local, as in
        Neutron: a DHCP agent serves the segments of its host."""
        for chunk in chunked(nets):
            ids = [net["id"] for net in chunk]
            subnet_filters: dict[str, list[Any]] = {"network_id": ids}
            if dhcp_only:
                subnet_filters["enable_dhcp"] = [True]
            subnets = _by_network(self.plugin.get_subnets(ADMIN, CollectionQuery(
                filters=subnet_filters, sorts=[("id", True)])))
            ports = _by_network(self.plugin.get_ports(ADMIN, CollectionQuery(
                filters={"network_id": ids})))
            reached = self._host_segments(host, subnets)
            for net in chunk:
                mine = subnets.get(net["id"], [])
                net["non_local_subnets"] = [s for s in mine if s["segment_id"] and (
                    s["segment_id"] not in reached)]
                net["subnets"] = [s for s in mine if s not in net["non_local_subnets"]]
                net["ports"] = ports.get(net["id"], [])
        return nets

    def _host_segments(self, host: str | None, subnets: dict[str, list[dict[str, Any]]]
                       ) -> set[str]:
        """The segments ``host`` reaches, read only where a subnet is on one."""
        if not any(s["segment_id"] for found in subnets.values() for s in found):
            return set()
        if not host:
            return set()
        with self.plugin.db.reader() as conn:
            return routed.host_segments(conn, host)

    def get_active_networks_info(self, context: dict, host: str | None = None,
                                 enable_dhcp_filter: bool = True, **_: Any
                                 ) -> list[dict[str, Any]]:
        """Every network the agent on ``host`` serves, with its subnets (only the
        DHCP-enabled ones unless ``enable_dhcp_filter`` is false) and ports."""
        host = _text("host", host)
        LOG.debug("get_active_networks_info from %s", host)
        return self._with_contents(self._active_networks(host), bool(enable_dhcp_filter), host)

    def get_active_networks(self, context: dict, host: str | None = None, **_: Any
                            ) -> list[str]:
        """The ids of the networks ``host`` serves (the pre-1.1 form)."""
        return [net["id"] for net in self._active_networks(_text("host", host))]

    def get_network_info(self, context: dict, network_id: str | None = None,
                         host: str | None = None, **_: Any) -> dict[str, Any] | None:
        """One network with all its subnets and its ports; None if it is gone."""
        network_id = _text("network_id", network_id)
        LOG.debug("network %s requested by %s", network_id, host)
        try:
            net = self.plugin.get_network(ADMIN, network_id)
        except exc.NetworkNotFound:
            LOG.debug("network %s not found: deleted meanwhile?", network_id)
            return None
        return self._with_contents([net], dhcp_only=False, host=host)[0]

    def get_networks(self, context: dict, filters: dict[str, Any] | None = None,
                     fields: list[str] | None = None, **_: Any) -> list[dict[str, Any]]:
        """Networks as the API lists them to an admin (filter values are lists)."""
        if filters is not None and not isinstance(filters, dict):
            raise ValueError(f"filters must be a dict, not {filters!r}")
        if fields is not None and not (isinstance(fields, list) and all(
                isinstance(f, str) for f in fields)):
            raise ValueError(f"fields must be a list of names, not {fields!r}")
        wanted = {key: value if isinstance(value, list) else [value]
                  for key, value in (filters or {}).items()}
        nets = self.plugin.get_networks(ADMIN, CollectionQuery(filters=wanted))
        if fields:
            return [{f: net[f] for f in fields if f in net} for net in nets]
        return nets

    # --- DHCP ports ------------------------------------------------------------------------

    def get_dhcp_port(self, context: dict, port_id: str | None = None, **_: Any
                      ) -> dict[str, Any]:
        return self.plugin.get_port(ADMIN, _text("port_id", port_id))

    def _subnets_gone(self, data: dict[str, Any]) -> bool:
        """Whether a subnet the request names no longer exists (why allocation
        failed, then, rather than a full subnet or a bad request)."""
        for item in data.get("fixed_ips") or []:
            if item.get("subnet_id"):
                try:
                    self.plugin.get_subnet(ADMIN, item["subnet_id"])
                except exc.SubnetNotFound:
                    return True
        return False

    def _tolerant(self, action: str, network_id: str, data: dict[str, Any], work: Any
                  ) -> dict[str, Any] | None:
        """``work()``, or None when the network, subnet or port went away meanwhile."""
        try:
            return work()
        except (exc.NetworkNotFound, exc.SubnetNotFound, exc.PortNotFound) as error:
            LOG.info("%s on network %s skipped: %s", action, network_id, error)
            return None
        except (exc.IpAddressGenerationFailure, exc.InvalidInput) as error:
            # a named subnet deleted meanwhile can show as these too
            if not self._subnets_gone(data):
                raise
            LOG.info("%s on network %s skipped: %s", action, network_id, error)
            return None

    def _reuse_reserved(self, network_id: str, device_id: str, host: str,
                        requested: list[dict[str, Any]] | None) -> dict[str, Any] | None:
        """Hand a DHCP port kept for the network's next agent to this one (its
        addresses stay those clients know); None when there is none to take."""
        reserved = self.plugin.get_ports(ADMIN, CollectionQuery(filters={
            "network_id": [network_id], "device_id": [RESERVED_DHCP_PORT],
            "device_owner": [DHCP_OWNER]}))
        for port in reserved:
            change: dict[str, Any] = {"device_id": device_id, HOST_ID: host}
            held = {ip["subnet_id"] for ip in port["fixed_ips"]}
            missing = [item for item in requested or [] if item.get("subnet_id") not in held]
            if missing:  # a subnet made while the port waited: an address there too
                change["fixed_ips"] = [dict(ip) for ip in port["fixed_ips"]] + missing
            try:
                # only if nobody took it meanwhile (another agent, the same call twice)
                taken = self.plugin.update_port(ADMIN, port["id"], change,
                                                if_revision=port["revision_number"])
            except (exc.RevisionNumberConstraintFailed, exc.PortNotFound):
                continue
            LOG.info("reserved DHCP port %s on network %s now serves %s on %s",
                     port["id"], network_id, device_id, host)
            return taken
        return None

    def create_dhcp_port(self, context: dict, port: Any = None, host: str | None = None,
                         **_: Any) -> dict[str, Any] | None:
        """The agent's DHCP port on the network: a reserved one taken over, else a
        new one (owner ``network:dhcp``, bound to ``host``, in the network's
        project). None if the network or a named subnet is gone."""
        host = _text("host", host)
        data = _port_body(port, _CREATE_KEYS)
        network_id = _text("network_id", data.get("network_id"))
        device_id = data.get("device_id", "")
        LOG.debug("DHCP port for %s on network %s requested by %s", device_id, network_id,
                  host)

        def work() -> dict[str, Any]:
            network = self.plugin.get_network(ADMIN, network_id)
            reused = self._reuse_reserved(network_id, device_id, host, data.get("fixed_ips"))
            if reused is not None:
                return reused
            data.pop("tenant_id", None)
            data.update({"project_id": network["project_id"], "device_owner": DHCP_OWNER,
                         HOST_ID: host})
            return self.plugin.create_port(ADMIN, data)

        return self._tolerant("create_dhcp_port", network_id, data, work)

    def update_dhcp_port(self, context: dict, port_id: str | None = None, port: Any = None,
                         host: str | None = None, **_: Any) -> dict[str, Any] | None:
        """Change the agent's own DHCP port (or a reserved one it takes over) and
        bind it to ``host``. None if the port is gone, or is not this agent's on
        that network (as Neutron: an agent never changes another's port)."""
        port_id = _text("port_id", port_id)
        host = _text("host", host)
        data = _port_body(port, _UPDATE_KEYS)
        try:
            current = self.plugin.get_port(ADMIN, port_id)
        except exc.PortNotFound:
            LOG.debug("DHCP port %s not found: deleted meanwhile?", port_id)
            return None
        network_id = data.pop("network_id", None) or current["network_id"]
        if network_id != current["network_id"]:
            raise ValueError(f"port {port_id} is on network {current['network_id']}, "
                             f"not {network_id}")
        own = dhcp_device_id(network_id, host)
        device_id = current["device_id"]
        if device_id != RESERVED_DHCP_PORT and device_id != own and not device_id.startswith(
                own + "-"):
            LOG.warning("the DHCP agent on %s may not update port %s of device %s", host,
                        port_id, device_id)
            return None
        data[HOST_ID] = host
        return self._tolerant("update_dhcp_port", network_id, data,
                              lambda: self.plugin.update_port(ADMIN, port_id, data))

    def release_dhcp_port(self, context: dict, network_id: str | None = None,
                          device_id: str | None = None, host: str | None = None,
                          **_: Any) -> None:
        """Delete the DHCP ports of ``device_id`` on the network."""
        network_id = _text("network_id", network_id)
        device_id = _text("device_id", device_id)
        LOG.debug("DHCP ports of %s on network %s released by %s", device_id, network_id,
                  host)
        doomed = self.plugin.get_ports(ADMIN, CollectionQuery(filters={
            "network_id": [network_id], "device_id": [device_id],
            "device_owner": [DHCP_OWNER]}))
        for port in doomed:
            try:
                self.plugin.delete_port(ADMIN, port["id"])
            except exc.PortNotFound:
                pass

    def dhcp_ready_on_ports(self, context: dict, port_ids: Any = None, **_: Any) -> None:
        """The agent has served these ports. Neutron clears a provisioning block
        with it so the port may go ACTIVE; neutrino has no provisioning blocks
        (the L2 agent's device up sets the status), so this is only accepted."""
        if port_ids is not None and not isinstance(port_ids, list):
            raise ValueError(f"port_ids must be a list, not {port_ids!r}")
        return None
