"""Tables, as SQLAlchemy Core: the schema every migration builds toward.

Each resource table carries its own standard attributes (name, description,
project, timestamps, revision) so that a list is one query per table.
"""

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    UniqueConstraint,
    false,
    true,
)
from sqlalchemy.dialects import mysql

metadata = MetaData(naming_convention={
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s",
    "pk": "pk_%(table_name)s",
})

UUID = String(36)
PROJECT = String(255)


def _standard() -> list[Column]:
    return [
        Column("id", UUID, primary_key=True),
        Column("project_id", PROJECT, index=True),
        Column("name", String(255), nullable=False, default=""),
        Column("description", String(255), nullable=False, default=""),
        Column("created_at", DateTime, nullable=False),
        Column("updated_at", DateTime, nullable=False),
        Column("revision_number", Integer, nullable=False, default=0),
    ]


networks = Table(
    "networks", metadata, *_standard(),
    Column("status", String(16), nullable=False),
    Column("admin_state_up", Boolean, nullable=False),
    Column("shared", Boolean, nullable=False, default=False),
    Column("router_external", Boolean, nullable=False, default=False),
    Column("mtu", Integer, nullable=False),
    # the default external network of auto-allocated topologies
    Column("is_default", Boolean, nullable=False, default=False, server_default=false()),
)

# Who may use a network beyond its owner: ``access_as_shared`` (ports, subnets)
# or ``access_as_external`` (router gateways, floating IPs), for one project or
# every project ("*"). ``networks.shared`` mirrors "a '*' access_as_shared entry
# exists" and ``networks.router_external`` "the network is external", kept in
# step in the same transaction.
networkrbacs = Table(
    "networkrbacs", metadata,
    Column("id", UUID, primary_key=True),
    Column("project_id", PROJECT),
    Column("object_id", UUID, ForeignKey("networks.id", ondelete="CASCADE"), nullable=False),
    Column("target_project", PROJECT, nullable=False, index=True),
    Column("action", String(255), nullable=False),
    UniqueConstraint("object_id", "target_project", "action",
                     name="uq_networkrbacs_object_id_target_project_action"),
)

# Address scopes: subnet pools in one scope route without NAT among themselves and
# not at all to other scopes. Not a standard-attribute resource, as in Neutron.
address_scopes = Table(
    "address_scopes", metadata,
    Column("id", UUID, primary_key=True),
    Column("project_id", PROJECT, index=True),
    Column("name", String(255), nullable=False),
    Column("shared", Boolean, nullable=False, default=False),
    Column("ip_version", Integer, nullable=False),
)

# Flavors: a service type's named offers, each served by one of its enabled
# service profiles (a driver and its settings).
flavors = Table(
    "flavors", metadata,
    Column("id", UUID, primary_key=True),
    Column("name", String(255)),
    Column("description", String(1024)),
    Column("enabled", Boolean, nullable=False, default=True),
    Column("service_type", String(36)),
)

service_profiles = Table(
    "service_profiles", metadata,
    Column("id", UUID, primary_key=True),
    Column("description", String(1024)),
    Column("driver", String(1024), nullable=False),
    Column("enabled", Boolean, nullable=False, default=True),
    Column("metainfo", String(4096)),
)

flavor_service_profiles = Table(
    "flavor_service_profiles", metadata,
    Column("flavor_id", UUID, ForeignKey("flavors.id", ondelete="CASCADE"), primary_key=True),
    Column("service_profile_id", UUID, ForeignKey("service_profiles.id", ondelete="CASCADE"),
           primary_key=True),
)

# RBAC entries of every object type but networks (whose entries, on the hot
# path of every network read, keep a table of their own).
rbac_entries = Table(
    "rbac_entries", metadata,
    Column("id", UUID, primary_key=True),
    Column("project_id", PROJECT),
    Column("object_type", String(64), nullable=False),
    Column("object_id", UUID, nullable=False, index=True),
    Column("target_project", PROJECT, nullable=False, index=True),
    Column("action", String(255), nullable=False),
    UniqueConstraint("object_type", "object_id", "target_project", "action",
                     name="uq_rbac_entries_object_type_object_id_target_project_action"),
)

subnetpools = Table(
    "subnetpools", metadata, *_standard(),
    Column("ip_version", Integer, nullable=False),
    Column("default_prefixlen", Integer, nullable=False),
    Column("min_prefixlen", Integer, nullable=False),
    Column("max_prefixlen", Integer, nullable=False),
    Column("default_quota", Integer),
    Column("shared", Boolean, nullable=False, default=False),
    Column("is_default", Boolean, nullable=False, default=False),
    Column("address_scope_id", UUID),
)

subnetpool_prefixes = Table(
    "subnetpool_prefixes", metadata,
    Column("subnetpool_id", UUID, ForeignKey("subnetpools.id", ondelete="CASCADE"),
           primary_key=True),
    Column("cidr", String(64), primary_key=True),
)

subnets = Table(
    "subnets", metadata, *_standard(),
    Column("network_id", UUID, ForeignKey("networks.id"), nullable=False, index=True),
    Column("ip_version", Integer, nullable=False),
    Column("cidr", String(64), nullable=False),
    Column("gateway_ip", String(64)),
    Column("enable_dhcp", Boolean, nullable=False),
    Column("ipv6_ra_mode", String(16)),
    Column("ipv6_address_mode", String(16)),
    Column("subnetpool_id", UUID, ForeignKey("subnetpools.id"), index=True),
    # routed networks: the segment whose hosts reach the subnet
    Column("segment_id", UUID, ForeignKey("network_segments.id"), index=True),
)

# subnet-service-types: the device owners whose ports take their addresses from
# the subnet (none: any port that no typed subnet is for)
subnet_service_types = Table(
    "subnet_service_types", metadata,
    Column("subnet_id", UUID, ForeignKey("subnets.id", ondelete="CASCADE"), primary_key=True),
    Column("service_type", String(255), primary_key=True),
)

allocation_pools = Table(
    "allocation_pools", metadata,
    Column("subnet_id", UUID, ForeignKey("subnets.id", ondelete="CASCADE"),
           primary_key=True),
    Column("first_ip", String(64), primary_key=True),
    Column("last_ip", String(64), nullable=False),
)

