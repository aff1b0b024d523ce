"""The L3 agent's pure core: sync_routers data to a router on the host, and
that router's NAT chains."""

from __future__ import annotations

import copy

import pytest

from neutrino import config
from neutrino.agents.extensions.manager import Extensions
from neutrino.agents.extensions.port_forwarding import PortForwardingExtension
from neutrino.agents.l3 import OPTIONS, floating_ips, router_spec
from neutrino.linux import metadata_proxy, nat
from neutrino.linux.router import Port

EXT_SUBNET = {"id": "ext-v4", "cidr": "203.0.113.0/24", "gateway_ip": "203.0.113.1"}
EXT_SUBNET6 = {"id": "ext-v6", "cidr": "2001:db8::/64", "gateway_ip": "2001:db8::1"}
#: the agent's extensions as it runs them by default
PF = Extensions([("port_forwarding", PortForwardingExtension())])


def sync_data() -> dict:
    """A router as ``sync_routers`` gives it: a gateway on a dual-stack external
    network, two interfaces, one floating IP associated, one only forwarded."""
    return {
        "id": "r1", "routes": [{"destination": "192.168.9.0/24", "nexthop": "10.1.0.254"}],
        "enable_snat": True,
        "gw_port": {"id": "gwport000001xyz", "mac_address": "fa:16:3e:00:00:01",
                    "network_id": "ext", "mtu": 1500,
                    "fixed_ips": [{"subnet_id": "ext-v4", "ip_address": "203.0.113.10",
                                   "prefixlen": 24},
                                  {"subnet_id": "ext-v6", "ip_address": "2001:db8::10",
                                   "prefixlen": 64}],
                    "subnets": [EXT_SUBNET, EXT_SUBNET6]},
        "_interfaces": [
            {"id": "ifport000001abc", "mac_address": "fa:16:3e:00:00:02", "mtu": 1450,
             "network_id": "n1", "fixed_ips": [{"subnet_id": "s1", "ip_address": "10.1.0.1",
                                                "prefixlen": 24}],
             "subnets": [{"id": "s1", "cidr": "10.1.0.0/24", "gateway_ip": "10.1.0.1"}]},
            {"id": "ifport000002abc", "mac_address": "fa:16:3e:00:00:03", "mtu": 1450,
             "network_id": "n2", "fixed_ips": [{"subnet_id": "s2", "ip_address": "10.2.0.1"}],
             "subnets": [{"id": "s2", "cidr": "10.2.0.0/24", "gateway_ip": "10.2.0.1"}]},
        ],
        "_floatingips": [
            {"id": "f1", "floating_ip_address": "203.0.113.20", "fixed_ip_address": "10.1.0.5"},
            {"id": "f2", "floating_ip_address": "203.0.113.21", "fixed_ip_address": None},
            {"id": "f3", "floating_ip_address": "203.0.113.22", "fixed_ip_address": None},
        ],
        "_port_forwardings": [
            {"id": "pf1", "floatingip_id": "f2", "floating_ip_address": "203.0.113.21",
             "protocol": "tcp", "internal_ip_address": "10.2.0.7",
             "external_port_start": 8080, "external_port_end": 8080,
             "internal_port_start": 80, "internal_port_end": 80},
        ],
    }


def test_router_spec_of_a_router_with_a_gateway():
    spec = router_spec(sync_data(), extensions=PF)
    assert spec.interfaces == (
        Port("ifport000001abc", "fa:16:3e:00:00:02", 1450, ("10.1.0.1/24",)),
        # no prefixlen given: the subnet's
        Port("ifport000002abc", "fa:16:3e:00:00:03", 1450, ("10.2.0.1/24",)))
    assert spec.gateway == Port("gwport000001xyz", "fa:16:3e:00:00:01", 1500, (
        "2001:db8::10/64", "203.0.113.10/24", "203.0.113.20/32", "203.0.113.21/32"))
    assert dict(spec.routes) == {"0.0.0.0/0": "203.0.113.1", "::/0": "2001:db8::1",
                                 "192.168.9.0/24": "10.1.0.254"}
    assert spec.nat == nat.RouterNat(
        gateway="qg-gwport00000", snat_address="203.0.113.10",
        floating_ips=(nat.FloatingIp("203.0.113.20", "10.1.0.5"),),
        forwardings=(nat.Forwarding("203.0.113.21", "tcp", (8080, 8080), "10.2.0.7",
                                    (80, 80)),))
    # f3 has neither a port nor forwardings: not carried, no status to report
    assert [fip["id"] for fip in floating_ips(sync_data(), PF)] == ["f1", "f2"]


