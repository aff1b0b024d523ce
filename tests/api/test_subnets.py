"""Subnets over HTTP: IPAM defaults and validation, IPv6 modes, updates, in-use, sharing."""

import ipaddress

import pytest

from tests.harness import error_of, expect_error

SUBNET_KEYS = {
    "id", "name", "network_id", "tenant_id", "project_id", "ip_version", "subnetpool_id",
    "enable_dhcp", "ipv6_ra_mode", "ipv6_address_mode", "gateway_ip", "cidr",
    "allocation_pools", "host_routes", "dns_nameservers", "description", "tags",
    "created_at", "updated_at", "revision_number", "segment_id", "router:external",
    "service_types",
}


def _post(client, network_id: str, cidr: str | None, version: int | None = None, **attrs):
    body = {"network_id": network_id, **attrs}
    if cidr is not None:
        body["cidr"] = cidr
        body["ip_version"] = version or (6 if ":" in cidr else 4)
    elif version is not None:
        body["ip_version"] = version
    return client.post("/v2.0/subnets", json={"subnet": body})


def _invalid(resp, message: str) -> None:
    expect_error(resp, 400, "InvalidInput", f"Invalid input for operation: {message}.")


def _eui64(cidr: str, mac: str) -> str:
    octets = bytearray(int(x, 16) for x in mac.split(":"))
    octets[0] ^= 0x02
    iid = bytes(octets[:3]) + b"\xff\xfe" + bytes(octets[3:])
    net = ipaddress.ip_network(cidr)
    return str(net.network_address + int.from_bytes(iid, "big"))


@pytest.fixture
def net(user):
    return user.network()


# --- IPv4 defaults and gateway -------------------------------------------------------


def test_ipv4_defaults(user, net):
    subnet = user.subnet(net["id"], "10.0.0.0/24")
    assert set(subnet) == SUBNET_KEYS
    assert subnet["network_id"] == net["id"]
    assert subnet["project_id"] == subnet["tenant_id"] == user.project_id
    assert subnet["ip_version"] == 4 and subnet["cidr"] == "10.0.0.0/24"
    assert subnet["gateway_ip"] == "10.0.0.1"
    assert subnet["allocation_pools"] == [{"start": "10.0.0.2", "end": "10.0.0.254"}]
    assert subnet["dns_nameservers"] == [] and subnet["host_routes"] == []
    assert subnet["enable_dhcp"] is True
    assert subnet["ipv6_ra_mode"] is None and subnet["ipv6_address_mode"] is None
    assert subnet["subnetpool_id"] is None
    assert subnet["name"] == "" and subnet["description"] == "" and subnet["tags"] == []
    # nothing revises a new subnet in Neutron (unlike networks and ports, which start at 1)
    assert subnet["revision_number"] == 0
    assert user.show("subnets", subnet["id"]) == subnet


def test_no_gateway(user, net):
    subnet = user.subnet(net["id"], "10.0.0.0/24", gateway_ip=None)
    assert subnet["gateway_ip"] is None
    assert subnet["allocation_pools"] == [{"start": "10.0.0.1", "end": "10.0.0.254"}]


def test_explicit_gateway_splits_default_pool(user, net):
    subnet = user.subnet(net["id"], "10.0.0.0/24", gateway_ip="10.0.0.100")
    assert subnet["gateway_ip"] == "10.0.0.100"
    assert subnet["allocation_pools"] == [{"start": "10.0.0.1", "end": "10.0.0.99"},
                                          {"start": "10.0.0.101", "end": "10.0.0.254"}]
    assert user.show("subnets", subnet["id"])["allocation_pools"] == subnet["allocation_pools"]


def test_gateway_at_end_of_range(user, net):
    subnet = user.subnet(net["id"], "10.0.0.0/24", gateway_ip="10.0.0.254")
    assert subnet["allocation_pools"] == [{"start": "10.0.0.1", "end": "10.0.0.253"}]


def test_gateway_outside_cidr_is_allowed(user, net):
    subnet = user.subnet(net["id"], "10.0.0.0/24", gateway_ip="10.0.9.1")
    assert subnet["gateway_ip"] == "10.0.9.1"
    assert subnet["allocation_pools"] == [{"start": "10.0.0.1", "end": "10.0.0.254"}]