dns_nameservers = Table(
    "dns_nameservers", metadata,
    Column("subnet_id", UUID, ForeignKey("subnets.id", ondelete="CASCADE"),
           primary_key=True),
    Column("address", String(64), primary_key=True),
    Column("position", Integer, nullable=False),
)

host_routes = Table(
    "host_routes", metadata,
    Column("subnet_id", UUID, ForeignKey("subnets.id", ondelete="CASCADE"),
           primary_key=True),
    Column("destination", String(64), primary_key=True),
    Column("nexthop", String(64), primary_key=True),
)

ports = Table(
    "ports", metadata, *_standard(),
    Column("network_id", UUID, ForeignKey("networks.id"), nullable=False),
    Column("mac_address", String(32), nullable=False),
    Column("admin_state_up", Boolean, nullable=False),
    Column("status", String(16), nullable=False),
    Column("device_id", String(255), nullable=False, default=""),
    Column("device_owner", String(255), nullable=False, default=""),
    # routed networks: "deferred" (an address once bound to a host) or "none"
    Column("ip_allocation", String(16)),
    UniqueConstraint("network_id", "mac_address", name="uq_ports_network_id_mac_address"),
    Index("ix_ports_device_id", "device_id"),
)

ip_allocations = Table(
    "ip_allocations", metadata,
    Column("subnet_id", UUID, ForeignKey("subnets.id"), primary_key=True),
    Column("ip_address", String(64), primary_key=True),
    Column("port_id", UUID, ForeignKey("ports.id", ondelete="CASCADE"), nullable=False,
           index=True),
    Column("network_id", UUID, nullable=False, index=True),
)

# Tags compare case-sensitively everywhere (MariaDB's default collation does not).
TAG = String(255).with_variant(mysql.VARCHAR(255, collation="utf8mb4_bin"), "mysql", "mariadb")

tags = Table(
    "tags", metadata,
    Column("resource_id", UUID, primary_key=True),
    Column("tag", TAG, primary_key=True),
)

quotas = Table(
    "quotas", metadata,
    Column("project_id", PROJECT, primary_key=True),
    Column("resource", String(255), primary_key=True),
    Column("hard_limit", Integer, nullable=False),
)

# One row per (project, resource), locked while counting, so that concurrent
# creates in one project are counted one after the other on every database.
quota_locks = Table(
    "quota_locks", metadata,
    Column("project_id", PROJECT, primary_key=True),
    Column("resource", String(255), primary_key=True),
)

# --- ML2 ---------------------------------------------------------------------

network_segments = Table(
    "network_segments", metadata,
    Column("id", UUID, primary_key=True),
    Column("network_id", UUID, ForeignKey("networks.id", ondelete="CASCADE"), nullable=False,
           index=True),
    Column("network_type", String(32), nullable=False),
    Column("physical_network", String(64)),
    Column("segmentation_id", BigInteger),  # GRE keys use all 32 bits
    Column("segment_index", Integer, nullable=False, default=0),
    Column("name", String(255)),
    Column("description", String(255), nullable=False, default=""),
    Column("created_at", DateTime, nullable=False),
    Column("updated_at", DateTime, nullable=False),
    Column("revision_number", Integer, nullable=False, default=0),
)

# Ranges of segmentation ids that tenant networks take theirs from: the
# configured ranges (``default``, shared) and those an admin adds, shared or
# for one project (network-segment-range).
network_segment_ranges = Table(
    "network_segment_ranges", metadata, *_standard(),
    Column("default", Boolean, nullable=False, default=False),
    Column("shared", Boolean, nullable=False, default=True),
    Column("network_type", String(32), nullable=False),
    Column("physical_network", String(64)),
    Column("minimum", BigInteger, nullable=False),
    Column("maximum", BigInteger, nullable=False),
)

# The hosts that reach each segment (routed networks): what an L2 agent's
# mappings say of its host's physical networks.
segment_host_mappings = Table(
    "segment_host_mappings", metadata,
    Column("segment_id", UUID, ForeignKey("network_segments.id", ondelete="CASCADE"),
           primary_key=True),
    Column("host", String(255), primary_key=True, index=True),
)

# One row per usable id of a (type, physnet): vlan ids, VNIs, GRE keys; flat
# networks hold id 0 of their physnet. Free rows follow the configured
# ranges (the network segment ranges, when their plugin is loaded); taken rows
# stay until released, whatever the ranges say. Tunnel types' rows have the
# physical network NO_PHYSNET: the key column cannot be NULL.
NO_PHYSNET = ""
segment_allocations = Table(
    "segment_allocations", metadata,
    Column("network_type", String(32), primary_key=True),
    Column("physical_network", String(64), primary_key=True),
    Column("segmentation_id", BigInteger, primary_key=True, autoincrement=False),
    Column("allocated", Boolean, nullable=False, default=False),
    Index("ix_segment_allocations_free", "network_type", "physical_network", "allocated"),
)

# A port's binding on a host; binding-extended allows one per host, one ACTIVE.
port_bindings = Table(
    "port_bindings", metadata,
    Column("port_id", UUID, ForeignKey("ports.id", ondelete="CASCADE"), primary_key=True),
    Column("host", String(255), primary_key=True),
    Column("vnic_type", String(64), nullable=False, default="normal"),
    Column("profile", JSON, nullable=False),
    Column("vif_type", String(64), nullable=False),
    Column("vif_details", JSON, nullable=False),
    Column("status", String(16), nullable=False),
    Column("segment_id", UUID),
)

# Agents as they report themselves; "alive" is derived from the heartbeat.
agents = Table(
    "agents", metadata,
    Column("id", UUID, primary_key=True),
    Column("agent_type", String(255), nullable=False),
    Column("binary", String(255), nullable=False),
    Column("topic", String(255), nullable=False),
    Column("host", String(255), nullable=False, index=True),
    Column("availability_zone", String(255)),
    Column("admin_state_up", Boolean, nullable=False, default=True),
    Column("description", String(255)),  # null until an admin sets one, as in Neutron
    Column("configurations", JSON, nullable=False),
    Column("resources_synced", Boolean),
    Column("created_at", DateTime, nullable=False),
    Column("started_at", DateTime, nullable=False),
    Column("heartbeat_timestamp", DateTime, nullable=False),
    UniqueConstraint("agent_type", "host", name="uq_agents_agent_type_host"),
)