def test_port_forwardings_are_the_extensions():
    """Without the port_forwarding extension a router carries only its
    associated floating IPs, and forwards no port."""
    spec = router_spec(sync_data())
    assert "203.0.113.21/32" not in spec.gateway.cidrs
    assert spec.nat.forwardings == ()
    assert [fip["id"] for fip in floating_ips(sync_data())] == ["f1"]


def test_router_spec_without_snat_or_gateway():
    data = sync_data()
    data["enable_snat"] = False
    assert router_spec(data).nat.snat_address is None
    assert router_spec(data).nat.floating_ips  # floating IPs work without SNAT
    internal = copy.deepcopy(sync_data())
    del internal["gw_port"]
    spec = router_spec(internal)
    assert spec.gateway is None and spec.nat == nat.RouterNat()
    assert dict(spec.routes) == {"192.168.9.0/24": "10.1.0.254"}


def test_nat_chains_order():
    chains = nat.chains(router_spec(sync_data(), extensions=PF).nat)
    post = chains["nat", "neutrino-l3-POST"]
    # internal <-> internal untouched first, each floating IP's SNAT before the router's
    assert post[0] == ("-A neutrino-l3-POST ! -i qg-gwport00000 ! -o qg-gwport00000 "
                       "-m conntrack ! --ctstate DNAT -j ACCEPT")
    assert post[1] == "-A neutrino-l3-POST -s 10.1.0.5/32 -j SNAT --to-source 203.0.113.20"
    assert post[2] == "-A neutrino-l3-POST -o qg-gwport00000 -j SNAT --to-source 203.0.113.10"
    assert chains["nat", "neutrino-l3-PRE"] == [
        "-A neutrino-l3-PRE -d 203.0.113.20/32 -j DNAT --to-destination 10.1.0.5",
        "-A neutrino-l3-PRE -d 203.0.113.21/32 -p tcp -m tcp --dport 8080 -j DNAT "
        "--to-destination 10.2.0.7:80"]
    assert chains["mangle", "neutrino-l3-MARK"] == [
        "-A neutrino-l3-MARK -i qg-gwport00000 -j MARK --set-xmark 0x2/0xffff"]


def test_forwarded_port_ranges():
    def rule(external: tuple[int, int], internal: tuple[int, int]) -> str:
        forward = nat.Forwarding("198.51.100.1", "udp", external, "10.0.0.2", internal)
        [line] = nat.chains(nat.RouterNat(gateway="qg-x", forwardings=(forward,)))[
            "nat", "neutrino-l3-PRE"]
        return line.split("--dport ")[1]

    # N to N keeps each port's offset; N to 1 all to the one port
    assert rule((5000, 5010), (6000, 6010)) == (
        "5000:5010 -j DNAT --to-destination 10.0.0.2:6000-6010/5000")
    assert rule((5000, 5010), (22, 22)) == "5000:5010 -j DNAT --to-destination 10.0.0.2:22"


def test_restore_round_trip():
    """Our lines in a restore read back (``iptables-save`` writes them as we
    do) as the same chains and every jump; known jumps are not written again."""
    wanted = nat.chains(router_spec(sync_data(), extensions=PF).nat)
    text = nat.restore_text(wanted, set())
    assert nat.present_jumps(text) == set(nat.HOOKS)
    assert nat.saved_chains(text) == {key: rules for key, rules in wanted.items() if rules}
    assert "-A PREROUTING" not in nat.restore_text(wanted, set(nat.HOOKS))


