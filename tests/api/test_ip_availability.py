"""network-ip-availability(-details): Neutron's counts of the addresses of each
network's subnets and of those in use, an admin's to read."""

from __future__ import annotations

import uuid

from tests.harness import ApiClient

PATH = "/v2.0/network-ip-availabilities"


def test_counts_per_subnet_and_network(admin: ApiClient, user: ApiClient, project: str):
    net = user.network(name=f"avail-{uuid.uuid4().hex[:6]}")
    v4 = user.subnet(net["id"], "10.44.0.0/24", name="four",
                     allocation_pools=[{"start": "10.44.0.10", "end": "10.44.0.19"},
                                       {"start": "10.44.0.100", "end": "10.44.0.109"}])
    v6 = user.subnet(net["id"], "fd44::/120", name="six")
    # 2**64 addresses: more than 64 bits count them, and the answer says so whole
    wide = user.subnet(net["id"], "fd45::/64", name="wide")
    user.port(net["id"], fixed_ips=[{"subnet_id": v4["id"], "ip_address": "10.44.0.15"},
                                    {"subnet_id": v6["id"]}])
    user.port(net["id"], fixed_ips=[{"subnet_id": v4["id"], "ip_address": "10.44.0.105"}])
    # an address outside the pools, as an admin may give one
    admin.port(net["id"], fixed_ips=[{"subnet_id": v4["id"], "ip_address": "10.44.0.200"}])
    resp = admin.get(f"{PATH}/{net['id']}")
    assert resp.status_code == 200, resp.text
    found = resp.json()["network_ip_availability"]
    assert (found["network_id"], found["network_name"], found["project_id"]) == (
        net["id"], net["name"], project)
    subnets = {s["subnet_name"]: s for s in found["subnet_ip_availability"]}
    four, six = subnets["four"], subnets["six"]
    assert (four["total_ips"], four["used_ips"], four["cidr"], four["ip_version"]) == (
        20, 3, "10.44.0.0/24", 4)
    assert four["ip_availability_details"] == {
        "total_ips_in_subnet": 254, "total_ips_in_allocation_pool": 20,
        "used_ips_in_subnet": 3, "used_ips_in_allocation_pool": 2}
    assert six["used_ips"] == 1 and six["subnet_id"] == v6["id"]
    assert six["ip_availability_details"]["total_ips_in_subnet"] == 256
    assert subnets["wide"]["total_ips"] == 2 ** 64 - 1 and wide["cidr"] == "fd45::/64"
    assert found["total_ips"] == four["total_ips"] + six["total_ips"] + 2 ** 64 - 1
    assert found["used_ips"] == 4
    assert found["ip_availability_details"]["used_ips_in_allocation_pool"] == (
        2 + six["ip_availability_details"]["used_ips_in_allocation_pool"])


def test_filters_and_fields(admin: ApiClient, user: ApiClient, project: str):
    net = user.network(name=f"f-{uuid.uuid4().hex[:6]}")
    user.subnet(net["id"], "10.45.0.0/24")
    bare = user.network(name=f"bare-{uuid.uuid4().hex[:6]}")
    listed = admin.get(PATH, params={"project_id": project}).json()["network_ip_availabilities"]
    by_id = {item["network_id"]: item for item in listed}
    assert set(by_id) == {net["id"], bare["id"]}
    # a network without subnets is there, with nothing to count
    assert (by_id[bare["id"]]["total_ips"], by_id[bare["id"]]["subnet_ip_availability"]) == (
        0, [])
    only_v6 = admin.get(PATH, params={"project_id": project, "ip_version": 6}).json()
    assert only_v6["network_ip_availabilities"] == []
    named = admin.get(PATH, params={"network_name": net["name"], "fields": "used_ips"}).json()
    assert named["network_ip_availabilities"] == [{"used_ips": 0}]
    huge = admin.get(PATH, params={"project_id": project, "ip_version": "9" * 30})
    assert huge.status_code == 200 and huge.json()["network_ip_availabilities"] == []
    resp = admin.get(PATH, params={"ip_version": "four"})
    assert resp.status_code == 400, resp.text
    resp = admin.get(PATH, params={"cidr": "10.45.0.0/24"})
    assert resp.status_code == 400, resp.text  # not a filter here


def test_an_admins_view(admin: ApiClient, user: ApiClient):
    net = user.network()
    assert user.get(PATH).json()["network_ip_availabilities"] == []
    assert user.get(f"{PATH}/{net['id']}").status_code == 404
    missing = admin.get(f"{PATH}/{uuid.uuid4()}")
    assert missing.status_code == 404
    assert missing.json()["NeutronError"]["type"] == "NetworkNotFound"