# port_security extension driver: a row per network and per port that has a value,
# going with its network or port.
network_port_security = Table(
    "network_port_security", metadata,
    Column("network_id", UUID, ForeignKey("networks.id", ondelete="CASCADE"),
           primary_key=True),
    Column("enabled", Boolean, nullable=False),
)

port_port_security = Table(
    "port_port_security", metadata,
    Column("port_id", UUID, ForeignKey("ports.id", ondelete="CASCADE"), primary_key=True),
    Column("enabled", Boolean, nullable=False),
)

# --- security groups ----------------------------------------------------------------

security_groups = Table(
    "security_groups", metadata, *_standard(),
    Column("stateful", Boolean, nullable=False, default=True),
)

# A project's default group. The primary key lets exactly one exist however many
# first requests of a project race to make it; deleting the group frees the slot.
# The stateful value a new security group takes when its request says none:
# per project, or system-wide (project_id NULL), else true
sg_default_statefulness = Table(
    "sg_default_statefulness", metadata,
    Column("id", UUID, primary_key=True),
    Column("project_id", PROJECT, nullable=True, unique=True),
    Column("stateful", Boolean, nullable=False),
)

default_security_groups = Table(
    "default_security_groups", metadata,
    Column("project_id", PROJECT, primary_key=True),
    Column("security_group_id", UUID, ForeignKey("security_groups.id", ondelete="CASCADE"),
           nullable=False, unique=True),
)

address_groups = Table("address_groups", metadata, *_standard())

address_group_addresses = Table(
    "address_group_addresses", metadata,
    Column("address_group_id", UUID, ForeignKey("address_groups.id", ondelete="CASCADE"),
           primary_key=True),
    Column("address", String(64), primary_key=True),
)

# A rule's project is its group's. normalized_cidr is remote_ip_prefix without host
# bits, stored so that it can be filtered and sorted on.
security_group_rules = Table(
    "security_group_rules", metadata,
    Column("id", UUID, primary_key=True),
    Column("project_id", PROJECT, index=True),
    Column("security_group_id", UUID, ForeignKey("security_groups.id", ondelete="CASCADE"),
           nullable=False, index=True),
    Column("remote_group_id", UUID, ForeignKey("security_groups.id", ondelete="CASCADE"),
           index=True),
    Column("remote_address_group_id", UUID, ForeignKey("address_groups.id"), index=True),
    Column("direction", String(16), nullable=False),
    Column("ethertype", String(40), nullable=False),
    Column("protocol", String(40)),
    Column("port_range_min", Integer),
    Column("port_range_max", Integer),
    Column("remote_ip_prefix", String(64)),
    Column("normalized_cidr", String(64)),
    Column("description", String(255), nullable=False, default=""),
    Column("created_at", DateTime, nullable=False),
    Column("updated_at", DateTime, nullable=False),
    Column("revision_number", Integer, nullable=False, default=0),
)

# The template of every new group's first rules (security-groups-default-rules):
# remote_group_id may be PARENT, the new group itself, so it names no group here.
security_group_default_rules = Table(
    "security_group_default_rules", metadata,
    Column("id", UUID, primary_key=True),
    Column("description", String(255), nullable=False, default=""),
    Column("direction", String(16), nullable=False),
    Column("ethertype", String(40), nullable=False),
    Column("protocol", String(40)),
    Column("port_range_min", Integer),
    Column("port_range_max", Integer),
    Column("remote_ip_prefix", String(64)),
    Column("remote_group_id", String(36)),
    Column("remote_address_group_id", String(36)),
    Column("used_in_default_sg", Boolean, nullable=False),
    Column("used_in_non_default_sg", Boolean, nullable=False),
)

security_group_port_bindings = Table(
    "security_group_port_bindings", metadata,
    Column("port_id", UUID, ForeignKey("ports.id", ondelete="CASCADE"), primary_key=True),
    Column("security_group_id", UUID, ForeignKey("security_groups.id"), primary_key=True,
           index=True),
)

# --- L3: routers, floating IPs, port forwardings --------------------------------------

routers = Table(
    "routers", metadata,
    *_standard(),
    Column("admin_state_up", Boolean, nullable=False),
    Column("status", String(16), nullable=False),
    Column("gw_port_id", UUID, ForeignKey("ports.id"), unique=True),
    Column("enable_snat", Boolean, nullable=False),
)

# The ports a router owns: its interfaces and its gateway.
router_ports = Table(
    "router_ports", metadata,
    Column("port_id", UUID, ForeignKey("ports.id", ondelete="CASCADE"), primary_key=True),
    Column("router_id", UUID, ForeignKey("routers.id", ondelete="CASCADE"), nullable=False,
           index=True),
    Column("port_type", String(255), nullable=False),
)

# --- highly available routers (l3-ha) ---------------------------------------------------

# Each project's HA network, where its HA routers' hosts speak VRRP (one each).
ha_router_networks = Table(
    "ha_router_networks", metadata,
    Column("project_id", PROJECT, primary_key=True),
    Column("network_id", UUID, ForeignKey("networks.id", ondelete="CASCADE"), nullable=False,
           unique=True),
)

# An HA router: its project's HA network and its virtual router id there (a
# router without a row here is a legacy one).
ha_routers = Table(
    "ha_routers", metadata,
    Column("router_id", UUID, ForeignKey("routers.id", ondelete="CASCADE"), primary_key=True),
    Column("network_id", UUID, ForeignKey("networks.id", ondelete="CASCADE"), nullable=False),
    Column("vr_id", Integer, nullable=False),
    UniqueConstraint("network_id", "vr_id", name="uq_ha_routers_network_id_vr_id"),
)

# An HA router's port on its HA network for one L3 agent, and what that
# agent last said of its role (active, standby, unknown).
ha_router_agent_port_bindings = Table(
    "ha_router_agent_port_bindings", metadata,
    Column("port_id", UUID, ForeignKey("ports.id", ondelete="CASCADE"), primary_key=True),
    Column("router_id", UUID, ForeignKey("routers.id", ondelete="CASCADE"), nullable=False,
           index=True),
    Column("l3_agent_id", UUID, ForeignKey("agents.id", ondelete="CASCADE")),
    Column("state", String(16), nullable=False, default="standby"),
    UniqueConstraint("router_id", "l3_agent_id",
                     name="uq_ha_router_agent_port_bindings_router_id_l3_agent_id"),
)

