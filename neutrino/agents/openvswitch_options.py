"""The Open vSwitch agent's options, apart from the agent: other commands name
the options it reads (in a config file they share with it) without importing
the agent, which imports the ovs library."""

from __future__ import annotations

from neutrino.agents.extensions.manager import EXTENSION_OPTIONS
from neutrino.agents.l2 import NOOP_FIREWALL_ALIASES, parse_mappings
from neutrino.config import Opt, OptGroup, choice, int_range, parse_bool, parse_list
from neutrino.linux.ovs_names import DEFAULT_OVSDB

BINARY = "neutrino-openvswitch-agent"
TUNNEL_TYPES = ("vxlan", "geneve", "gre")
#: Neutron's class path for the OpenFlow firewall, as its configuration files give it
FIREWALL_ALIASES = {
    "neutron.agent.linux.openvswitch_firewall.OVSFirewallDriver": "openvswitch",
    "neutron.agent.linux.openvswitch_firewall:OVSFirewallDriver": "openvswitch",
    **NOOP_FIREWALL_ALIASES}


def parse_tunnel_types(text: str) -> list[str]:
    types = parse_list(text)
    unknown = sorted(set(types) - set(TUNNEL_TYPES))
    if unknown:
        raise ValueError(f"unknown {', '.join(unknown)}: use {', '.join(TUNNEL_TYPES)}")
    return types


OPTIONS = (
    OptGroup("ovs", [
        Opt("integration_bridge", str, "br-int", "The bridge instances plug into."),
        Opt("tunnel_bridge", str, "br-tun", "The bridge that holds the tunnels."),
        Opt("bridge_mappings", parse_mappings, {},
            "Physical networks and the OVS bridges that carry them."),
        Opt("local_ip", str, "", "This host's address for tunnels."),
        Opt("datapath_type", choice("system", "netdev"), "system",
            "system (the kernel's datapath), or netdev (userspace)."),
        Opt("ovsdb_connection", str, DEFAULT_OVSDB, "Where ovsdb-server listens."),
        Opt("ovsdb_timeout", int_range(1), 10,
            "Seconds an OVSDB transaction may take, ovs-vswitchd applying it included."),
        Opt("of_interface", choice("ovs-ofctl"), "ovs-ofctl",
            "How flows are written: ovs-ofctl bundles."),
    ]),
    OptGroup("agent", [
        Opt("tunnel_types", parse_tunnel_types, [], "vxlan, geneve and/or gre."),
        Opt("l2_population", parse_bool, False,
            "Learn where other hosts' ports are from the server."),
        Opt("arp_responder", parse_bool, False,
            "Answer ARP for other hosts' ports on br-tun (with l2_population)."),
    ]),
    OptGroup("securitygroup", [
        Opt("enable_security_group", parse_bool, True,
            "Filter ports by their security groups."),
        Opt("firewall_driver", choice("openvswitch", "noop", aliases=FIREWALL_ALIASES),
            "openvswitch", "openvswitch (OpenFlow with conntrack), or noop for none."),
    ]),
    EXTENSION_OPTIONS,
)
