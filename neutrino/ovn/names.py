"""The names and ``external_ids`` keys of neutrino's rows in OVN's databases.

They are Neutron's, so that an operator's OVN tooling (``ovn-nbctl`` habits,
scripts that look for ``neutron-<network id>``) works unchanged, and so that a
Northbound database written by Neutron reads as ours.
"""

from __future__ import annotations

#: external_ids keys
REVISION = "neutron:revision_number"
NETWORK_NAME = "neutron:network_name"
PORT_NAME = "neutron:port_name"
ROUTER_NAME = "neutron:router_name"
PROJECT = "neutron:project_id"
DEVICE_ID = "neutron:device_id"
DEVICE_OWNER = "neutron:device_owner"
CIDRS = "neutron:cidrs"
SECURITY_GROUPS = "neutron:security_group_ids"
SECURITY_GROUP = "neutron:security_group_id"
SECURITY_GROUP_RULE = "neutron:security_group_rule_id"
SUBNET = "subnet_id"
PORT = "port_id"
#: a Chassis_Private's key where the OVN metadata agent says it is alive
METADATA_SB_CFG = "neutron:ovn-metadata-sb-cfg"
METADATA_ID = "neutron:ovn-metadata-id"

#: how /v2.0/agents shows chassis (Neutron's agent types)
CONTROLLER_AGENT = "OVN Controller agent"
GATEWAY_AGENT = "OVN Controller Gateway agent"
METADATA_AGENT = "OVN Metadata agent"

#: the device owner of a network's metadata port (a localport on every chassis)
METADATA_OWNER = "network:distributed"

#: the port group every port with port security belongs to: its drop ACLs
#: make whatever no group of the port allows go nowhere
DROP_PORT_GROUP = "neutron_pg_drop"


def switch(network_id: str) -> str:
    return f"neutron-{network_id}"


def network_of_switch(name: str) -> str | None:
    return name[len("neutron-"):] if name.startswith("neutron-") else None


def router(router_id: str) -> str:
    return f"neutron-{router_id}"


def router_port(port_id: str) -> str:
    return f"lrp-{port_id}"


def localnet_port(segment_id: str) -> str:
    return f"provnet-{segment_id}"


def port_group(security_group_id: str) -> str:
    """OVN's port group names allow no '-': Neutron's pg_<id with underscores>."""
    return "pg_" + security_group_id.replace("-", "_")


def security_group_of(port_group_name: str) -> str | None:
    if not port_group_name.startswith("pg_") or port_group_name == DROP_PORT_GROUP:
        return None
    return port_group_name[3:].replace("_", "-")


def address_set(port_group_name: str, ip_version: int) -> str:
    """The address set OVN keeps of a port group's addresses (``$pg_<id>_ip4``)."""
    return f"{port_group_name}_ip{ip_version}"


def address_group_set(address_group_id: str, ip_version: int) -> str:
    """The address set of an address group's addresses of one IP version, as
    Neutron names it (``ag_<id with underscores>_ip4``)."""
    return f"ag_{address_group_id.replace('-', '_')}_ip{ip_version}"


def metadata_namespace(network_id: str) -> str:
    return f"ovnmeta-{network_id}"