# A router made of a flavor (l3-flavors): the flavor, kept while it has routers,
# and the provider that serves the router (Neutron's providerresourceassociations).
router_flavors = Table(
    "router_flavors", metadata,
    Column("router_id", UUID, ForeignKey("routers.id", ondelete="CASCADE"), primary_key=True),
    Column("flavor_id", UUID, ForeignKey("flavors.id"), nullable=False, index=True),
    Column("provider_name", String(255), nullable=False),
)

# The network and router that auto-allocated-topology made for a project.
auto_allocated_topologies = Table(
    "auto_allocated_topologies", metadata,
    Column("project_id", PROJECT, primary_key=True),
    Column("network_id", UUID, ForeignKey("networks.id", ondelete="CASCADE"), nullable=False),
    Column("router_id", UUID, ForeignKey("routers.id", ondelete="SET NULL")),
)

router_routes = Table(
    "router_routes", metadata,
    Column("router_id", UUID, ForeignKey("routers.id", ondelete="CASCADE"),
           primary_key=True),
    Column("destination", String(64), primary_key=True),
    Column("nexthop", String(64), primary_key=True),
)

floatingips = Table(
    "floatingips", metadata,
    *_standard(),  # name stays "": floating IPs have none
    Column("floating_ip_address", String(64), nullable=False),
    Column("floating_network_id", UUID, ForeignKey("networks.id"), nullable=False),
    Column("floating_port_id", UUID, ForeignKey("ports.id", ondelete="CASCADE"),
           nullable=False, unique=True),
    Column("fixed_port_id", UUID, ForeignKey("ports.id"), index=True),
    Column("fixed_ip_address", String(64)),
    Column("router_id", UUID, ForeignKey("routers.id"), index=True),
    Column("status", String(16), nullable=False),
    # one floating IP per fixed IP and external network
    UniqueConstraint("floating_network_id", "fixed_port_id", "fixed_ip_address",
                     name="uq_floatingips_fixed_ip"),
)

# Ports of a floating IP forwarded to an internal port's address (as ranges).
port_forwardings = Table(
    "port_forwardings", metadata,
    Column("id", UUID, primary_key=True),
    Column("floatingip_id", UUID, ForeignKey("floatingips.id"), nullable=False, index=True),
    Column("internal_port_id", UUID, ForeignKey("ports.id", ondelete="CASCADE"),
           nullable=False, index=True),
    Column("internal_ip_address", String(64), nullable=False),
    Column("protocol", String(16), nullable=False),
    Column("external_port_start", Integer, nullable=False),
    Column("external_port_end", Integer, nullable=False),
    Column("internal_port_start", Integer, nullable=False),
    Column("internal_port_end", Integer, nullable=False),
    Column("description", String(255), nullable=False, default=""),
    UniqueConstraint("floatingip_id", "protocol", "external_port_start",
                     name="uq_port_forwardings_external"),
)

# --- port extras: allowed address pairs, extra DHCP options, DNS -----------------------

# allowed-address-pairs: strings kept as the caller wrote them (as Neutron does);
# ``position`` keeps the order given.
allowed_address_pairs = Table(
    "allowed_address_pairs", metadata,
    Column("port_id", UUID, ForeignKey("ports.id", ondelete="CASCADE"), primary_key=True),
    Column("mac_address", String(32), primary_key=True),
    Column("ip_address", String(64), primary_key=True),
    Column("position", Integer, nullable=False),
)

# DHCP option names compare case-sensitively everywhere, as Neutron matches them.
DHCP_OPT_NAME = String(64).with_variant(mysql.VARCHAR(64, collation="utf8mb4_bin"),
                                        "mysql", "mariadb")

# extra_dhcp_opt: one value per (port, option name, IP version).
extra_dhcp_opts = Table(
    "extra_dhcp_opts", metadata,
    Column("port_id", UUID, ForeignKey("ports.id", ondelete="CASCADE"), primary_key=True),
    Column("opt_name", DHCP_OPT_NAME, primary_key=True),
    Column("ip_version", Integer, primary_key=True, autoincrement=False),
    Column("opt_value", String(255), nullable=False),
    Column("position", Integer, nullable=False),
)

# dns-integration: a row only for a port with a dns_name, a network with a dns_domain.
port_dns = Table(
    "port_dns", metadata,
    Column("port_id", UUID, ForeignKey("ports.id", ondelete="CASCADE"), primary_key=True),
    Column("dns_name", String(256), nullable=False),  # 255 and the final dot
    # the port's own domain (dns-domain-ports), for an external DNS service
    Column("dns_domain", String(255), nullable=False, server_default=""),
)

# Attributes of ports that Nova and Cyborg read, each kept by an extension
# driver of its own (a row only when the port has a value).
port_numa_affinity_policies = Table(
    "port_numa_affinity_policies", metadata,
    Column("port_id", UUID, ForeignKey("ports.id", ondelete="CASCADE"), primary_key=True),
    Column("numa_affinity_policy", String(16), nullable=False),
)

port_device_profiles = Table(
    "port_device_profiles", metadata,
    Column("port_id", UUID, ForeignKey("ports.id", ondelete="CASCADE"), primary_key=True),
    Column("device_profile", String(255), nullable=False),
)

port_trusted = Table(
    "port_trusted", metadata,
    Column("port_id", UUID, ForeignKey("ports.id", ondelete="CASCADE"), primary_key=True),
    Column("trusted", Boolean, nullable=False),
)

network_dns_domains = Table(
    "network_dns_domains", metadata,
    Column("network_id", UUID, ForeignKey("networks.id", ondelete="CASCADE"),
           primary_key=True),
    Column("dns_domain", String(255), nullable=False),
)

# --- agents and availability zones ------------------------------------------------------

# The availability_zone_hints of a network or router that was given some, as the
# JSON text of the list (Neutron keeps that text, and limits it to 255 characters).
network_availability_zone_hints = Table(
    "network_availability_zone_hints", metadata,
    Column("network_id", UUID, ForeignKey("networks.id", ondelete="CASCADE"),
           primary_key=True),
    Column("hints", String(255), nullable=False),
)