def test_gateway_on_network_or_broadcast_address(user, net):
    for gateway in ("10.0.0.0", "10.0.0.255"):
        _invalid(_post(user, net["id"], "10.0.0.0/24", gateway_ip=gateway),
                 "Gateway is not valid on subnet")


def test_gateway_of_other_ip_version(user, net):
    _invalid(_post(user, net["id"], "10.0.0.0/24", gateway_ip="2001:db8::1"),
             "gateway_ip '2001:db8::1' does not match the ip_version '4'")


def test_cidr_host_bits_are_normalised(user, net):
    subnet = user.subnet(net["id"], "10.0.0.77/24")
    assert subnet["cidr"] == "10.0.0.0/24"
    assert subnet["gateway_ip"] == "10.0.0.1"
    v6 = user.subnet(net["id"], "2001:DB8:0:0:0:0:0:5/64")
    assert v6["cidr"] == "2001:db8::/64"


def test_cidr_and_ip_version_mismatch(user, net):
    _invalid(_post(user, net["id"], "10.0.0.0/24", version=6),
             "cidr '10.0.0.0/24' does not match the ip_version '6'")
    _invalid(_post(user, net["id"], "2001:db8::/64", version=4),
             "cidr '2001:db8::/64' does not match the ip_version '4'")


def test_bad_cidr_and_version(user, net):
    resp = _post(user, net["id"], "10.0.0.0/33")
    expect_error(resp, 400, "InvalidInput",
           "Invalid input for operation: 10.0.0.0/33 is not in a CIDR format.")
    resp = _post(user, net["id"], "10.0.0.0/8", version=5)
    assert resp.status_code == 400 and "ip_version" in error_of(resp)["message"]
    resp = user.post("/v2.0/subnets", json={"subnet": {"network_id": net["id"],
                                                       "cidr": "10.0.0.0/24"}})
    expect_error(resp, 400, "HTTPBadRequest",
           "Failed to parse request. Required attribute 'ip_version' not specified")


def test_zero_prefix(user, net):
    _invalid(_post(user, net["id"], "0.0.0.0/0", enable_dhcp=False),
             "0 is not allowed as CIDR prefix length")
    _invalid(_post(user, net["id"], "0.0.0.0/0"),
             # Neutron's own sentence ends with a full stop, so the message has two
             "First IP '0.0.0.0' of network is not supported if enable_dhcp is True.")
    _invalid(_post(user, net["id"], "::/0"), "IPv6 subnet '::' is not supported")


def test_prefix_incompatible_with_dhcp(user, net):
    message = "Subnet has a prefix length that is incompatible with DHCP service enabled"
    _invalid(_post(user, net["id"], "10.0.0.0/31"), message)
    _invalid(_post(user, net["id"], "10.0.0.0/32"), message)
    _invalid(_post(user, net["id"], "2001:db8::/127"), message)
    subnet = user.subnet(net["id"], "10.0.0.0/31", enable_dhcp=False)
    assert subnet["enable_dhcp"] is False
    assert subnet["gateway_ip"] == "10.0.0.1"
    assert subnet["allocation_pools"] == [{"start": "10.0.0.0", "end": "10.0.0.0"}]


def test_multicast_and_loopback_with_dhcp(user, net):
    _invalid(_post(user, net["id"], "224.0.0.0/24"),
             "Multicast IP subnet is not supported if enable_dhcp is True")
    _invalid(_post(user, net["id"], "127.0.0.0/24"),
             "Loopback IP subnet is not supported if enable_dhcp is True")


def test_overlapping_subnets_on_one_network(user, net):
    user.subnet(net["id"], "10.0.0.0/24")
    _invalid(_post(user, net["id"], "10.0.0.128/25"),
             f"Requested subnet with cidr: 10.0.0.128/25 for network: {net['id']} overlaps "
             "with another subnet")
    _invalid(_post(user, net["id"], "10.0.0.0/16"),
             f"Requested subnet with cidr: 10.0.0.0/16 for network: {net['id']} overlaps "
             "with another subnet")
    # the same cidr on another network is fine (allow_overlapping_ips)
    assert user.subnet(user.network()["id"], "10.0.0.0/24")["cidr"] == "10.0.0.0/24"


