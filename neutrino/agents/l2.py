"""What the L2 agents (``linuxbridge``, ``openvswitch``) share."""

from __future__ import annotations

from neutrino.config import parse_list


def parse_mappings(text: str) -> dict[str, str]:
    """``physnet1:eth1,physnet2:br-ex`` as a dict."""
    mappings = {}
    for item in parse_list(text):
        name, sep, value = item.partition(":")
        if not sep or not name.strip() or not value.strip():
            raise ValueError(f"'{item}' is not <physical network>:<name>")
        mappings[name.strip()] = value.strip()
    return mappings


#: Neutron's class paths for the no-op firewall, as its configuration files give them
NOOP_FIREWALL_ALIASES = {"neutron.agent.firewall.NoopFirewallDriver": "noop",
                         "neutron.agent.firewall:NoopFirewallDriver": "noop"}
