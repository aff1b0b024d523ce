"""neutrino's resources as OVN Northbound rows: pure translation, no I/O.

Each function takes API views (what the API would show an admin) and returns
``Row``s: which row, its columns, the revision it is of and where it hangs.
The mapping is Neutron's OVN driver's, so the Northbound database looks the
same to an operator: networks are ``Logical_Switch``es named
``neutron-<id>``, ports ``Logical_Switch_Port``s named by their id, DHCPv4
subnets ``DHCP_Options``, security groups ``Port_Group``s with one ``ACL``
per rule.
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any

from neutrino.ovn import names
from neutrino.ovn.commands import Key, Parent, Ref, Row

#: the priorities of Neutron's ACLs: a rule's allow above the drop group's drop
ACL_RULE_PRIORITY = 1002
ACL_DROP_PRIORITY = 1001
DHCP_LEASE_TIME = 43200
METADATA_ADDRESS = "169.254.169.254"
#: device owners whose ports OVN realises itself (no instance behind them)
ROUTER_OWNERS = ("network:router_interface", "network:router_gateway",
                 "network:router_interface_distributed", "network:ha_router_replicated_interface")
METADATA_OWNER = names.METADATA_OWNER
FLOATING_IP_OWNER = "network:floatingip"
#: the external_ids key of an address group's address set
ADDRESS_GROUP = "neutron:address_group_id"


def switch_key(network_id: str) -> Key:
    return Key("Logical_Switch", "name", names.switch(network_id))


def switch_port_key(port_id: str) -> Key:
    return Key("Logical_Switch_Port", "name", port_id)


def dhcp_key(subnet_id: str) -> Key:
    return Key("DHCP_Options", f"external_ids:{names.SUBNET}", subnet_id, without=(names.PORT,))


def port_group_key(group_id: str) -> Key:
    return Key("Port_Group", "name", names.port_group(group_id))


# --- networks --------------------------------------------------------------------------

def switch(network: Mapping[str, Any]) -> Row:
    return Row(switch_key(network["id"]), {
        "external_ids": {names.NETWORK_NAME: network.get("name") or "",
                         names.REVISION: str(network["revision_number"]),
                         "neutron:mtu": str(network.get("mtu") or 0)},
        "other_config": {"mcast_snoop": "false", "mcast_flood_unregistered": "false"},
    }, network["revision_number"])


def localnet_ports(network: Mapping[str, Any], segments: Iterable[Mapping[str, Any]]
                   ) -> list[Row]:
    """A flat or VLAN segment reaches its physical network through a localnet port."""
    rows = []
    for segment in segments:
        if segment.get("network_type") not in ("flat", "vlan"):
            continue
        columns: dict[str, Any] = {
            "type": "localnet", "addresses": ["unknown"],
            "options": {"network_name": segment["physical_network"],
                        "mcast_flood": "false", "mcast_flood_reports": "true"},
            "external_ids": {names.NETWORK_NAME: names.switch(network["id"])},
        }
        if segment.get("network_type") == "vlan":
            columns["tag"] = [segment["segmentation_id"]]
        rows.append(Row(Key("Logical_Switch_Port", "name", names.localnet_port(segment["id"])),
                        columns, parent=Parent(switch_key(network["id"]), "ports")))
    return rows


# --- subnets ---------------------------------------------------------------------------

def server_mac(subnet_id: str) -> str:
    """The MAC OVN's DHCP server answers from: stable for a subnet, so a re-sync
    changes nothing; locally administered, unicast."""
    digest = hashlib.sha256(subnet_id.encode()).digest()
    return "fa:16:3e:" + ":".join(f"{byte:02x}" for byte in digest[:3])


def serves_dhcp(subnet: Mapping[str, Any]) -> bool:
    """Whether OVN answers DHCP on the subnet (DHCPv4 only, for now)."""
    return subnet["ip_version"] == 4 and bool(subnet.get("enable_dhcp"))


def metadata_address(port: Mapping[str, Any] | None, subnet_id: str) -> str | None:
    """The metadata port's address on the subnet, if it has one."""
    if port is None:
        return None
    return next((ip["ip_address"] for ip in port["fixed_ips"] if ip["subnet_id"] == subnet_id),
                None)