def test_another_projects_private_network(user, other):
    # Neutron's policy check fails (the caller does not own the network) and the
    # caller could see the subnet it asked for, so it answers 403, not 404.
    private = other.network()
    expect_error(_post(user, private["id"], "10.0.0.0/24"), 403, "PolicyNotAuthorized",
           "create_subnet is disallowed by policy")


def test_unknown_network(user):
    missing = "0b1b7c3a-8f7e-4a55-9a3a-1c2d3e4f5a6b"
    expect_error(_post(user, missing, "10.0.0.0/24"), 404, "NetworkNotFound",
           f"Network {missing} could not be found.")


# --- allocation pools ------------------------------------------------------------------


def test_allocation_pools_valid(user, net):
    pools = [{"start": "10.0.0.50", "end": "10.0.0.59"},
             {"start": "10.0.0.10", "end": "10.0.0.19"}]
    subnet = user.subnet(net["id"], "10.0.0.0/24", allocation_pools=pools)
    assert sorted(subnet["allocation_pools"], key=lambda p: p["start"]) == [
        {"start": "10.0.0.10", "end": "10.0.0.19"}, {"start": "10.0.0.50", "end": "10.0.0.59"}]
    shown = user.show("subnets", subnet["id"])["allocation_pools"]
    assert sorted(shown, key=lambda p: p["start"]) == sorted(
        subnet["allocation_pools"], key=lambda p: p["start"])
    port = user.port(net["id"])
    address = ipaddress.ip_address(port["fixed_ips"][0]["ip_address"])
    assert any(ipaddress.ip_address(p["start"]) <= address <= ipaddress.ip_address(p["end"])
               for p in pools)


def test_allocation_pool_out_of_bounds(user, net):
    for start, end in (("10.0.0.0", "10.0.0.10"), ("10.0.0.200", "10.0.0.255"),
                       ("10.0.0.200", "10.0.1.5")):
        resp = _post(user, net["id"], "10.0.0.0/24",
                     allocation_pools=[{"start": start, "end": end}])
        expect_error(resp, 400, "OutOfBoundsAllocationPool",
               f"The allocation pool {start}-{end} spans beyond the subnet cidr 10.0.0.0/24.")


def test_allocation_pools_overlapping(user, net):
    resp = _post(user, net["id"], "10.0.0.0/24", allocation_pools=[
        {"start": "10.0.0.10", "end": "10.0.0.30"}, {"start": "10.0.0.20", "end": "10.0.0.40"}])
    expect_error(resp, 409, "OverlappingAllocationPools",
           "Found overlapping allocation pools: 10.0.0.10-10.0.0.30 10.0.0.20-10.0.0.40 for "
           "subnet 10.0.0.0/24.")


def test_gateway_inside_allocation_pool(user, net):
    resp = _post(user, net["id"], "10.0.0.0/24", gateway_ip="10.0.0.15",
                 allocation_pools=[{"start": "10.0.0.10", "end": "10.0.0.20"}])
    expect_error(resp, 409, "GatewayConflictWithAllocationPools",
           "Gateway ip 10.0.0.15 conflicts with allocation pool 10.0.0.10-10.0.0.20.")
    # the default gateway (.1) counts too
    resp = _post(user, net["id"], "10.0.0.0/24",
                 allocation_pools=[{"start": "10.0.0.1", "end": "10.0.0.20"}])
    expect_error(resp, 409, "GatewayConflictWithAllocationPools",
           "Gateway ip 10.0.0.1 conflicts with allocation pool 10.0.0.1-10.0.0.20.")


def test_allocation_pool_start_after_end(user, net):
    resp = _post(user, net["id"], "10.0.0.0/24",
                 allocation_pools=[{"start": "10.0.0.20", "end": "10.0.0.10"}])
    expect_error(resp, 400, "InvalidAllocationPool",
           "The allocation pool {'start': '10.0.0.20', 'end': '10.0.0.10'} is not valid.")
    resp = _post(user, net["id"], "10.0.0.0/24",
                 allocation_pools=[{"start": "2001:db8::2", "end": "2001:db8::9"}])
    expect_error(resp, 400, "InvalidAllocationPool",
           "The allocation pool 2001:db8::2-2001:db8::9 is not valid.")


