"""A router as OVN Northbound rows: pure translation, no I/O.

As Neutron's OVN driver writes them: a ``Logical_Router`` named
``neutron-<id>``; a ``Logical_Router_Port`` ``lrp-<port id>`` for each of its
ports (the port's own ``Logical_Switch_Port``, written by ML2, is of type
``router`` and points at it); on the gateway port the ``Gateway_Chassis`` that
may carry it, by priority; a default static route through the external
subnet's gateway beside the router's own routes; and ``NAT`` rows, SNAT for
each internal subnet and DNAT-and-SNAT for each floating IP.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any

from neutrino.ovn import names
from neutrino.ovn.commands import Key, Parent, Row

#: how many gateway chassis one gateway port is given, highest priority first
MAX_GATEWAY_CHASSIS = 5
NAT_KEY = "neutron:nat"
ROUTE_KEY = "neutron:route"
CHASSIS_KEY = "neutron:chassis"


def prefix_length(subnet: Mapping[str, Any]) -> int:
    return ipaddress.ip_network(subnet["cidr"]).prefixlen


def router_key(router_id: str) -> Key:
    return Key("Logical_Router", "name", names.router(router_id))


def router_port_key(port_id: str) -> Key:
    return Key("Logical_Router_Port", "name", names.router_port(port_id))


def router(view: Mapping[str, Any], gateway_port_id: str | None) -> Row:
    return Row(router_key(view["id"]), {
        "enabled": bool(view.get("admin_state_up", True)),
        "external_ids": {names.ROUTER_NAME: view.get("name") or "",
                         names.REVISION: str(view["revision_number"]),
                         "neutron:gw_port_id": gateway_port_id or ""},
        "options": {"always_learn_from_arp_request": "false",
                    "dynamic_neigh_routers": "true"},
    }, view["revision_number"])


def router_port(port: Mapping[str, Any], subnets: Mapping[str, Mapping[str, Any]],
                router_id: str) -> Row:
    networks = [f"{ip['ip_address']}/{prefix_length(subnets[ip['subnet_id']])}"
                for ip in port["fixed_ips"] if ip["subnet_id"] in subnets]
    return Row(router_port_key(port["id"]), {
        "mac": port["mac_address"], "networks": networks,
        "enabled": bool(port.get("admin_state_up", True)),
        "external_ids": {names.REVISION: str(port["revision_number"]),
                         names.NETWORK_NAME: names.switch(port["network_id"]),
                         names.ROUTER_NAME: router_id},
    }, port["revision_number"], Parent(router_key(router_id), "ports"))


def gateway_chassis(port_id: str, chassis: Iterable[str]) -> list[dict[str, Any]]:
    """``chassis`` in order of preference, as Gateway_Chassis rows."""
    return [{"name": f"{names.router_port(port_id)}_{name}", "chassis_name": name,
             "priority": MAX_GATEWAY_CHASSIS - index,
             "external_ids": {CHASSIS_KEY: name}}
            for index, name in enumerate(list(chassis)[:MAX_GATEWAY_CHASSIS])]


def static_routes(view: Mapping[str, Any], gateway_port: Mapping[str, Any] | None,
                  subnets: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The router's routes, and the default route through its gateway's subnet."""
    routes = [(route["destination"], route["nexthop"], "")
              for route in view.get("routes") or []]
    if gateway_port is not None:
        for ip in gateway_port["fixed_ips"]:
            subnet = subnets.get(ip["subnet_id"])
            if subnet and subnet.get("gateway_ip") and subnet["ip_version"] == 4:
                routes.append(("0.0.0.0/0", subnet["gateway_ip"],
                               names.router_port(gateway_port["id"])))
    return [{"ip_prefix": prefix, "nexthop": hop,
             "output_port": [port] if port else [],
             "external_ids": {ROUTE_KEY: f"{prefix},{hop}",
                              **({"neutron:is_ext_gw": "true"} if port else {})}}
            for prefix, hop, port in sorted(routes)]


def nats(view: Mapping[str, Any], gateway_port: Mapping[str, Any] | None,
         interface_cidrs: Iterable[str], floating_ips: Iterable[Mapping[str, Any]],
         distributed: bool) -> list[dict[str, Any]]:
    """SNAT of each internal IPv4 subnet to the gateway's address (with
    ``enable_snat``) and DNAT-and-SNAT of each associated floating IP."""
    if gateway_port is None:
        return []
    gateway_ips = [ip["ip_address"] for ip in gateway_port["fixed_ips"]
                   if ipaddress.ip_address(ip["ip_address"]).version == 4]
    if not gateway_ips:
        return []
    rows: list[dict[str, Any]] = []
    gateway = view.get("external_gateway_info") or {}
    if gateway.get("enable_snat", True):
        rows += [{"type": "snat", "external_ip": gateway_ips[0], "logical_ip": cidr,
                  "logical_port": [], "external_mac": [], "options": {},
                  "external_ids": {NAT_KEY: f"snat:{cidr}"}}
                 for cidr in sorted(set(interface_cidrs))
                 if ipaddress.ip_network(cidr).version == 4]
    for fip in floating_ips:
        if not fip.get("fixed_ip_address"):
            continue
        row = {"type": "dnat_and_snat", "external_ip": fip["floating_ip_address"],
               "logical_ip": fip["fixed_ip_address"], "logical_port": [],
               "external_mac": [], "options": {},
               "external_ids": {NAT_KEY: f"fip:{fip['id']}", "neutron:fip_id": fip["id"],
                                "neutron:fip_port_id": fip.get("port_id") or ""}}
        if distributed and fip.get("port_id") and fip.get("floating_port_mac"):
            row.update(logical_port=[fip["port_id"]], external_mac=[fip["floating_port_mac"]])
        rows.append(row)
    return rows


def forwarding_balancers(router_id: str, forwardings: Iterable[Mapping[str, Any]]
                         ) -> list[Row]:
    """A floating IP's port forwardings as OVN load balancers on its router, one
    per floating IP and protocol (Neutron's ``pf-floatingip-<id>-<protocol>``),
    each forwarding a VIP ``fip:port`` -> ``internal ip:port`` (a range, port
    by port)."""
    grouped: dict[tuple[str, str], dict[str, str]] = {}
    addresses: dict[str, str] = {}
    for pf in forwardings:
        vips = grouped.setdefault((pf["floatingip_id"], pf["protocol"]), {})
        addresses[pf["floatingip_id"]] = pf["floating_ip_address"]
        span = pf["external_port_end"] - pf["external_port_start"]
        for offset in range(span + 1):
            vips[f"{pf['floating_ip_address']}:{pf['external_port_start'] + offset}"] = (
                f"{pf['internal_ip_address']}:{pf['internal_port_start'] + offset}")
    return [Row(Key("Load_Balancer", "name", f"pf-floatingip-{fip_id}-{protocol}"), {
        "protocol": [protocol], "vips": vips,
        "external_ids": {"neutron:device_owner": "port_forwarding_plugin",
                         "neutron:fip_id": fip_id, names.ROUTER_NAME: router_id,
                         "neutron:floating_ip_address": addresses[fip_id]}})
        for (fip_id, protocol), vips in sorted(grouped.items())]
