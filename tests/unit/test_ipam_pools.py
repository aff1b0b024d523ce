"""Pure address arithmetic (neutrino.ipam.pools) and attribute validators, no server."""

import ipaddress

import pytest

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.ipam import pools as P

NET24 = ipaddress.ip_network("10.0.0.0/24")
NET64 = ipaddress.ip_network("2001:db8::/64")


def ip(text: str) -> int:
    return int(ipaddress.ip_address(text))


def rng(first: str, last: str) -> tuple[int, int]:
    return ip(first), ip(last)


# --- pools ---------------------------------------------------------------------------


@pytest.mark.parametrize("cidr, first, last", [
    ("10.0.0.0/24", "10.0.0.1", "10.0.0.254"),
    ("10.0.0.0/30", "10.0.0.1", "10.0.0.2"),
    ("10.0.0.0/31", "10.0.0.0", "10.0.0.1"),
    ("10.0.0.7/32", "10.0.0.7", "10.0.0.7"),
    ("2001:db8::/64", "2001:db8::1", "2001:db8::ffff:ffff:ffff:ffff"),
    ("2001:db8::/127", "2001:db8::1", "2001:db8::1"),
])
def test_host_range(cidr, first, last):
    assert P.host_range(ipaddress.ip_network(cidr)) == rng(first, last)


def test_default_pools_around_the_gateway():
    assert P.default_pools(NET24, "10.0.0.1") == [rng("10.0.0.2", "10.0.0.254")]
    assert P.default_pools(NET24, "10.0.0.254") == [rng("10.0.0.1", "10.0.0.253")]
    assert P.default_pools(NET24, "10.0.0.100") == [rng("10.0.0.1", "10.0.0.99"),
                                                    rng("10.0.0.101", "10.0.0.254")]
    assert P.default_pools(NET24, None) == [rng("10.0.0.1", "10.0.0.254")]
    assert P.default_pools(NET24, "10.0.1.1") == [rng("10.0.0.1", "10.0.0.254")]
    assert P.default_pools(NET64, "2001:db8::1") == [
        rng("2001:db8::2", "2001:db8::ffff:ffff:ffff:ffff")]
    # a /30 with its gateway keeps one address; a /32 keeps its only one
    assert P.default_pools(ipaddress.ip_network("10.0.0.0/30"), "10.0.0.1") == [
        rng("10.0.0.2", "10.0.0.2")]
    assert P.default_pools(ipaddress.ip_network("10.0.0.8/32"), "10.0.0.9") == [
        rng("10.0.0.8", "10.0.0.8")]
    # the only address of a pool, taken by the gateway, leaves no pool
    assert P.default_pools(ipaddress.ip_network("2001:db8::/127"), "2001:db8::1") == []


def test_subtract():
    assert P.subtract([(1, 10), (20, 30)], 20) == [(1, 10), (21, 30)]
    assert P.subtract([(1, 10)], 5) == [(1, 4), (6, 10)]
    assert P.subtract([(5, 5)], 5) == []
    assert P.subtract([(1, 10)], 11) == [(1, 10)]


def test_text_and_size():
    assert P.to_text(4, ip("10.0.0.9")) == "10.0.0.9"
    assert P.to_text(6, 1) == "::1"
    assert P.to_text(6, ip("2001:db8:1:0:ffff::1")) == "2001:db8:1:0:ffff::1"
    assert P.as_dicts(4, [rng("10.0.0.2", "10.0.0.9")]) == [
        {"start": "10.0.0.2", "end": "10.0.0.9"}]
    assert P.size([(1, 10), (20, 20)]) == 11
    assert P.size([]) == 0


def test_parse_pools_valid_in_request_order():
    pools = [{"start": "10.0.0.50", "end": "10.0.0.60"}, {"start": "10.0.0.1", "end": "10.0.0.9"}]
    assert P.parse_pools(NET24, pools, "10.0.0.254") == [rng("10.0.0.50", "10.0.0.60"),
                                                          rng("10.0.0.1", "10.0.0.9")]
    assert P.parse_pools(NET24, [], "10.0.0.1") == []
    assert P.parse_pools(NET24, [{"start": "10.0.0.1", "end": "10.0.0.254"}], None) == [
        rng("10.0.0.1", "10.0.0.254")]