def test_allocation_pool_malformed(user, net):
    resp = _post(user, net["id"], "10.0.0.0/24", allocation_pools=[{"start": "10.0.0.5"}])
    error = expect_error(resp, 400, "HTTPBadRequest")
    assert error["message"].startswith("Invalid input for allocation_pools. Reason: "
                                       "Validation of dictionary's keys failed.")
    resp = _post(user, net["id"], "10.0.0.0/24",
                 allocation_pools=[{"start": "10.0.0.5", "end": "10.0.0.300"}])
    expect_error(resp, 400, "HTTPBadRequest", "Invalid input for allocation_pools. Reason: "
                                        "'10.0.0.300' is not a valid IP address.")
    resp = _post(user, net["id"], "10.0.0.0/24", allocation_pools="10.0.0.5-10.0.0.9")
    expect_error(resp, 400, "HTTPBadRequest", "Invalid input for allocation_pools. Reason: "
                                        "Invalid data format for IP pool: "
                                        "'10.0.0.5-10.0.0.9'.")


# --- DNS servers and host routes ----------------------------------------------------


def test_dns_nameservers_keep_order(user, net):
    servers = ["10.9.9.9", "1.1.1.1", "8.8.8.8", "10.0.0.53"]
    subnet = user.subnet(net["id"], "10.0.0.0/24", dns_nameservers=servers)
    assert subnet["dns_nameservers"] == servers
    assert user.show("subnets", subnet["id"])["dns_nameservers"] == servers


def test_dns_nameservers_limit_and_checks(user, net):
    servers = [f"10.1.1.{i}" for i in range(1, 7)]
    expect_error(_post(user, net["id"], "10.0.0.0/24", dns_nameservers=servers), 400,
           "DNSNameServersExhausted",
           "Unable to complete operation for new subnet. The number of DNS nameservers "
           "exceeds the limit 5.")
    assert user.subnet(net["id"], "10.0.0.0/24", dns_nameservers=servers[:5])
    other_net = user.network()
    expect_error(_post(user, other_net["id"], "10.0.0.0/24",
                       dns_nameservers=["8.8.8.8", "8.8.8.8"]),
           400, "HTTPBadRequest",
           "Invalid input for dns_nameservers. Reason: Duplicate nameserver '8.8.8.8'.")
    expect_error(_post(user, other_net["id"], "10.0.0.0/24", dns_nameservers=["dns.example"]),
           400, "HTTPBadRequest",
           "Invalid input for dns_nameservers. Reason: 'dns.example' is not a valid "
           "nameserver. 'dns.example' is not a valid IP address.")
    _invalid(_post(user, other_net["id"], "10.0.0.0/24", dns_nameservers=["2001:db8::53"]),
             "dns_nameserver '2001:db8::53' does not match the ip_version '4'")


def test_host_routes(user, net):
    routes = [{"destination": "192.168.0.0/16", "nexthop": "10.0.0.5"},
              {"destination": "0.0.0.0/0", "nexthop": "10.0.0.6"}]
    subnet = user.subnet(net["id"], "10.0.0.0/24", host_routes=routes)
    key = lambda r: r["destination"]  # noqa: E731
    assert sorted(subnet["host_routes"], key=key) == sorted(routes, key=key)
    assert sorted(user.show("subnets", subnet["id"])["host_routes"], key=key) == sorted(
        routes, key=key)


def test_host_routes_limit_and_checks(user, net):
    routes = [{"destination": f"172.16.{i}.0/24", "nexthop": "10.0.0.5"} for i in range(21)]
    expect_error(_post(user, net["id"], "10.0.0.0/24", host_routes=routes), 400,
           "HostRoutesExhausted",
           "Unable to complete operation for new subnet. The number of host routes exceeds "
           "the limit 20.")
    assert len(user.subnet(net["id"], "10.0.0.0/24",
                           host_routes=routes[:20])["host_routes"]) == 20
    other_net = user.network()
    route = {"destination": "172.16.0.0/24", "nexthop": "10.0.0.5"}
    expect_error(_post(user, other_net["id"], "10.0.0.0/24", host_routes=[route, dict(route)]),
           400, "HTTPBadRequest",
           f"Invalid input for host_routes. Reason: Duplicate hostroute '{route}'.")
    expect_error(_post(user, other_net["id"], "10.0.0.0/24",
                 host_routes=[{"destination": "172.16.0.1/24", "nexthop": "10.0.0.5"}]),
           400, "HTTPBadRequest",
           "Invalid input for host_routes. Reason: '172.16.0.1/24' is not a valid CIDR.")
    _invalid(_post(user, other_net["id"], "10.0.0.0/24",
                   host_routes=[{"destination": "172.16.0.0/24", "nexthop": "2001:db8::1"}]),
             "nexthop '2001:db8::1' does not match the ip_version '4'")


