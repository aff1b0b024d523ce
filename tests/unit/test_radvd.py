"""radvd's configuration for a router's interfaces (pure), and router_spec's part."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from neutrino.agents.l3 import router_spec
from neutrino.linux import radvd


def subnet(cidr: str, mode: str | None, dns: list[str] | None = None, id: str = "s6") -> dict:
    return {"id": id, "cidr": cidr, "gateway_ip": None, "ipv6_ra_mode": mode,
            "dns_nameservers": dns or []}


def conf(mode: str, mtu: int = 1450) -> str:
    iface = radvd.interface("qr-port0000001", mtu, [subnet("2001:db8:1::/64", mode)])
    assert iface is not None
    return radvd.render([iface], 3, 10)


def test_slaac():
    assert conf("slaac") == """interface qr-port0000001
{
    AdvSendAdvert on;
    MinRtrAdvInterval 3;
    MaxRtrAdvInterval 10;
    AdvLinkMTU 1450;
    prefix 2001:db8:1::/64
    {
        AdvOnLink on;
        AdvAutonomous on;
    };
};
"""


def test_dhcpv6_stateless():
    text = conf("dhcpv6-stateless")
    assert "AdvOtherConfigFlag on;" in text
    assert "AdvAutonomous on;" in text
    assert "AdvManagedFlag" not in text


def test_dhcpv6_stateful():
    text = conf("dhcpv6-stateful")
    assert "AdvManagedFlag on;" in text
    assert "AdvAutonomous off;" in text
    assert "AdvOtherConfigFlag" not in text
    assert "AdvAutonomous on;" not in text


def test_defaults_small_mtu_and_dns():
    iface = radvd.interface("qr-x", 1000, [
        subnet("2001:db8:1::/64", "slaac", ["2001:db8::53", "192.0.2.53", "2001:db8::54"]),
        subnet("2001:db8:2::/64", "dhcpv6-stateful", ["2001:db8::53", "2001:db8::55",
                                                      "2001:db8::56"], id="s7")])
    text = radvd.render([iface])
    assert "MinRtrAdvInterval 30;" in text and "MaxRtrAdvInterval 100;" in text
    assert "AdvLinkMTU" not in text  # below IPv6's minimum: not advertised
    # IPv6 servers only, no repeats, three at most
    assert "RDNSS 2001:db8::53 2001:db8::54 2001:db8::55 {};" in text
    assert text.count("prefix ") == 2 and "AdvManagedFlag on;" in text


def test_nothing_to_advertise():
    assert radvd.interface("qr-x", 1500, [subnet("10.0.0.0/24", None),
                                          subnet("2001:db8:1::/64", None)]) is None
    assert radvd.render([]) == ""


def test_router_spec_advertises_the_interfaces_ra_subnets():
    data = {"id": "r1", "_interfaces": [
        {"id": "ifport000001abc", "mac_address": "fa:16:3e:00:00:02", "mtu": 1450,
         "fixed_ips": [{"subnet_id": "s6", "ip_address": "2001:db8:1::1", "prefixlen": 64}],
         "subnets": [subnet("2001:db8:1::/64", "slaac")]},
        {"id": "ifport000002abc", "mac_address": "fa:16:3e:00:00:03", "mtu": 1450,
         "fixed_ips": [{"subnet_id": "s4", "ip_address": "10.2.0.1", "prefixlen": 24}],
         "subnets": [subnet("10.2.0.0/24", None, id="s4")]}]}
    assert router_spec(data).advertise == (
        radvd.Interface("qr-ifport00000", 1450, (("2001:db8:1::/64", "slaac"),)),)


@pytest.mark.skipif(shutil.which("radvd") is None, reason="no radvd")
@pytest.mark.parametrize("mode", radvd.RA_MODES)
def test_radvd_accepts_it(tmp_path, mode):
    path = tmp_path / "radvd.conf"
    path.write_text(conf(mode))
    done = subprocess.run(["radvd", "-c", "-C", str(path), "-m", "stderr"],
                          capture_output=True, text=True, timeout=10)
    assert done.returncode == 0, done.stderr
