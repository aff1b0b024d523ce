"""EUI-64 arithmetic (neutrino.addresses), shared by IPAM and the firewalls."""

import ipaddress

import pytest

from neutrino.addresses import eui64, link_local


@pytest.mark.parametrize("mac, cidr, expected", [
    ("fa:16:3e:12:34:56", "2001:db8::/64", "2001:db8::f816:3eff:fe12:3456"),
    ("00:11:22:33:44:55", "2001:db8:1:2::/64", "2001:db8:1:2:211:22ff:fe33:4455"),
    ("02:00:00:00:00:01", "fd00::/64", "fd00::ff:fe00:1"),
])
def test_eui64(mac, cidr, expected):
    assert eui64(ipaddress.ip_network(cidr), mac) == expected


@pytest.mark.parametrize("mac, expected", [
    ("fa:16:3e:12:34:56", "fe80::f816:3eff:fe12:3456"),
    ("FA:16:3E:AB:CD:EF", "fe80::f816:3eff:feab:cdef"),
    ("00:00:00:00:00:00", "fe80::200:ff:fe00:0"),
])
def test_link_local(mac, expected):
    assert link_local(mac) == ipaddress.IPv6Address(expected)