router_availability_zone_hints = Table(
    "router_availability_zone_hints", metadata,
    Column("router_id", UUID, ForeignKey("routers.id", ondelete="CASCADE"),
           primary_key=True),
    Column("hints", String(255), nullable=False),
)

# --- scheduling: which agents host which networks and routers ---------------------------

# A network served by DHCP agents, a router by L3 agents. ``binding_index`` is
# unique per resource, so two servers scheduling the same resource at once cannot
# give it more agents than wanted: one of the inserts fails and is retried.
network_dhcp_agent_bindings = Table(
    "network_dhcp_agent_bindings", metadata,
    Column("network_id", UUID, ForeignKey("networks.id", ondelete="CASCADE"),
           primary_key=True),
    Column("dhcp_agent_id", UUID, ForeignKey("agents.id", ondelete="CASCADE"),
           primary_key=True, index=True),
    Column("binding_index", Integer, nullable=False),
    UniqueConstraint("network_id", "binding_index",
                     name="uq_network_dhcp_agent_bindings_network_id_binding_index"),
)

router_l3_agent_bindings = Table(
    "router_l3_agent_bindings", metadata,
    Column("router_id", UUID, ForeignKey("routers.id", ondelete="CASCADE"),
           primary_key=True),
    Column("l3_agent_id", UUID, ForeignKey("agents.id", ondelete="CASCADE"),
           primary_key=True, index=True),
    Column("binding_index", Integer, nullable=False),
    UniqueConstraint("router_id", "binding_index",
                     name="uq_router_l3_agent_bindings_router_id_binding_index"),
)

# --- FWaaS v2: rules, policies (rules in order), groups (policies on ports) --------------

firewall_rules = Table(
    "firewall_rules", metadata, *_standard(),
    Column("shared", Boolean, nullable=False, default=False),
    Column("protocol", String(40)),
    Column("ip_version", Integer, nullable=False),
    Column("source_ip_address", String(64)),
    Column("destination_ip_address", String(64)),
    Column("source_port_min", Integer),
    Column("source_port_max", Integer),
    Column("destination_port_min", Integer),
    Column("destination_port_max", Integer),
    Column("action", String(16), nullable=False),
    Column("enabled", Boolean, nullable=False),
)

firewall_policies = Table(
    "firewall_policies", metadata, *_standard(),
    Column("shared", Boolean, nullable=False, default=False),
    Column("audited", Boolean, nullable=False, default=False),
)

# A rule may be in many policies, once in each; ``position`` counts from 1.
firewall_policy_rules = Table(
    "firewall_policy_rules", metadata,
    Column("firewall_policy_id", UUID, ForeignKey("firewall_policies.id", ondelete="CASCADE"),
           primary_key=True),
    Column("firewall_rule_id", UUID, ForeignKey("firewall_rules.id"), primary_key=True,
           index=True),
    Column("position", Integer, nullable=False),
)

firewall_groups = Table(
    "firewall_groups", metadata, *_standard(),
    Column("admin_state_up", Boolean, nullable=False),
    Column("status", String(16), nullable=False),
    Column("shared", Boolean, nullable=False, default=False),
    Column("ingress_firewall_policy_id", UUID, ForeignKey("firewall_policies.id"),
           index=True),
    Column("egress_firewall_policy_id", UUID, ForeignKey("firewall_policies.id"),
           index=True),
)

# A port is in one firewall group at most (the primary key says so).
firewall_group_ports = Table(
    "firewall_group_ports", metadata,
    Column("port_id", UUID, ForeignKey("ports.id", ondelete="CASCADE"), primary_key=True),
    Column("firewall_group_id", UUID, ForeignKey("firewall_groups.id", ondelete="CASCADE"),
           nullable=False, index=True),
)

# Each project's group named "default", made the first time the project looks.
default_firewall_groups = Table(
    "default_firewall_groups", metadata,
    Column("project_id", PROJECT, primary_key=True),
    Column("firewall_group_id", UUID, ForeignKey("firewall_groups.id", ondelete="CASCADE"),
           nullable=False, unique=True),
)

# Metering: labels count traffic on the routers of their project (every router,
# when shared); a label's rules go with it.
metering_labels = Table(
    "metering_labels", metadata,
    Column("id", UUID, primary_key=True),
    Column("project_id", PROJECT, index=True),
    Column("name", String(255), nullable=False, default=""),
    Column("description", String(1024), nullable=False, default=""),
    Column("shared", Boolean, nullable=False, default=False),
)

metering_label_rules = Table(
    "metering_label_rules", metadata,
    Column("id", UUID, primary_key=True),
    Column("metering_label_id", UUID, ForeignKey("metering_labels.id", ondelete="CASCADE"),
           nullable=False, index=True),
    Column("direction", String(16), nullable=False),
    Column("excluded", Boolean, nullable=False, default=False),
    Column("remote_ip_prefix", String(64)),
    Column("source_ip_prefix", String(64)),
    Column("destination_ip_prefix", String(64)),
)

# --- logging: packet logs of security groups ---------------------------------------

# resource_id names a resource of resource_type (a security group; a firewall group
# once FWaaS logs), so it has no foreign key: the plugin of that resource deletes the
# logs naming it. A log of a port goes with the port.
logs = Table(
    "logs", metadata,
    *_standard(),
    Column("resource_type", String(36), nullable=False),
    Column("resource_id", UUID, index=True),
    Column("target_id", UUID, ForeignKey("ports.id", ondelete="CASCADE"), index=True),
    Column("event", String(255), nullable=False),
    Column("enabled", Boolean, nullable=False),
)

# VPNaaS: IKE and IPsec policies, services on routers, endpoint groups and the
# site connections between them (neutron-vpnaas's tables and names; no standard
# attributes, as there).


def _vpn_common() -> list[Column]:
    return [
        Column("id", UUID, primary_key=True),
        Column("project_id", PROJECT, index=True),
        Column("name", String(255), nullable=False, default=""),
        Column("description", String(255), nullable=False, default=""),
    ]