def test_forgotten_floating_ips():
    data = sync_data()
    before = nat.translations(nat.chains(router_spec(data, extensions=PF).nat))
    data["_floatingips"][0]["fixed_ip_address"] = "10.1.0.6"  # moved to another port
    data["_port_forwardings"] = []  # and the forwarding went
    after = nat.translations(nat.chains(router_spec(data, extensions=PF).nat))
    assert nat.forgotten(before, after) == ["203.0.113.20", "203.0.113.21"]
    assert nat.forgotten(after, after) == []


def test_only_legacy_routers_and_no_external_bridge(tmp_path):
    conf_file = tmp_path / "l3.ini"

    def load(text: str) -> config.Config:
        conf_file.write_text(f"[DEFAULT]\n{text}\n")
        conf = config.load([str(conf_file)])
        conf.register(OPTIONS)
        return conf

    assert load("interface_driver = linuxbridge").DEFAULT.agent_mode == "legacy"
    with pytest.raises(config.ConfigError, match="distributed routers are not supported"):
        load("agent_mode = dvr_snat")
    with pytest.raises(config.ConfigError, match="external_network_bridge"):
        load("external_network_bridge = br-ex")
    assert load("interface_driver = openvswitch").DEFAULT.interface_driver == "openvswitch"
    with pytest.raises(config.ConfigError, match="must be one of linuxbridge, openvswitch"):
        load("interface_driver = ovs")


def test_metadata_redirect_and_input_rules():
    """A router with an interface serves metadata (asked): the REDIRECT first in
    PREROUTING, the proxy's port closed to the gateway side; with or without a
    gateway; none without an interface or when not asked."""
    spec = router_spec(sync_data(), metadata=True)
    assert spec.metadata and spec.nat.metadata
    chains = nat.chains(spec.nat)
    assert chains["nat", "neutrino-l3-PRE"][0] == (
        "-A neutrino-l3-PRE -d 169.254.169.254/32 -i qr-+ -p tcp -m tcp --dport 80 "
        "-j REDIRECT --to-ports 9697")
    assert chains["filter", "neutrino-l3-IN"] == [
        "-A neutrino-l3-IN ! -i qr-+ -p tcp -m tcp --dport 9697 -j DROP"]
    # the rest as without metadata
    without = nat.chains(router_spec(sync_data()).nat)
    assert chains["nat", "neutrino-l3-PRE"][1:] == without["nat", "neutrino-l3-PRE"]
    assert without["filter", "neutrino-l3-IN"] == []
    assert not router_spec(sync_data()).metadata

    internal = sync_data()
    del internal["gw_port"]
    internal_chains = nat.chains(router_spec(internal, metadata=True).nat)
    assert internal_chains["nat", "neutrino-l3-PRE"] == chains["nat", "neutrino-l3-PRE"][:1]
    assert internal_chains["filter", "neutrino-l3-IN"] == chains["filter", "neutrino-l3-IN"]
    assert not internal_chains["nat", "neutrino-l3-POST"]

    bare = sync_data()
    bare["_interfaces"] = []
    assert not router_spec(bare, metadata=True).metadata

    # the REDIRECT is no floating IP: nothing to forget when metadata comes or goes
    assert nat.forgotten(nat.translations(chains), nat.translations(without)) == []
    # and it reads back as written
    text = nat.restore_text(chains, set())
    assert nat.saved_chains(text) == {key: rules for key, rules in chains.items() if rules}


def test_metadata_proxy_options(tmp_path):
    conf_file = tmp_path / "l3.ini"

    def load(text: str) -> config.Config:
        conf_file.write_text(f"[DEFAULT]\nstate_path = {tmp_path}\n{text}\n")
        conf = config.load([str(conf_file)])
        conf.register(OPTIONS)
        return conf

    conf = load("")
    assert conf.DEFAULT.enable_metadata_proxy is True
    assert metadata_proxy.socket_path(conf) == str(tmp_path / "metadata_proxy")
    assert conf.agent.check_child_processes_interval == 60
    conf = load("enable_metadata_proxy = false\nmetadata_proxy_socket = /run/md.sock")
    assert conf.DEFAULT.enable_metadata_proxy is False
    assert metadata_proxy.socket_path(conf) == "/run/md.sock"
