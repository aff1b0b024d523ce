"""What dnsmasq is told for a network, from the network as the server gives it."""

from __future__ import annotations

from typing import Any

from neutrino.linux import dnsmasq
from neutrino.linux.dnsmasq import Settings

V4 = "11111111-1111-1111-1111-111111111111"
V4_NO_GW = "22222222-2222-2222-2222-222222222222"
V6 = "33333333-3333-3333-3333-333333333333"
OFF = "44444444-4444-4444-4444-444444444444"


def subnet(subnet_id: str, cidr: str, gateway: str | None, **extra: Any) -> dict[str, Any]:
    return {"id": subnet_id, "cidr": cidr, "ip_version": 6 if ":" in cidr else 4,
            "gateway_ip": gateway, "enable_dhcp": True, "dns_nameservers": [],
            "host_routes": [], "ipv6_address_mode": None, **extra}


def port(port_id: str, mac: str, *ips: tuple[str, str], **extra: Any) -> dict[str, Any]:
    return {"id": port_id, "mac_address": mac, "device_owner": "compute:nova",
            "fixed_ips": [{"subnet_id": s, "ip_address": a} for s, a in ips], **extra}


def network(*subnets: dict[str, Any], ports: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    return {"id": "net-1", "mtu": 1450, "subnets": list(subnets), "ports": list(ports)}


def lines(text: str) -> list[str]:
    assert text == "" or text.endswith("\n")
    return text.splitlines()


def test_each_address_on_a_dhcp_subnet_is_a_host_line_with_neutrons_name():
    net = network(subnet(V4, "10.0.0.0/24", "10.0.0.1"),
                  subnet(OFF, "10.9.0.0/24", "10.9.0.1", enable_dhcp=False),
                  ports=(port("p2", "fa:16:3e:00:00:02", (V4, "10.0.0.5"), (OFF, "10.9.0.5")),
                         port("p1", "fa:16:3e:00:00:01", (V4, "10.0.0.4"))))
    assert lines(dnsmasq.hosts_file(net, Settings())) == [
        "fa:16:3e:00:00:01,host-10-0-0-4.openstacklocal,10.0.0.4",
        "fa:16:3e:00:00:02,host-10-0-0-5.openstacklocal,10.0.0.5"]
    assert lines(dnsmasq.addn_hosts_file(net, Settings(domain="example.org"))) == [
        "10.0.0.4\thost-10-0-0-4.example.org host-10-0-0-4",
        "10.0.0.5\thost-10-0-0-5.example.org host-10-0-0-5"]
    assert dnsmasq.served_ports(net) == ["p1", "p2"]


def test_a_port_with_extra_options_is_tagged_and_gets_them():
    opts = [{"opt_name": "bootfile-name", "opt_value": "pxelinux.0", "ip_version": 4},
            {"opt_name": "66", "opt_value": "10.0.0.9", "ip_version": 4},
            {"opt_name": "dns-server", "opt_value": "2001:db8::53", "ip_version": 6}]
    net = network(subnet(V4, "10.0.0.0/24", "10.0.0.1"),
                  ports=(port("p1", "fa:16:3e:00:00:01", (V4, "10.0.0.4"),
                              extra_dhcp_opts=opts),))
    assert lines(dnsmasq.hosts_file(net, Settings())) == [
        "fa:16:3e:00:00:01,set:port-p1,host-10-0-0-4.openstacklocal,10.0.0.4"]
    assert lines(dnsmasq.opts_file(net))[-3:] == [
        "tag:port-p1,option:bootfile-name,pxelinux.0",
        "tag:port-p1,66,10.0.0.9",
        "tag:port-p1,option6:dns-server,2001:db8::53"]


def test_a_port_with_a_dns_name_is_served_under_it():
    assigned = [{"ip_address": "10.0.0.4", "hostname": "web", "fqdn": "web.example.org."}]
    net = network(subnet(V4, "10.0.0.0/24", "10.0.0.1"),
                  ports=(port("p1", "fa:16:3e:00:00:01", (V4, "10.0.0.4"),
                              dns_assignment=assigned),))
    assert lines(dnsmasq.hosts_file(net, Settings())) == [
        "fa:16:3e:00:00:01,web.example.org,10.0.0.4"]
    assert lines(dnsmasq.addn_hosts_file(net, Settings())) == ["10.0.0.4\tweb.example.org web"]


def test_subnet_options_gateway_dns_and_routes_with_the_default_route():
    routed = subnet(V4, "10.0.0.0/24", "10.0.0.1", dns_nameservers=["8.8.8.8", "1.1.1.1"],
                    host_routes=[{"destination": "192.168.0.0/16", "nexthop": "10.0.0.254"}])
    net = network(routed, subnet(V4_NO_GW, "10.1.0.0/24", None))
    route = "192.168.0.0/16,10.0.0.254,0.0.0.0/0,10.0.0.1"
    assert lines(dnsmasq.opts_file(net)) == [
        f"tag:subnet-{V4},option:dns-server,8.8.8.8,1.1.1.1",
        f"tag:subnet-{V4},option:classless-static-route,{route}",
        f"tag:subnet-{V4},249,{route}",
        f"tag:subnet-{V4},option:router,10.0.0.1",
        # no gateway: an empty router option, or dnsmasq would offer itself
        f"tag:subnet-{V4_NO_GW},option:router"]


def test_ipv6_stateful_subnets_are_served_slaac_ones_are_not():
    stateful = subnet(V6, "2001:db8::/64", "2001:db8::1", ipv6_address_mode="dhcpv6-stateful",
                      dns_nameservers=["2001:db8::53"])
    slaac = subnet(OFF, "2001:db8:1::/64", "2001:db8:1::1", ipv6_address_mode="slaac")
    net = network(stateful, slaac, ports=(port("p1", "fa:16:3e:00:00:01",
                                               (V6, "2001:db8::5"), (OFF, "2001:db8:1::5")),))
    assert lines(dnsmasq.hosts_file(net, Settings())) == [
        "fa:16:3e:00:00:01,host-2001-db8--5.openstacklocal,[2001:db8::5]"]
    assert lines(dnsmasq.opts_file(net)) == [
        f"tag:subnet-{V6},option6:dns-server,[2001:db8::53]"]
    ranges = [a for a in dnsmasq.command(net, "ns-x", "/c", Settings()) if "range" in a]
    assert ranges == [f"--dhcp-range=set:subnet-{V6},2001:db8::,static,64,86400s"]


def test_command_line():
    net = network(subnet(V4, "10.0.0.0/24", "10.0.0.1"), subnet(V4_NO_GW, "10.1.0.0/28", None),
                  subnet(OFF, "10.9.0.0/24", "10.9.0.1", enable_dhcp=False))
    argv = dnsmasq.command(net, "ns-abc", "/var/dhcp/net-1",
                           Settings(domain="example.org", lease_duration=-1,
                                    dns_servers=("192.0.2.53",)))
    assert argv == [
        "dnsmasq", "--no-hosts", "--no-resolv", "--conf-file=/dev/null",
        "--pid-file=/var/dhcp/net-1/pid", "--dhcp-hostsfile=/var/dhcp/net-1/host",
        "--addn-hosts=/var/dhcp/net-1/addn_hosts", "--dhcp-optsfile=/var/dhcp/net-1/opts",
        "--leasefile-ro", "--dhcp-authoritative", "--interface=ns-abc",
        "--except-interface=lo", "--bind-interfaces",
        f"--dhcp-range=set:subnet-{V4},10.0.0.0,static,255.255.255.0,infinite",
        f"--dhcp-range=set:subnet-{V4_NO_GW},10.1.0.0,static,255.255.255.240,infinite",
        "--dhcp-lease-max=272", "--server=192.0.2.53", "--domain=example.org"]


def test_ports_change_files_not_the_command_line():
    """What makes a SIGHUP enough: a new port changes the files only."""
    net = network(subnet(V4, "10.0.0.0/24", "10.0.0.1"),
                  ports=(port("p1", "fa:16:3e:00:00:01", (V4, "10.0.0.4")),))
    more = {**net, "ports": [*net["ports"], port("p2", "fa:16:3e:00:00:02", (V4, "10.0.0.5"))]}
    settings = Settings()
    assert dnsmasq.command(net, "ns-a", "/c", settings) == dnsmasq.command(more, "ns-a", "/c",
                                                                           settings)
    assert dnsmasq.files(net, settings) != dnsmasq.files(more, settings)


def test_files_are_written_only_when_they_change(tmp_path):
    target = str(tmp_path / "net")
    assert dnsmasq.write_files(target, {"host": "a\n", "opts": ""}) is True
    assert dnsmasq.write_files(target, {"host": "a\n", "opts": ""}) is False
    assert dnsmasq.write_files(target, {"host": "b\n", "opts": ""}) is True
    assert (tmp_path / "net" / "host").read_text() == "b\n"
    assert sorted(p.name for p in (tmp_path / "net").iterdir()) == ["host", "opts"]


# --- IPv6: who sends router advertisements ------------------------------------------------

SLAAC = "55555555-5555-5555-5555-555555555555"
STATELESS = "66666666-6666-6666-6666-666666666666"


def v6(subnet_id: str, cidr: str, mode: str | None, ra_mode: str | None = "same",
       **extra: Any) -> dict[str, Any]:
    """An IPv6 subnet with ``mode`` as its address mode and, unless told, its RA mode."""
    return subnet(subnet_id, cidr, cidr.split("/")[0] + "1", ipv6_address_mode=mode,
                  ipv6_ra_mode=mode if ra_mode == "same" else ra_mode, **extra)


def router_port(*ips: tuple[str, str]) -> dict[str, Any]:
    return port("r1", "fa:16:3e:00:00:99", *ips, device_owner="network:router_interface")


def ranges_and_ra(net: dict[str, Any]) -> list[str]:
    argv = dnsmasq.command(net, "ns-x", "/c", Settings())
    return [a for a in argv if a.startswith(("--dhcp-range", "--enable-ra", "--ra-param"))]


def test_without_a_router_dnsmasq_advertises_each_ra_mode_with_its_flags():
    net = network(v6(V6, "2001:db8::/64", "dhcpv6-stateful"),
                  v6(SLAAC, "2001:db8:1::/64", "slaac"),
                  v6(STATELESS, "2001:db8:2::/64", "dhcpv6-stateless"))
    assert ranges_and_ra(net) == [
        f"--dhcp-range=set:subnet-{V6},2001:db8::,static,64,86400s",  # M and O
        f"--dhcp-range=set:subnet-{SLAAC},2001:db8:1::,ra-only,64,86400s",  # A
        f"--dhcp-range=set:subnet-{STATELESS},2001:db8:2::,ra-stateless,64,86400s",  # A, O
        # the network's MTU; router lifetime 0: no default route via the DHCP namespace
        "--enable-ra", "--ra-param=ns-x,mtu:1450,30,0"]


def test_a_router_interface_on_the_subnet_leaves_the_ras_to_the_router():
    stateful, slaac = (v6(V6, "2001:db8::/64", "dhcpv6-stateful"),
                       v6(SLAAC, "2001:db8:1::/64", "slaac"))
    routed = network(stateful, slaac, ports=(router_port((V6, "2001:db8::1"),
                                                         (SLAAC, "2001:db8:1::1")),))
    assert ranges_and_ra(routed) == [f"--dhcp-range=set:subnet-{V6},2001:db8::,static,64,86400s"]
    # a router on one subnet only: dnsmasq still advertises the other
    half = network(stateful, slaac, ports=(router_port((V6, "2001:db8::1")),))
    assert ranges_and_ra(half) == [
        f"--dhcp-range=set:subnet-{V6},2001:db8::,static,64,86400s",
        f"--dhcp-range=set:subnet-{SLAAC},2001:db8:1::,ra-only,64,86400s",
        "--enable-ra", "--ra-param=ns-x,mtu:1450,30,0"]
    assert dnsmasq.command(routed, "ns-x", "/c", Settings()) != dnsmasq.command(
        network(stateful, slaac), "ns-x", "/c", Settings())  # a restart when a router comes


def test_only_an_address_mode_means_an_external_router_sends_the_ras():
    net = network(v6(V6, "2001:db8::/64", "dhcpv6-stateful", ra_mode=None),
                  v6(SLAAC, "2001:db8:1::/64", "slaac", ra_mode=None),
                  v6(STATELESS, "2001:db8:2::/64", "dhcpv6-stateless", ra_mode=None))
    assert ranges_and_ra(net) == [
        f"--dhcp-range=set:subnet-{V6},2001:db8::,static,64,86400s",
        f"--dhcp-range=set:subnet-{STATELESS},2001:db8:2::,static,64,86400s"]


def test_stateless_gets_options_not_addresses_slaac_gets_nothing_from_dhcp():
    stateless = v6(STATELESS, "2001:db8:2::/64", "dhcpv6-stateless",
                   dns_nameservers=["2001:db8::53"])
    slaac = v6(SLAAC, "2001:db8:1::/64", "slaac", dns_nameservers=["2001:db8::54"])
    net = network(stateless, slaac, ports=(port("p1", "fa:16:3e:00:00:01",
                                                (STATELESS, "2001:db8:2::5"),
                                                (SLAAC, "2001:db8:1::5")),))
    assert dnsmasq.hosts_file(net, Settings()) == ""
    assert dnsmasq.served_ports(net) == []
    assert lines(dnsmasq.opts_file(net)) == [
        f"tag:subnet-{STATELESS},option6:dns-server,[2001:db8::53]"]


def test_ipv6_without_modes_is_served_statefully_as_in_neutron():
    legacy = v6(V6, "2001:db8::/64", None)
    net = network(legacy, ports=(port("p1", "fa:16:3e:00:00:01", (V6, "2001:db8::5")),))
    assert ranges_and_ra(net) == [f"--dhcp-range=set:subnet-{V6},2001:db8::,static,64,86400s"]
    assert lines(dnsmasq.hosts_file(net, Settings())) == [
        "fa:16:3e:00:00:01,host-2001-db8--5.openstacklocal,[2001:db8::5]"]


def test_dual_stack_leases_are_counted_on_the_ranges_that_lease():
    net = network(subnet(V4, "10.0.0.0/24", "10.0.0.1"),
                  v6(SLAAC, "2001:db8:1::/64", "slaac"))
    argv = dnsmasq.command(net, "ns-x", "/c", Settings())
    assert "--dhcp-lease-max=256" in argv  # an ra-only range leases nothing
    assert f"--dhcp-range=set:subnet-{SLAAC},2001:db8:1::,ra-only,64,86400s" in argv