@pytest.mark.parametrize("net, start, end", [
    (NET24, "10.0.0.0", "10.0.0.10"),        # the network address
    (NET24, "10.0.0.10", "10.0.0.255"),      # the broadcast address
    (NET24, "10.0.0.10", "10.0.1.1"),        # beyond the cidr
    (NET24, "9.255.255.255", "10.0.0.3"),    # before the cidr
    (NET64, "2001:db8::", "2001:db8::9"),    # the subnet-router anycast address
])
def test_parse_pools_out_of_bounds(net, start, end):
    with pytest.raises(P.OutOfBoundsAllocationPool) as caught:
        P.parse_pools(net, [{"start": start, "end": end}], None)
    assert caught.value.status == 400
    assert str(caught.value) == (f"The allocation pool {start}-{end} spans beyond the subnet "
                                 f"cidr {net}.")


def test_parse_pools_whole_range_of_small_networks():
    net31 = ipaddress.ip_network("10.0.0.0/31")
    assert P.parse_pools(net31, [{"start": "10.0.0.0", "end": "10.0.0.1"}], None) == [
        rng("10.0.0.0", "10.0.0.1")]
    assert P.parse_pools(NET64, [{"start": "2001:db8::1",
                                  "end": "2001:db8::ffff:ffff:ffff:ffff"}], None)


def test_parse_pools_invalid():
    with pytest.raises(P.InvalidAllocationPool) as caught:
        P.parse_pools(NET24, [{"start": "10.0.0.9", "end": "10.0.0.2"}], None)
    assert str(caught.value) == ("The allocation pool {'start': '10.0.0.9', 'end': '10.0.0.2'} "
                                 "is not valid.")
    assert caught.value.status == 400
    with pytest.raises(P.InvalidAllocationPool) as caught:
        P.parse_pools(NET24, [{"start": "2001:db8::2", "end": "2001:db8::3"}], None)
    assert str(caught.value) == "The allocation pool 2001:db8::2-2001:db8::3 is not valid."
    with pytest.raises(P.InvalidAllocationPool):
        P.parse_pools(NET24, [{"start": "10.0.0.2", "end": "2001:db8::3"}], None)


def test_parse_pools_overlapping_names_the_pair_in_request_order():
    pools = [{"start": "10.0.0.100", "end": "10.0.0.120"},
             {"start": "10.0.0.2", "end": "10.0.0.9"},
             {"start": "10.0.0.5", "end": "10.0.0.110"}]
    with pytest.raises(P.OverlappingAllocationPools) as caught:
        P.parse_pools(NET24, pools, None)
    assert caught.value.status == 409
    assert str(caught.value) == ("Found overlapping allocation pools: 10.0.0.100-10.0.0.120 "
                                 "10.0.0.5-10.0.0.110 for subnet 10.0.0.0/24.")
    # touching is not overlapping
    assert len(P.parse_pools(NET24, [{"start": "10.0.0.2", "end": "10.0.0.9"},
                                     {"start": "10.0.0.10", "end": "10.0.0.20"}], None)) == 2
    # a single-address pool inside another overlaps
    with pytest.raises(P.OverlappingAllocationPools):
        P.parse_pools(NET24, [{"start": "10.0.0.2", "end": "10.0.0.9"},
                              {"start": "10.0.0.9", "end": "10.0.0.9"}], None)


def test_gateway_conflicts():
    pools = [{"start": "10.0.0.2", "end": "10.0.0.9"}, {"start": "10.0.0.20", "end": "10.0.0.29"}]
    with pytest.raises(P.GatewayConflictWithAllocationPools) as caught:
        P.parse_pools(NET24, pools, "10.0.0.20")
    assert caught.value.status == 409
    assert str(caught.value) == ("Gateway ip 10.0.0.20 conflicts with allocation pool "
                                 "10.0.0.20-10.0.0.29.")
    assert P.parse_pools(NET24, pools, "10.0.0.10")
    P.check_gateway(4, [rng("10.0.0.2", "10.0.0.9")], "10.0.0.1")
    with pytest.raises(P.GatewayConflictWithAllocationPools):
        P.check_gateway(6, [rng("2001:db8::2", "2001:db8::9")], "2001:db8::9")


# --- validators and converters -------------------------------------------------------------


@pytest.mark.parametrize("value, expected", [
    (True, True), (False, False), (1, True), (0, False), ("true", True), ("False", False),
    ("1", True), ("0", False), (" yes ", True), ("off", False),
])
def test_to_boolean(value, expected):
    assert v.to_boolean(value) is expected


