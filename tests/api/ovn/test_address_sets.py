"""An address group is two address sets, as Neutron's OVN driver writes them
(``ag_<id>_ip4``, ``ag_<id>_ip6``): made with the group, following its
addresses, gone with it; a rule naming the group matches its set."""

from __future__ import annotations

from tests.harness import ApiClient
from tests.ovn import OvnCentral


def address_set(central: OvnCentral, name: str) -> list[str] | None:
    found = central.nbctl("--bare", "--columns=addresses", "find", "Address_Set",
                          f"name={name}")
    return None if not found.strip() else sorted(found.split())


def test_address_group_rules_match_its_address_sets(user: ApiClient, central: OvnCentral):
    resp = user.post("/v2.0/address-groups", json={"address_group": {
        "name": "ag", "addresses": ["10.7.0.0/24", "2001:db8:7::/64"]}})
    assert resp.status_code == 201, resp.text
    group = resp.json()["address_group"]
    name = "ag_" + group["id"].replace("-", "_")
    assert address_set(central, f"{name}_ip4") == ["10.7.0.0/24"]
    assert address_set(central, f"{name}_ip6") == ["2001:db8:7::/64"]
    resp = user.post("/v2.0/security-groups", json={"security_group": {"name": "with-ag"}})
    assert resp.status_code == 201, resp.text
    sg = resp.json()["security_group"]
    resp = user.post("/v2.0/security-group-rules", json={"security_group_rule": {
        "security_group_id": sg["id"], "direction": "ingress", "ethertype": "IPv4",
        "remote_address_group_id": group["id"]}})
    assert resp.status_code == 201, resp.text
    rule = resp.json()["security_group_rule"]
    port_group = "pg_" + sg["id"].replace("-", "_")
    assert f"ip4.src == ${name}_ip4" in central.nbctl("acl-list", port_group)
    resp = user.put(f"/v2.0/address-groups/{group['id']}/add_addresses",
                    json={"address_group": {"addresses": ["10.8.0.5/32"]}})
    assert resp.status_code == 200, resp.text
    assert address_set(central, f"{name}_ip4") == ["10.7.0.0/24", "10.8.0.5/32"]
    assert user.delete(f"/v2.0/security-group-rules/{rule['id']}").status_code == 204
    assert user.delete(f"/v2.0/address-groups/{group['id']}").status_code == 204
    assert address_set(central, f"{name}_ip4") is None
    assert address_set(central, f"{name}_ip6") is None
