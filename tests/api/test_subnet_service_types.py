"""subnet-service-types: a subnet gives its addresses to the ports of chosen
device owners; ports of other owners take theirs from the untyped subnets."""

from __future__ import annotations

import pytest

from tests.harness import ApiClient, expect_error


def subnet_ids(port: dict) -> set[str]:
    return {ip["subnet_id"] for ip in port["fixed_ips"]}


def test_ports_take_addresses_from_the_subnets_for_their_owner(admin: ApiClient):
    net = admin.network()
    nova = admin.subnet(net["id"], "10.88.1.0/24", service_types=["compute:nova"])
    anyone = admin.subnet(net["id"], "10.88.2.0/24")
    assert nova["service_types"] == ["compute:nova"]
    assert admin.show("subnets", anyone["id"])["service_types"] == []
    assert subnet_ids(admin.port(net["id"], device_owner="compute:nova")) == {nova["id"]}
    assert subnet_ids(admin.port(net["id"], device_owner="compute:az1")) == {anyone["id"]}
    assert subnet_ids(admin.port(net["id"])) == {anyone["id"]}
    # a subnet not for the port's owner is not its to ask for
    resp = admin.post("/v2.0/ports", json={"port": {
        "network_id": net["id"], "fixed_ips": [{"subnet_id": nova["id"]}]}})
    expect_error(resp, 400, "InvalidInput")
    # types change; the next port follows
    resp = admin.put(f"/v2.0/subnets/{nova['id']}", json={"subnet": {
        "service_types": ["compute:nova", "network:dhcp"]}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["subnet"]["service_types"] == ["compute:nova", "network:dhcp"]
    assert subnet_ids(admin.port(net["id"], device_owner="network:dhcp")) == {nova["id"]}


def test_a_network_of_typed_subnets_only(admin: ApiClient):
    net = admin.network()
    admin.subnet(net["id"], "10.89.1.0/24", service_types=["network:floatingip"])
    resp = admin.post("/v2.0/ports", json={"port": {"network_id": net["id"]}})
    expect_error(resp, 409, "IpAddressGenerationFailureNoMatchingSubnet",
                 f"No valid service subnet for the given device owner, network {net['id']}, "
                 "service type .")


@pytest.mark.parametrize("value, type_", [
    (["nova"], "InvalidSubnetServiceType"),
    ([7], "InvalidInputSubnetServiceType"),
    ("compute:nova", "HTTPBadRequest"),
])
def test_bad_service_types(admin: ApiClient, value, type_: str):
    net = admin.network()
    resp = admin.post("/v2.0/subnets", json={"subnet": {
        "network_id": net["id"], "ip_version": 4, "cidr": "10.87.0.0/24",
        "service_types": value}})
    expect_error(resp, 400, type_)