@pytest.mark.parametrize("value", ["maybe", 2, None, 1.0, []])
def test_to_boolean_refuses(value):
    with pytest.raises(exc.InvalidInput) as caught:
        v.to_boolean(value)
    assert str(caught.value) == (f"Invalid input for operation: '{value}' cannot be converted "
                                 "to boolean.")


def test_to_int():
    assert v.to_int(7) == 7 and v.to_int(" 42 ") == 42 and v.to_int("-1") == -1
    for bad in ("x", True, 1.5, None):
        with pytest.raises(exc.InvalidInput):
            v.to_int(bad)
    assert v.to_int_or_none(None) is None


@pytest.mark.parametrize("value", ["10.0.0.1", "0.0.0.0", "255.255.255.255", "::1",
                                   "2001:db8::1", "2001:DB8::A", "::ffff:10.0.0.1"])
def test_ip_address_valid(value):
    assert v.ip_address(value) is None


@pytest.mark.parametrize("value, message", [
    ("10.0.0", "'10.0.0' is not a valid IP address"),
    ("10.0.0.256", "'10.0.0.256' is not a valid IP address"),
    ("1", "'1' is not a valid IP address"),
    ("10.0.0.1 ", "'10.0.0.1 ' is not a valid IP address"),
    ("2001:db8::g", "'2001:db8::g' is not a valid IP address"),
    (None, "'None' is not a valid IP address"),
    (10, "'10' is not a valid IP address"),
    ("fe80::1%eth0", "'fe80::1%eth0' is not a valid IP address"),
    ("1.2.3.\u0664", "'1.2.3.\u0664' is not a valid IP address"),
    ("010.0.0.1", "'010.0.0.1' is not an accepted IP address, '10.0.0.1' is recommended"),
])
def test_ip_address_invalid(value, message):
    assert v.ip_address(value) == message


def test_canonical_ip():
    assert v.canonical_ip("2001:DB8:0:0::1") == "2001:db8::1"
    assert v.canonical_ip("10.0.0.1") == "10.0.0.1"
    assert v.canonical_ip("junk") == "junk"
    assert v.canonical_ip(None) is None


def test_subnet_cidr():
    assert v.subnet_cidr("10.0.0.0/24") is None
    assert v.subnet_cidr("10.0.0.7/24") is None  # host bits are normalised later
    assert v.subnet_cidr("2001:db8::/64") is None
    assert v.subnet_cidr("10.0.0.0") == "'10.0.0.0' is not a valid IP subnet"
    assert v.subnet_cidr("10.0.0.0/33") == "'10.0.0.0/33' is not a valid IP subnet"
    assert v.subnet_cidr(None) == "'None' is not a valid IP subnet"
    assert v.subnet_cidr_or_none(None) is None
    assert "10.0/8" in v.subnet_cidr("10.0/8")


def test_subnet_cidr_list():
    assert v.subnet_cidr_list(["10.0.0.0/8", "2001:db8::/32"]) is None
    assert v.subnet_cidr_list("10.0.0.0/8") == "'10.0.0.0/8' is not a list"
    assert v.subnet_cidr_list(["10.0.0.0/8", "x"]) == "'x' is not a valid IP subnet"
    assert v.subnet_cidr_list(["10.0.0.0/8", "10.1.0.0/16", "10.0.0.0/8"]) == (
        "Duplicate items in the list: '10.0.0.0/8'")


def test_route_cidr():
    assert v.route_cidr("0.0.0.0/0") is None
    assert v.route_cidr("10.1.0.0/16") is None
    assert v.route_cidr("10.1.0.1/16") == "'10.1.0.1/16' is not a valid CIDR"
    assert v.route_cidr("10.1.0.1") == "'10.1.0.1' is not a valid CIDR"
    assert v.route_cidr("127.0.0.0/8") == "'127.0.0.0/8' is not a routable CIDR"


def test_mac_address_and_canonical_mac():
    assert v.mac_address("fa:16:3e:00:00:01") is None
    assert v.mac_address("FA-16-3E-00-00-01") is None
    assert v.mac_address("00:00:00:00:00:00") == "'00:00:00:00:00:00' is not a valid MAC address"
    assert v.mac_address("fa:16:3e:00:00") == "'fa:16:3e:00:00' is not a valid MAC address"
    assert v.canonical_mac("FA-16-3E-0A-0B-0C") == "fa:16:3e:0a:0b:0c"
    # what is not a MAC is left as it is for the validator to name
    assert v.canonical_mac("Not-A-Mac") == "Not-A-Mac"
    assert v.canonical_mac(5) == 5


