"""The ndp_proxy L3 agent extension: what a router's sync data asks of its
namespace, and our ip6tables chains (pure; the namespace itself in
tests/functional/test_ndp_proxy_e2e.py)."""

from __future__ import annotations

from neutrino.agents.extensions.ndp_proxy import wanted
from neutrino.linux import ndp_proxy

GW = "0a1b2c3d-4e5f-4000-8000-000000000001"
QG = f"qg-{GW[:11]}"


def sync_data(**extra) -> dict:
    scoped = {"6": "scope-a", "4": None}
    return {
        "id": "r1", "enable_ndp_proxy": True,
        "gw_port": {"id": GW, "address_scopes": scoped},
        "_interfaces": [
            {"id": "p1", "address_scopes": scoped,
             "subnets": [{"cidr": "2001:db8:1::/64"}, {"cidr": "10.0.0.0/24"}]},
            {"id": "p2", "address_scopes": {"6": None, "4": None},
             "subnets": [{"cidr": "2001:db8:9::/64"}]},
        ],
        "_ndp_proxies": [{"id": "n1", "ip_address": "2001:db8:1::5", "port_id": "x",
                          "router_id": "r1"}],
        **extra}


def test_the_scoped_ipv6_subnets_and_the_addresses_are_wanted():
    assert wanted(sync_data()) == ndp_proxy.Spec(
        gateway=QG, addresses=("2001:db8:1::5",), cidrs=("2001:db8:1::/64",))


def test_disabled_or_without_a_gateway_nothing_is_wanted():
    assert wanted(sync_data(enable_ndp_proxy=False)) == ndp_proxy.Spec()
    assert wanted(sync_data(gw_port=None)) == ndp_proxy.Spec()


def test_chains_let_in_the_proxied_addresses_only():
    spec = ndp_proxy.Spec(QG, ("2001:db8:1::5",), ("2001:db8:1::/64",))
    assert ndp_proxy.chains(spec) == {
        ndp_proxy.TOP: [f"-A neutrino-ndp-FWD -d 2001:db8:1::/64 -i {QG} -j neutrino-ndp"],
        ndp_proxy.CHAIN: [f"-A neutrino-ndp -d 2001:db8:1::5/128 -i {QG} -j RETURN",
                          f"-A neutrino-ndp -i {QG} -j DROP"]}
    text = ndp_proxy.restore_text(ndp_proxy.chains(spec), {}, False)
    assert text is not None and "-I FORWARD 1 -j neutrino-ndp-FWD" in text
    assert ndp_proxy.restore_text(ndp_proxy.chains(spec), ndp_proxy.chains(spec), True) is None
    gone = ndp_proxy.restore_text({}, ndp_proxy.chains(spec), True)
    assert gone is not None and "-D FORWARD -j neutrino-ndp-FWD" in gone
    assert "-X neutrino-ndp\n" in gone