def dhcp_options(subnet: Mapping[str, Any], network: Mapping[str, Any],
                 metadata_ip: str | None = None, dns_servers: Iterable[str] = ()) -> Row | None:
    """A DHCPv4 subnet's options (a route to the metadata service through
    ``metadata_ip``, the network's metadata port); None for a subnet OVN does
    not answer DHCP for."""
    if not serves_dhcp(subnet):
        return None
    cidr = ipaddress.ip_network(subnet["cidr"])
    gateway = subnet.get("gateway_ip")
    options = {"server_id": gateway or str(cidr.network_address + 1),
               "server_mac": server_mac(subnet["id"]),
               "lease_time": str(DHCP_LEASE_TIME),
               "mtu": str(network.get("mtu") or 1500)}
    if gateway:
        options["router"] = gateway
    servers = list(subnet.get("dns_nameservers") or dns_servers)
    if servers:
        options["dns_server"] = "{" + ", ".join(servers) + "}"
    routes = sorted((route["destination"], route["nexthop"])
                    for route in subnet.get("host_routes") or [])
    if metadata_ip:
        routes.insert(0, (f"{METADATA_ADDRESS}/32", metadata_ip))
    # a client that takes classless routes ignores ``router``: say it again
    if routes and gateway and all(dest != "0.0.0.0/0" for dest, _ in routes):
        routes.append(("0.0.0.0/0", gateway))
    if routes:
        options["classless_static_route"] = "{" + ", ".join(
            f"{dest},{hop}" for dest, hop in routes) + "}"
    return Row(dhcp_key(subnet["id"]), {
        "cidr": str(cidr), "options": options,
        "external_ids": {names.SUBNET: subnet["id"],
                         names.REVISION: str(subnet["revision_number"])},
    }, subnet["revision_number"])


# --- ports -----------------------------------------------------------------------------

def _addresses(port: Mapping[str, Any]) -> str:
    return " ".join([port["mac_address"], *(ip["ip_address"] for ip in port["fixed_ips"])])


def switch_port(port: Mapping[str, Any], subnets: Mapping[str, Mapping[str, Any]]) -> Row:
    """A port as its Logical_Switch_Port; ``subnets``: those of its fixed IPs, by id."""
    owner = port.get("device_owner") or ""
    # the network's own ports (metadata, DHCP) are trusted, as in Neutron: the
    # metadata port answers from 169.254.169.254, which it does not hold
    secured = bool(port.get("port_security_enabled", True)) and not owner.startswith("network:")
    groups = list(port.get("security_groups") or [])
    columns: dict[str, Any] = {
        "enabled": bool(port.get("admin_state_up", True)),
        "external_ids": {
            names.PORT_NAME: port.get("name") or "",
            names.DEVICE_ID: port.get("device_id") or "",
            names.DEVICE_OWNER: owner,
            names.PROJECT: port.get("project_id") or "",
            names.NETWORK_NAME: names.switch(port["network_id"]),
            names.CIDRS: " ".join(
                # a stored cidr is canonical: its length is what follows the /
                f"{ip['ip_address']}/{subnets[ip['subnet_id']]['cidr'].rpartition('/')[2]}"
                for ip in port["fixed_ips"] if ip["subnet_id"] in subnets),
            names.SECURITY_GROUPS: " ".join(groups),
            names.REVISION: str(port["revision_number"]),
        },
        "type": "", "options": {}, "port_security": [], "dhcpv4_options": [],
    }
    if owner in ROUTER_OWNERS:
        columns.update(type="router", addresses=["router"],
                       options={"router-port": names.router_port(port["id"])})
    elif owner == FLOATING_IP_OWNER:
        columns.update(addresses=[], enabled=False)  # the address lives on the router
    else:
        addresses = [_addresses(port)]
        if not secured and not owner.startswith("network:"):
            addresses.append("unknown")  # it may send and take any MAC: flood to it
        columns["addresses"] = addresses
        if owner == METADATA_OWNER:
            columns["type"] = "localport"
        if secured:
            columns["port_security"] = [" ".join([
                _addresses(port),
                *(pair["ip_address"] for pair in port.get("allowed_address_pairs") or []
                  if pair.get("mac_address", port["mac_address"]) == port["mac_address"])])] + [
                f"{pair['mac_address']} {pair['ip_address']}"
                for pair in port.get("allowed_address_pairs") or []
                if pair.get("mac_address", port["mac_address"]) != port["mac_address"]]
        host = port.get("binding:host_id")
        if host:
            columns["options"] = {"requested-chassis": host}
        dhcp_subnet = next((ip["subnet_id"] for ip in port["fixed_ips"]
                            if subnets.get(ip["subnet_id"], {}).get("ip_version") == 4
                            and subnets[ip["subnet_id"]].get("enable_dhcp")), None)
        if dhcp_subnet is not None and owner != METADATA_OWNER:
            columns["dhcpv4_options"] = Ref(dhcp_key(dhcp_subnet))
    wanted = {names.port_group(group) for group in groups}
    if secured and columns["type"] == "":
        wanted.add(names.DROP_PORT_GROUP)
    else:
        wanted = set()
    return Row(switch_port_key(port["id"]), columns, port["revision_number"],
               Parent(switch_key(port["network_id"]), "ports"), frozenset(wanted))