def test_nameservers():
    assert v.nameservers([]) is None
    assert v.nameservers(["8.8.8.8", "2001:4860:4860::8888"]) is None
    assert v.nameservers("8.8.8.8") == "Invalid data format for nameserver: '8.8.8.8'"
    assert v.nameservers(["8.8.8.8", "8.8.8.8"]) == "Duplicate nameserver '8.8.8.8'"
    assert v.nameservers(["dns"]) == ("'dns' is not a valid nameserver. 'dns' is not a valid "
                                      "IP address")


def test_hostroutes():
    route = {"destination": "10.1.0.0/16", "nexthop": "10.0.0.1"}
    assert v.hostroutes([route]) is None
    assert v.hostroutes(route) == f"Invalid data format for hostroute: '{route}'"
    assert v.hostroutes([route, dict(route)]) == f"Duplicate hostroute '{route}'"
    assert v.hostroutes([{"destination": "10.1.0.0/16"}]).startswith(
        "Validation of dictionary's keys failed.")
    assert v.hostroutes([{**route, "extra": 1}]).startswith(
        "Validation of dictionary's keys failed.")
    assert v.hostroutes(["x"]) == ("Invalid input. 'x' must be a dictionary with keys: "
                                   "['destination', 'nexthop']")
    assert v.hostroutes([{**route, "nexthop": "10.0.0"}]) == "'10.0.0' is not a valid IP address"
    assert v.hostroutes([{**route, "destination": "10.1.0.5/16"}]) == (
        "'10.1.0.5/16' is not a valid CIDR")


def test_ip_pools():
    pool = {"start": "10.0.0.2", "end": "10.0.0.9"}
    assert v.ip_pools([pool]) is None
    assert v.ip_pools([]) is None
    assert v.ip_pools(pool) == f"Invalid data format for IP pool: '{pool}'"
    assert v.ip_pools([{"start": "10.0.0.2"}]).startswith(
        "Validation of dictionary's keys failed.")
    assert v.ip_pools([{**pool, "end": "10.0.0.x"}]) == "'10.0.0.x' is not a valid IP address"
    assert v.canonical_pools(None) == []
    assert v.canonical_pools([{"start": "2001:DB8::2", "end": "2001:db8:0::9"}]) == [
        {"start": "2001:db8::2", "end": "2001:db8::9"}]


def test_fixed_ips():
    subnet = "4b1f6a3e-8c1d-4e0f-9a2b-3c4d5e6f7a8b"
    assert v.fixed_ips([]) is None
    assert v.fixed_ips([{"subnet_id": subnet}, {"subnet_id": subnet},
                        {"ip_address": "10.0.0.5"}]) is None
    assert v.fixed_ips({"subnet_id": subnet}) == (
        f"Invalid data format for fixed IP: '{ {'subnet_id': subnet} }'")
    assert v.fixed_ips(["10.0.0.5"]) == "Invalid data format for fixed IP: '10.0.0.5'"
    assert v.fixed_ips([{"ip_address": "10.0.0.5"}, {"ip_address": "10.0.0.5"}]) == (
        "Duplicate IP address '10.0.0.5'")
    assert v.fixed_ips([{"ip_address": "10.0.0"}]) == "'10.0.0' is not a valid IP address"
    assert v.fixed_ips([{"subnet_id": "nope"}]) == "'nope' is not a valid UUID"


def test_names_and_numbers():
    check = v.not_empty_string(5)
    assert check("pool") is None
    assert check("") == "'' Blank strings are not permitted"
    assert check("  ") == "'  ' Blank strings are not permitted"
    assert check("toolong") == "'toolong' exceeds maximum length of 5"
    assert check(3) == "'3' is not a valid string"
    assert v.non_negative(0) is None
    assert v.non_negative(-1) == "'-1' should be non-negative"
    assert v.non_negative("1") == "'1' is not an integer"
    assert v.non_negative_or_none(None) is None


def test_uuid():
    assert v.uuid("4b1f6a3e-8c1d-4e0f-9a2b-3c4d5e6f7a8b") is None
    assert v.uuid("4b1f6a3e8c1d4e0f9a2b3c4d5e6f7a8b") is None
    assert v.uuid("4b1f6a3e-8c1d-4e0f-9a2b") == "'4b1f6a3e-8c1d-4e0f-9a2b' is not a valid UUID"
    assert v.uuid(None) == "'None' is not a valid UUID"
    assert v.uuid_or_none(None) is None