ikepolicies = Table(
    "ikepolicies", metadata, *_vpn_common(),
    Column("auth_algorithm", String(16), nullable=False),
    Column("encryption_algorithm", String(32), nullable=False),
    Column("phase1_negotiation_mode", String(16), nullable=False),
    Column("lifetime_units", String(16), nullable=False),
    Column("lifetime_value", Integer, nullable=False),
    Column("ike_version", String(16), nullable=False),
    Column("pfs", String(16), nullable=False),
)

ipsecpolicies = Table(
    "ipsecpolicies", metadata, *_vpn_common(),
    Column("transform_protocol", String(16), nullable=False),
    Column("auth_algorithm", String(16), nullable=False),
    Column("encryption_algorithm", String(32), nullable=False),
    Column("encapsulation_mode", String(16), nullable=False),
    Column("lifetime_units", String(16), nullable=False),
    Column("lifetime_value", Integer, nullable=False),
    Column("pfs", String(16), nullable=False),
)

vpnservices = Table(
    "vpnservices", metadata, *_vpn_common(),
    Column("status", String(16), nullable=False),
    Column("admin_state_up", Boolean, nullable=False),
    Column("external_v4_ip", String(64)),
    Column("external_v6_ip", String(64)),
    Column("subnet_id", UUID, ForeignKey("subnets.id"), index=True),
    Column("router_id", UUID, ForeignKey("routers.id"), nullable=False, index=True),
)

vpn_endpoint_groups = Table(
    "vpn_endpoint_groups", metadata, *_vpn_common(),
    Column("endpoint_type", String(32), nullable=False),
)

# A group's endpoints (subnet ids or CIDRs), each once, in the order given.
vpn_endpoints = Table(
    "vpn_endpoints", metadata,
    Column("endpoint_group_id", UUID,
           ForeignKey("vpn_endpoint_groups.id", ondelete="CASCADE"), primary_key=True),
    Column("endpoint", String(255), primary_key=True, index=True),
    Column("position", Integer, nullable=False),
)

ipsec_site_connections = Table(
    "ipsec_site_connections", metadata, *_vpn_common(),
    Column("peer_address", String(255), nullable=False),
    Column("peer_id", String(255), nullable=False),
    Column("local_id", String(255), nullable=False, default=""),
    Column("route_mode", String(8), nullable=False),
    Column("mtu", Integer, nullable=False),
    Column("initiator", String(32), nullable=False),
    Column("auth_mode", String(16), nullable=False),
    Column("psk", String(255), nullable=False),
    Column("dpd_action", String(32), nullable=False),
    Column("dpd_interval", Integer, nullable=False),
    Column("dpd_timeout", Integer, nullable=False),
    Column("status", String(16), nullable=False),
    Column("admin_state_up", Boolean, nullable=False),
    Column("vpnservice_id", UUID, ForeignKey("vpnservices.id"), nullable=False, index=True),
    Column("ikepolicy_id", UUID, ForeignKey("ikepolicies.id"), nullable=False, index=True),
    Column("ipsecpolicy_id", UUID, ForeignKey("ipsecpolicies.id"), nullable=False,
           index=True),
    Column("local_ep_group_id", UUID, ForeignKey("vpn_endpoint_groups.id"), index=True),
    Column("peer_ep_group_id", UUID, ForeignKey("vpn_endpoint_groups.id"), index=True),
)

# A (legacy) connection's peer CIDRs, each once, in the order given.
ipsecpeercidrs = Table(
    "ipsecpeercidrs", metadata,
    Column("ipsec_site_connection_id", UUID,
           ForeignKey("ipsec_site_connections.id", ondelete="CASCADE"), primary_key=True),
    Column("cidr", String(64), primary_key=True),
    Column("position", Integer, nullable=False),
)

# --- load balancing (the Octavia v2 API): load balancers, their listeners, pools
# and the pools' members. Each carries Octavia's two statuses: provisioning (what
# the provider has done) and operating (what it observes).


def _lbaas_common() -> list[Column]:
    return [*_standard(),
            Column("provisioning_status", String(16), nullable=False),
            Column("operating_status", String(16), nullable=False),
            Column("admin_state_up", Boolean, nullable=False),
            Column("tags", JSON, nullable=False)]


lbaas_loadbalancers = Table(
    "lbaas_loadbalancers", metadata, *_lbaas_common(),
    Column("provider", String(255), nullable=False),
    Column("vip_address", String(64), nullable=True),
    Column("vip_port_id", UUID, nullable=True),
    Column("vip_subnet_id", UUID, nullable=True),
    Column("vip_network_id", UUID, nullable=True),
    # the security groups asked for on the VIP port (Octavia's vip_sg_ids)
    Column("vip_sg_ids", JSON, nullable=False),
    Column("availability_zone", String(255), nullable=True),
    Column("flavor_id", UUID, nullable=True),
    # whether the VIP port was made for the load balancer (and goes with it),
    # or was the project's, given as vip_port_id
    Column("vip_port_owned", Boolean, nullable=False, server_default=true()),
)

lbaas_pools = Table(
    "lbaas_pools", metadata, *_lbaas_common(),
    Column("loadbalancer_id", UUID,
           ForeignKey("lbaas_loadbalancers.id", ondelete="CASCADE"), nullable=False,
           index=True),
    Column("protocol", String(16), nullable=False),
    Column("lb_algorithm", String(32), nullable=False),
    Column("session_persistence", JSON, nullable=True),
)

lbaas_listeners = Table(
    "lbaas_listeners", metadata, *_lbaas_common(),
    Column("loadbalancer_id", UUID,
           ForeignKey("lbaas_loadbalancers.id", ondelete="CASCADE"), nullable=False,
           index=True),
    Column("protocol", String(32), nullable=False),
    Column("protocol_port", Integer, nullable=False),
    Column("connection_limit", Integer, nullable=False),
    Column("default_pool_id", UUID, ForeignKey("lbaas_pools.id"), nullable=True,
           index=True),
    Column("timeout_client_data", Integer, nullable=False),
    Column("timeout_member_connect", Integer, nullable=False),
    Column("timeout_member_data", Integer, nullable=False),
    Column("timeout_tcp_inspect", Integer, nullable=False),
    # a port serves one protocol of a load balancer once (Octavia's constraint)
    UniqueConstraint("loadbalancer_id", "protocol", "protocol_port",
                     name="uq_lbaas_listeners_loadbalancer_id_protocol_port"),
)