# --- IPv6 ------------------------------------------------------------------------------


def test_segment_id_is_shown_null(user, net):
    """segment is loaded: a subnet shows segment_id (null: no subnet here is on a segment)."""
    subnet = user.subnet(net["id"], "10.3.0.0/24")
    assert subnet["segment_id"] is None
    assert user.show("subnets", subnet["id"])["segment_id"] is None
    listed = user.get("/v2.0/subnets", params={"network_id": net["id"],
                                               "fields": "segment_id"}).json()["subnets"]
    assert listed == [{"segment_id": None}]
    found = user.get("/v2.0/subnets", params={"network_id": net["id"],
                                              "segment_id": str(net["id"])})
    assert found.status_code == 200 and found.json()["subnets"] == []


def test_ipv6_defaults(user, net):
    subnet = user.subnet(net["id"], "2001:db8:1::/64")
    assert subnet["ip_version"] == 6
    # Neutron 29: the subnet-router anycast address, the prefix's first
    assert subnet["gateway_ip"] == "2001:db8:1::"
    assert subnet["allocation_pools"] == [
        {"start": "2001:db8:1::1", "end": "2001:db8:1:0:ffff:ffff:ffff:ffff"}]
    assert subnet["ipv6_ra_mode"] is None and subnet["ipv6_address_mode"] is None


@pytest.mark.parametrize("mode", ["slaac", "dhcpv6-stateless", "dhcpv6-stateful"])
def test_ipv6_modes(user, net, mode):
    subnet = user.subnet(net["id"], "2001:db8:2::/64", ipv6_ra_mode=mode,
                         ipv6_address_mode=mode)
    assert subnet["ipv6_ra_mode"] == subnet["ipv6_address_mode"] == mode
    only_address = user.subnet(net["id"], "2001:db8:3::/64", ipv6_address_mode=mode)
    assert only_address["ipv6_ra_mode"] is None
    assert only_address["ipv6_address_mode"] == mode
    shown = user.show("subnets", subnet["id"])
    assert shown["ipv6_ra_mode"] == shown["ipv6_address_mode"] == mode


def test_ipv6_mode_rules(user, net):
    _invalid(_post(user, net["id"], "10.0.0.0/24", ipv6_ra_mode="slaac"),
             "ipv6_ra_mode is not valid when ip_version is 4")
    _invalid(_post(user, net["id"], "10.0.0.0/24", ipv6_address_mode="slaac"),
             "ipv6_address_mode is not valid when ip_version is 4")
    _invalid(_post(user, net["id"], "2001:db8::/64", ipv6_ra_mode="slaac",
                   ipv6_address_mode="dhcpv6-stateful"),
             "ipv6_ra_mode set to 'slaac' with ipv6_address_mode set to 'dhcpv6-stateful' is "
             "not valid. If both attributes are set, they must be the same value")
    _invalid(_post(user, net["id"], "2001:db8::/80", ipv6_address_mode="slaac"),
             "Invalid CIDR 2001:db8::/80 for IPv6 address mode. OpenStack uses the EUI-64 "
             "address format, which requires the prefix to be /64")
    _invalid(_post(user, net["id"], "2001:db8::/64", ipv6_ra_mode="dhcpv6-stateless",
                   enable_dhcp=False),
             "ipv6_ra_mode or ipv6_address_mode cannot be set when enable_dhcp is set to False")
    resp = _post(user, net["id"], "2001:db8::/64", ipv6_address_mode="auto")
    expect_error(resp, 400, "HTTPBadRequest")
    # a stateful subnet may use any prefix length
    assert user.subnet(net["id"], "2001:db8::/80", ipv6_address_mode="dhcpv6-stateful")