# --- security groups -------------------------------------------------------------------

def _ip(ethertype: str) -> str:
    return "ip6" if ethertype == "IPv6" else "ip4"


PROTOCOL_NUMBERS = {"tcp": 6, "udp": 17, "sctp": 132, "icmp": 1, "ipv6-icmp": 58,
                    "icmpv6": 58}


def acl_match(rule: Mapping[str, Any]) -> str:
    """The OVN match of a security group rule, as Neutron's driver writes it (a
    remote group or address group is matched through its address set)."""
    ingress = rule["direction"] == "ingress"
    group = "@" + names.port_group(rule["security_group_id"])
    ip = _ip(rule.get("ethertype") or "IPv4")
    parts = [f"outport == {group}" if ingress else f"inport == {group}", ip]
    side = "src" if ingress else "dst"
    if rule.get("remote_ip_prefix"):
        parts.append(f"{ip}.{side} == {rule['remote_ip_prefix']}")
    elif rule.get("remote_address_group_id"):
        addresses = names.address_group_set(rule["remote_address_group_id"], int(ip[-1]))
        parts.append(f"{ip}.{side} == ${addresses}")
    elif rule.get("remote_group_id"):
        remote = names.port_group(rule["remote_group_id"])
        parts.append(f"{ip}.{side} == ${names.address_set(remote, int(ip[-1]))}")
    protocol = rule.get("protocol")
    if protocol is not None:
        protocol = str(protocol).lower()
        number = PROTOCOL_NUMBERS.get(protocol, int(protocol) if protocol.isdigit() else None)
        low, high = rule.get("port_range_min"), rule.get("port_range_max")
        if number in (6, 17, 132):
            name = {6: "tcp", 17: "udp", 132: "sctp"}[number]
            parts.append(name)
            if low is not None and high is not None and low != high:
                parts.append(f"{name}.dst >= {low} && {name}.dst <= {high}")
            elif low is not None:
                parts.append(f"{name}.dst == {low}")
        elif number in (1, 58):
            icmp = "icmp4" if ip == "ip4" else "icmp6"
            parts.append(icmp)
            if low is not None:
                parts.append(f"{icmp}.type == {low}")
            if high is not None:
                parts.append(f"{icmp}.code == {high}")
        elif number is not None:
            parts.append(f"ip.proto == {number}")
    return " && ".join(parts)


def acl(rule: Mapping[str, Any], stateful: bool) -> dict[str, Any]:
    match = acl_match(rule)
    return {"direction": "to-lport" if rule["direction"] == "ingress" else "from-lport",
            "priority": ACL_RULE_PRIORITY, "match": match,
            "action": "allow-related" if stateful else "allow-stateless",
            "log": False, "name": [], "severity": [],
            "external_ids": {names.SECURITY_GROUP_RULE: rule["id"]}}


def port_group(group: Mapping[str, Any]) -> tuple[Row, list[dict[str, Any]]]:
    """A security group's port group (its ports are set by the ports' writes) and
    the ACLs of its rules."""
    row = Row(port_group_key(group["id"]), {
        "external_ids": {names.SECURITY_GROUP: group["id"],
                         names.REVISION: str(group.get("revision_number", 0))}},
        group.get("revision_number"))
    stateful = bool(group.get("stateful", True))
    return row, [acl(rule, stateful) for rule in group.get("security_group_rules") or []]


def address_set_key(address_group_id: str, ip_version: int) -> Key:
    return Key("Address_Set", "name", names.address_group_set(address_group_id, ip_version))


def address_sets(address_group_id: str, addresses: Iterable[str]) -> list[Row]:
    """An address group as its two address sets, one per IP version, which the
    rules naming it match (as Neutron writes them)."""
    return [Row(address_set_key(address_group_id, version), {
        "addresses": sorted(cidr for cidr in addresses
                            if ipaddress.ip_network(cidr, strict=False).version == version),
        "external_ids": {ADDRESS_GROUP: address_group_id}})
        for version in (4, 6)]


def drop_group_acls() -> list[dict[str, Any]]:
    """What no group allows goes nowhere: the drop port group's two ACLs."""
    group = "@" + names.DROP_PORT_GROUP
    return [{"direction": direction, "priority": ACL_DROP_PRIORITY,
             "match": f"{port} == {group} && ip", "action": "drop",
             "log": False, "name": [], "severity": [],
             "external_ids": {"neutron:drop": direction}}
            for direction, port in (("to-lport", "outport"), ("from-lport", "inport"))]