lbaas_members = Table(
    "lbaas_members", metadata, *_lbaas_common(),
    Column("pool_id", UUID, ForeignKey("lbaas_pools.id", ondelete="CASCADE"),
           nullable=False, index=True),
    Column("address", String(64), nullable=False),
    Column("protocol_port", Integer, nullable=False),
    Column("weight", Integer, nullable=False),
    Column("backup", Boolean, nullable=False),
    Column("subnet_id", UUID, nullable=True),
    Column("monitor_address", String(64), nullable=True),
    Column("monitor_port", Integer, nullable=True),
    UniqueConstraint("pool_id", "address", "protocol_port",
                     name="uq_lbaas_members_pool_id_address_port"),
)

# Which load-balancer agent runs a load balancer of the haproxy provider.
lbaas_loadbalancer_agent_bindings = Table(
    "lbaas_loadbalancer_agent_bindings", metadata,
    Column("loadbalancer_id", UUID,
           ForeignKey("lbaas_loadbalancers.id", ondelete="CASCADE"), primary_key=True),
    Column("agent_id", UUID, ForeignKey("agents.id", ondelete="CASCADE"),
           primary_key=True, index=True),
    Column("binding_index", Integer, nullable=False),
    UniqueConstraint("loadbalancer_id", "binding_index",
                     name="uq_lbaas_lb_agent_bindings_lb_id_binding_index"),
)

# A listener's L7 policies, tried in position order (1, 2, ...), and their rules
# (all of which must match).
lbaas_l7policies = Table(
    "lbaas_l7policies", metadata, *_lbaas_common(),
    Column("listener_id", UUID, ForeignKey("lbaas_listeners.id", ondelete="CASCADE"),
           nullable=False, index=True),
    Column("action", String(32), nullable=False),
    Column("position", Integer, nullable=False),
    Column("redirect_url", String(2048), nullable=True),
    Column("redirect_prefix", String(2048), nullable=True),
    Column("redirect_pool_id", UUID, ForeignKey("lbaas_pools.id"), nullable=True,
           index=True),
    Column("redirect_http_code", Integer, nullable=True),
)

lbaas_l7rules = Table(
    "lbaas_l7rules", metadata, *_lbaas_common(),
    Column("l7policy_id", UUID, ForeignKey("lbaas_l7policies.id", ondelete="CASCADE"),
           nullable=False, index=True),
    Column("type", String(36), nullable=False),
    Column("compare_type", String(36), nullable=False),
    Column("key", String(255), nullable=True),
    Column("value", String(255), nullable=False),
    Column("invert", Boolean, nullable=False),
)

# Octavia's flavors and availability zones: what an operator offers by name,
# each backed by a profile holding one provider's options (JSON text).
lbaas_flavor_profiles = Table(
    "lbaas_flavor_profiles", metadata,
    Column("id", UUID, primary_key=True),
    Column("name", String(255), nullable=False),
    Column("provider_name", String(255), nullable=False),
    Column("flavor_data", String(4096), nullable=False),
)

lbaas_flavors = Table(
    "lbaas_flavors", metadata,
    Column("id", UUID, primary_key=True),
    Column("name", String(255), nullable=False, unique=True),
    Column("description", String(255), nullable=True),
    Column("enabled", Boolean, nullable=False),
    Column("flavor_profile_id", UUID, ForeignKey("lbaas_flavor_profiles.id"),
           nullable=False, index=True),
)

lbaas_availability_zone_profiles = Table(
    "lbaas_availability_zone_profiles", metadata,
    Column("id", UUID, primary_key=True),
    Column("name", String(255), nullable=False),
    Column("provider_name", String(255), nullable=False),
    Column("availability_zone_data", String(4096), nullable=False),
)

lbaas_availability_zones = Table(
    "lbaas_availability_zones", metadata,
    Column("name", String(255), primary_key=True),
    Column("description", String(255), nullable=True),
    Column("enabled", Boolean, nullable=False),
    Column("availability_zone_profile_id", UUID,
           ForeignKey("lbaas_availability_zone_profiles.id"), nullable=False, index=True),
)

# A project's load-balancing quotas where an admin set them (NULL: the default).
lbaas_quotas = Table(
    "lbaas_quotas", metadata,
    Column("project_id", String(255), primary_key=True),
    *(Column(name, Integer, nullable=True) for name in (
        "load_balancer", "listener", "member", "pool", "health_monitor", "l7policy",
        "l7rule")),
)

# A listener's counters as its provider last reported them (Octavia's stats).
lbaas_listener_stats = Table(
    "lbaas_listener_stats", metadata,
    Column("listener_id", UUID, ForeignKey("lbaas_listeners.id", ondelete="CASCADE"),
           primary_key=True),
    Column("bytes_in", BigInteger, nullable=False),
    Column("bytes_out", BigInteger, nullable=False),
    Column("active_connections", BigInteger, nullable=False),
    Column("total_connections", BigInteger, nullable=False),
    Column("request_errors", BigInteger, nullable=False),
)

# A pool's one health monitor.
lbaas_healthmonitors = Table(
    "lbaas_healthmonitors", metadata, *_lbaas_common(),
    Column("pool_id", UUID, ForeignKey("lbaas_pools.id", ondelete="CASCADE"),
           nullable=False, unique=True),
    Column("type", String(36), nullable=False),
    Column("delay", Integer, nullable=False),
    Column("timeout", Integer, nullable=False),
    Column("max_retries", Integer, nullable=False),
    Column("max_retries_down", Integer, nullable=False),
    Column("http_method", String(16), nullable=True),
    Column("url_path", String(2048), nullable=True),
    Column("expected_codes", String(64), nullable=True),
    Column("http_version", String(8), nullable=True),
    Column("domain_name", String(255), nullable=True),
)


# --- QoS (the qos service plugin) ----------------------------------------------------

qos_policies = Table(
    "qos_policies", metadata, *_standard(),
    Column("shared", Boolean, nullable=False, default=False),
)

# a project's default policy (qos-default): its new networks and ports take it
qos_default_policies = Table(
    "qos_default_policies", metadata,
    Column("project_id", PROJECT, primary_key=True),
    Column("qos_policy_id", UUID, ForeignKey("qos_policies.id", ondelete="CASCADE"),
           nullable=False),
)