def test_ipv6_modes_are_read_only(user, net):
    subnet = user.subnet(net["id"], "2001:db8::/64", ipv6_ra_mode="slaac",
                         ipv6_address_mode="slaac")
    for attr in ("ipv6_ra_mode", "ipv6_address_mode"):
        resp = user.put(f"/v2.0/subnets/{subnet['id']}",
                        json={"subnet": {attr: "dhcpv6-stateful"}})
        expect_error(resp, 400, "HTTPBadRequest", f"Cannot update read-only attribute {attr}")
    resp = user.put(f"/v2.0/subnets/{subnet['id']}", json={"subnet": {"enable_dhcp": False}})
    _invalid(resp, "Cannot disable enable_dhcp with ipv6 attributes set")
    for attr in ("cidr", "ip_version", "network_id"):
        resp = user.put(f"/v2.0/subnets/{subnet['id']}", json={"subnet": {attr: None}})
        expect_error(resp, 400, "HTTPBadRequest", f"Cannot update read-only attribute {attr}")


def test_slaac_subnet_added_later_addresses_existing_ports(user, admin, net):
    user.subnet(net["id"], "10.0.0.0/24")
    port = user.port(net["id"])
    router_port = admin.port(net["id"], device_owner="network:router_interface",
                             project_id=user.project_id)
    subnet = user.subnet(net["id"], "2001:db8:5::/64", ipv6_ra_mode="slaac",
                         ipv6_address_mode="slaac")
    ips = user.show("ports", port["id"])["fixed_ips"]
    assert len(ips) == 2
    assert {"subnet_id": subnet["id"],
            "ip_address": _eui64("2001:db8:5::/64", port["mac_address"])} in ips
    assert all(ip["subnet_id"] != subnet["id"]
               for ip in user.show("ports", router_port["id"])["fixed_ips"])
    # a stateful IPv6 subnet does not address existing ports
    user.subnet(net["id"], "2001:db8:6::/64", ipv6_address_mode="dhcpv6-stateful")
    assert len(user.show("ports", port["id"])["fixed_ips"]) == 2


def test_slaac_by_ra_mode_only(user, net):
    port = user.port(net["id"])
    subnet = user.subnet(net["id"], "2001:db8:7::/64", ipv6_ra_mode="slaac")
    assert user.show("ports", port["id"])["fixed_ips"] == [
        {"subnet_id": subnet["id"],
         "ip_address": _eui64("2001:db8:7::/64", port["mac_address"])}]


# --- delete and in-use --------------------------------------------------------------------


def test_subnet_in_use(user, net):
    subnet = user.subnet(net["id"], "10.0.0.0/24")
    port = user.port(net["id"])
    resp = user.delete(f"/v2.0/subnets/{subnet['id']}")
    expect_error(resp, 409, "SubnetInUse",
           f"Unable to complete operation on subnet {subnet['id']}: One or more ports have "
           "an IP allocation from this subnet.")
    assert user.delete(f"/v2.0/ports/{port['id']}").status_code == 204
    assert user.delete(f"/v2.0/subnets/{subnet['id']}").status_code == 204
    expect_error(user.get(f"/v2.0/subnets/{subnet['id']}"), 404, "SubnetNotFound",
           f"Subnet {subnet['id']} could not be found.")


def test_slaac_subnet_delete_frees_port_addresses(user, net):
    v4 = user.subnet(net["id"], "10.0.0.0/24")
    slaac = user.subnet(net["id"], "2001:db8::/64", ipv6_address_mode="slaac")
    port = user.port(net["id"])
    assert {ip["subnet_id"] for ip in port["fixed_ips"]} == {v4["id"], slaac["id"]}
    assert user.delete(f"/v2.0/subnets/{slaac['id']}").status_code == 204
    assert [ip["subnet_id"] for ip in user.show("ports", port["id"])["fixed_ips"]] == [v4["id"]]


def test_dhcp_port_does_not_block_subnet_delete(admin):
    net = admin.network()
    subnet = admin.subnet(net["id"], "10.0.0.0/24")
    dhcp = admin.port(net["id"], device_owner="network:dhcp")
    assert admin.delete(f"/v2.0/subnets/{subnet['id']}").status_code == 204
    assert admin.show("ports", dhcp["id"])["fixed_ips"] == []


def test_unknown_subnet(user):
    missing = "5d7a7f4e-2b51-4f6a-9a55-6b0c7e1f2a3b"
    for method in ("GET", "DELETE"):
        expect_error(user.request(method, f"/v2.0/subnets/{missing}"), 404, "SubnetNotFound",
               f"Subnet {missing} could not be found.")
    expect_error(user.put(f"/v2.0/subnets/{missing}", json={"subnet": {"name": "x"}}), 404,
           "SubnetNotFound")


# --- update --------------------------------------------------------------------------------


def test_update_gateway_pools_dns_routes(user, net):
    subnet = user.subnet(net["id"], "10.0.0.0/24", dns_nameservers=["1.1.1.1"])
    url = f"/v2.0/subnets/{subnet['id']}"
    resp = user.put(url, json={"subnet": {
        "allocation_pools": [{"start": "10.0.0.100", "end": "10.0.0.200"}],
        "gateway_ip": "10.0.0.254", "dns_nameservers": ["9.9.9.9", "8.8.4.4"],
        "host_routes": [{"destination": "10.5.0.0/16", "nexthop": "10.0.0.3"}],
        "name": "renamed"}})
    assert resp.status_code == 200, resp.text
    updated = resp.json()["subnet"]
    assert updated["gateway_ip"] == "10.0.0.254"
    assert updated["allocation_pools"] == [{"start": "10.0.0.100", "end": "10.0.0.200"}]
    assert updated["dns_nameservers"] == ["9.9.9.9", "8.8.4.4"]
    assert updated["host_routes"] == [{"destination": "10.5.0.0/16", "nexthop": "10.0.0.3"}]
    assert updated["name"] == "renamed"
    assert updated["revision_number"] == subnet["revision_number"] + 1
    assert user.show("subnets", subnet["id"]) == updated
    cleared = user.put(url, json={"subnet": {"dns_nameservers": [], "host_routes": [],
                                             "gateway_ip": None}}).json()["subnet"]
    assert cleared["dns_nameservers"] == [] and cleared["host_routes"] == []
    assert cleared["gateway_ip"] is None
    assert cleared["allocation_pools"] == updated["allocation_pools"]
    assert cleared["revision_number"] == subnet["revision_number"] + 2


def test_update_errors(user, net):
    subnet = user.subnet(net["id"], "10.0.0.0/24")
    url = f"/v2.0/subnets/{subnet['id']}"
    expect_error(user.put(url, json={"subnet": {"gateway_ip": "10.0.0.50"}}), 409,
           "GatewayConflictWithAllocationPools",
           "Gateway ip 10.0.0.50 conflicts with allocation pool 10.0.0.2-10.0.0.254.")
    expect_error(user.put(url, json={"subnet": {"allocation_pools": [
        {"start": "10.0.0.1", "end": "10.0.0.9"}]}}), 409, "GatewayConflictWithAllocationPools",
        "Gateway ip 10.0.0.1 conflicts with allocation pool 10.0.0.1-10.0.0.9.")
    expect_error(user.put(url, json={"subnet": {"allocation_pools": [
        {"start": "10.0.0.2", "end": "10.0.1.9"}]}}), 400, "OutOfBoundsAllocationPool")
    _invalid(user.put(url, json={"subnet": {"gateway_ip": "10.0.0.255"}}),
             "Gateway is not valid on subnet")
    expect_error(user.put(url, json={"subnet": {"dns_nameservers": [
        f"10.1.1.{i}" for i in range(6)]}}), 400, "DNSNameServersExhausted",
        f"Unable to complete operation for {subnet['id']}. The number of DNS nameservers "
        "exceeds the limit 5.")
    expect_error(user.put(url, json={"subnet": {"host_routes": [
        {"destination": f"172.16.{i}.0/24", "nexthop": "10.0.0.5"} for i in range(21)]}}),
        400, "HostRoutesExhausted",
        f"Unable to complete operation for {subnet['id']}. The number of host routes exceeds "
        "the limit 20.")
    shown = user.show("subnets", subnet["id"])
    assert shown["revision_number"] == subnet["revision_number"]
    assert shown["allocation_pools"] == subnet["allocation_pools"]