def _qos_rule(name: str, *columns: Column, unique: tuple[str, ...]) -> Table:
    """A kind of rule; one per policy and ``unique`` (a direction, or nothing)."""
    return Table(
        name, metadata,
        Column("id", UUID, primary_key=True),
        Column("qos_policy_id", UUID, ForeignKey("qos_policies.id", ondelete="CASCADE"),
               nullable=False, index=True),
        *columns,
        UniqueConstraint("qos_policy_id", *unique, name=f"uq_{name}_policy"),
    )


qos_bandwidth_limit_rules = _qos_rule(
    "qos_bandwidth_limit_rules", Column("max_kbps", BigInteger, nullable=False),
    Column("max_burst_kbps", BigInteger, nullable=False),
    Column("direction", String(16), nullable=False), unique=("direction",))
qos_dscp_marking_rules = _qos_rule(
    "qos_dscp_marking_rules", Column("dscp_mark", Integer, nullable=False), unique=())
qos_minimum_bandwidth_rules = _qos_rule(
    "qos_minimum_bandwidth_rules", Column("min_kbps", BigInteger, nullable=False),
    Column("direction", String(16), nullable=False), unique=("direction",))
qos_packet_rate_limit_rules = _qos_rule(
    "qos_packet_rate_limit_rules", Column("max_kpps", BigInteger, nullable=False),
    Column("max_burst_kpps", BigInteger, nullable=False),
    Column("direction", String(16), nullable=False), unique=("direction",))
qos_minimum_packet_rate_rules = _qos_rule(
    "qos_minimum_packet_rate_rules", Column("min_kpps", BigInteger, nullable=False),
    Column("direction", String(16), nullable=False), unique=("direction",))


def _qos_binding(name: str, column: str, target: str) -> Table:
    """Which policy a network, port, floating IP or router gateway has (one)."""
    return Table(
        name, metadata,
        Column(column, UUID, ForeignKey(f"{target}.id", ondelete="CASCADE"), primary_key=True),
        Column("policy_id", UUID, ForeignKey("qos_policies.id", ondelete="CASCADE"),
               nullable=False, index=True),
    )


qos_network_policy_bindings = _qos_binding("qos_network_policy_bindings", "network_id",
                                           "networks")
qos_port_policy_bindings = _qos_binding("qos_port_policy_bindings", "port_id", "ports")
qos_fip_policy_bindings = _qos_binding("qos_fip_policy_bindings", "fip_id", "floatingips")
qos_router_gw_policy_bindings = _qos_binding("qos_router_gw_policy_bindings", "router_id",
                                             "routers")

# --- conntrack helpers (the conntrack_helper service plugin) --------------------------

# A router's CT target rules: traffic to ``port`` over ``protocol`` is given to
# the kernel's ``helper`` (ftp, tftp, sip ...); once per router and combination.
conntrack_helpers = Table(
    "conntrack_helpers", metadata,
    Column("id", UUID, primary_key=True),
    Column("router_id", UUID, ForeignKey("routers.id", ondelete="CASCADE"), nullable=False,
           index=True),
    Column("protocol", String(40), nullable=False),
    Column("port", Integer, nullable=False),
    Column("helper", String(64), nullable=False),
    UniqueConstraint("router_id", "protocol", "port", "helper",
                     name="uq_conntrack_helpers_router"),
)

# --- trunks (the trunk service plugin) -----------------------------------------------

trunks = Table(
    "trunks", metadata, *_standard(),
    Column("admin_state_up", Boolean, nullable=False, default=True),
    Column("status", String(16), nullable=False),
    Column("port_id", UUID, ForeignKey("ports.id", ondelete="CASCADE"), nullable=False,
           unique=True),
)

subports = Table(
    "subports", metadata,
    Column("port_id", UUID, ForeignKey("ports.id", ondelete="CASCADE"), primary_key=True),
    Column("trunk_id", UUID, ForeignKey("trunks.id", ondelete="CASCADE"), nullable=False,
           index=True),
    Column("segmentation_type", String(32), nullable=False),
    Column("segmentation_id", Integer, nullable=False),
    UniqueConstraint("trunk_id", "segmentation_type", "segmentation_id",
                     name="uq_subports_trunk_id_segmentation"),
)

# --- NDP proxies (the ndp_proxy service plugin) --------------------------------------

# An instance's IPv6 address that its router publishes on its gateway's network
# (it answers neighbour solicitations for it); once per router and address.
ndp_proxies = Table(
    "ndp_proxies", metadata, *_standard(),
    Column("router_id", UUID, ForeignKey("routers.id", ondelete="CASCADE"), nullable=False,
           index=True),
    Column("port_id", UUID, ForeignKey("ports.id", ondelete="CASCADE"), nullable=False,
           index=True),
    Column("ip_address", String(64), nullable=False),
    UniqueConstraint("router_id", "ip_address", name="uq_ndp_proxies_router_id_ip_address"),
)

# A router's ``enable_ndp_proxy``, while it has a gateway (none: false).
router_ndp_proxy_state = Table(
    "router_ndp_proxy_state", metadata,
    Column("router_id", UUID, ForeignKey("routers.id", ondelete="CASCADE"), primary_key=True),
    Column("enable_ndp_proxy", Boolean, nullable=False),
)

# --- Local IPs (the local_ip service plugin) ------------------------------------------

# An address that instances reach on their own host only, taken from a port
# (``local_port_id``: one made for it on ``network_id``, or one given).
local_ips = Table(
    "local_ips", metadata, *_standard(),
    Column("local_port_id", UUID, ForeignKey("ports.id"), nullable=False, index=True),
    Column("network_id", UUID, nullable=False),
    Column("local_ip_address", String(64), nullable=False),
    Column("ip_mode", String(32), nullable=False),
)

# A local IP associated to an instance's port (at one of its fixed IPs): on the
# port's host, the local IP leads to it.
local_ip_associations = Table(
    "local_ip_associations", metadata,
    Column("local_ip_id", UUID, ForeignKey("local_ips.id"), primary_key=True),
    Column("fixed_port_id", UUID, ForeignKey("ports.id", ondelete="CASCADE"),
           primary_key=True, index=True),
    Column("fixed_ip", String(64), nullable=False),
)