def test_gateway_held_by_a_router_cannot_move(admin, user, net):
    subnet = user.subnet(net["id"], "10.0.0.0/24")
    url = f"/v2.0/subnets/{subnet['id']}"
    router_port = admin.port(net["id"], device_owner="network:router_interface",
                             fixed_ips=[{"subnet_id": subnet["id"], "ip_address": "10.0.0.1"}])
    message = (f"Current gateway ip 10.0.0.1 already in use by port {router_port['id']}. "
               "Unable to update.")
    expect_error(user.put(url, json={"subnet": {"gateway_ip": "10.0.0.254"}}), 409,
           "GatewayIpInUse", message)
    expect_error(user.put(url, json={"subnet": {"gateway_ip": None}}), 409, "GatewayIpInUse",
           message)
    # naming the same gateway again is not a move
    assert user.put(url, json={"subnet": {"gateway_ip": "10.0.0.1"}}).status_code == 200
    assert admin.delete(f"/v2.0/ports/{router_port['id']}").status_code == 204
    # an ordinary port on the gateway address stops neither a move away nor back
    # (Neutron only guards router ports)
    user.port(net["id"], fixed_ips=[{"ip_address": "10.0.0.1"}])
    resp = user.put(url, json={"subnet": {"gateway_ip": None}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["subnet"]["gateway_ip"] is None
    resp = user.put(url, json={"subnet": {"gateway_ip": "10.0.0.1"}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["subnet"]["gateway_ip"] == "10.0.0.1"


def test_update_enable_dhcp(user, net):
    subnet = user.subnet(net["id"], "10.0.0.0/24")
    updated = user.put(f"/v2.0/subnets/{subnet['id']}",
                       json={"subnet": {"enable_dhcp": False}}).json()["subnet"]
    assert updated["enable_dhcp"] is False


# --- sharing and policy ----------------------------------------------------------------------


def test_subnet_of_shared_network_visible_to_others(admin, other):
    net = admin.network(shared=True)
    subnet = admin.subnet(net["id"], "10.0.0.0/24")
    assert other.show("subnets", subnet["id"])["cidr"] == "10.0.0.0/24"
    seen = {s["id"] for s in other.get("/v2.0/subnets").json()["subnets"]}
    assert subnet["id"] in seen
    private = admin.network()
    hidden = admin.subnet(private["id"], "10.0.0.0/24")
    expect_error(other.get(f"/v2.0/subnets/{hidden['id']}"), 404, "SubnetNotFound")
    assert hidden["id"] not in {s["id"] for s in other.get("/v2.0/subnets").json()["subnets"]}


def test_non_owner_cannot_create_subnet_on_shared_network(admin, other):
    net = admin.network(shared=True)
    resp = _post(other, net["id"], "10.0.0.0/24")
    expect_error(resp, 403, "PolicyNotAuthorized", "create_subnet is disallowed by policy")
    subnet = admin.subnet(net["id"], "10.0.0.0/24")
    resp = other.put(f"/v2.0/subnets/{subnet['id']}", json={"subnet": {"name": "x"}})
    expect_error(resp, 403, "PolicyNotAuthorized", "update_subnet is disallowed by policy")
    resp = other.delete(f"/v2.0/subnets/{subnet['id']}")
    expect_error(resp, 403, "PolicyNotAuthorized", "delete_subnet is disallowed by policy")


def test_subnets_say_whether_their_network_is_external(admin, user, project):
    """subnet-external-network: router:external on subnets, read and filtered."""
    ext = admin.network(**{"router:external": True})
    public = admin.subnet(ext["id"], "203.0.113.0/28")
    assert public["router:external"] is True
    inside = user.subnet(user.network()["id"], "10.48.0.0/24")
    assert inside["router:external"] is False
    assert user.show("subnets", inside["id"])["router:external"] is False
    external = admin.get("/v2.0/subnets", params={"router:external": "true",
                                                 "project_id": project}).json()["subnets"]
    assert [s["id"] for s in external] == [public["id"]]
    internal = admin.get("/v2.0/subnets", params={"router:external": "false",
                                                 "project_id": project}).json()["subnets"]
    assert [s["id"] for s in internal] == [inside["id"]]
    # it follows the network
    admin.put(f"/v2.0/networks/{ext['id']}", json={"network": {"router:external": False}})
    assert admin.show("subnets", public["id"])["router:external"] is False
    resp = user.put(f"/v2.0/subnets/{inside['id']}", json={"subnet": {"router:external": True}})
    assert resp.status_code == 400, resp.text
