"""Ports over HTTP: MAC and fixed IP allocation, updates, visibility and policy."""

import ipaddress
import re

import pytest

from tests.harness import expect_error

PORT_KEYS = {
    "id", "name", "network_id", "tenant_id", "project_id", "mac_address", "admin_state_up",
    "status", "device_id", "device_owner", "fixed_ips", "description", "tags", "created_at",
    "updated_at", "revision_number", "binding:vnic_type",  # the other binding:* are admin-only
    "port_security_enabled", "allowed_address_pairs", "extra_dhcp_opts", "security_groups",
}
BASE_MAC = re.compile(r"^fa:16:3e(:[0-9a-f]{2}){3}$")


def _post(client, network_id: str, **attrs):
    return client.post("/v2.0/ports", json={"port": {"network_id": network_id, **attrs}})


def _put(client, port_id: str, **attrs):
    return client.put(f"/v2.0/ports/{port_id}", json={"port": attrs})


def _eui64(cidr: str, mac: str) -> str:
    octets = bytearray(int(x, 16) for x in mac.split(":"))
    octets[0] ^= 0x02
    iid = bytes(octets[:3]) + b"\xff\xfe" + bytes(octets[3:])
    return str(ipaddress.ip_network(cidr).network_address + int.from_bytes(iid, "big"))


def _ips(port) -> list[tuple[str, str]]:
    return sorted((ip["subnet_id"], ip["ip_address"]) for ip in port["fixed_ips"])


def _in(address: str, cidr: str) -> bool:
    return ipaddress.ip_address(address) in ipaddress.ip_network(cidr)


@pytest.fixture
def net(user):
    return user.network()


@pytest.fixture
def v4(user, net):
    return user.subnet(net["id"], "10.0.0.0/24")


# --- create ----------------------------------------------------------------------------


def test_defaults_and_one_ipv4_address(user, net, v4):
    port = user.port(net["id"])
    assert set(port) == PORT_KEYS
    assert port["network_id"] == net["id"]
    assert port["project_id"] == port["tenant_id"] == user.project_id
    assert port["status"] == "DOWN" and port["admin_state_up"] is True
    assert port["device_id"] == "" and port["device_owner"] == ""
    assert port["name"] == "" and port["description"] == "" and port["tags"] == []
    assert port["revision_number"] == 1
    assert BASE_MAC.match(port["mac_address"]), port["mac_address"]
    assert len(port["fixed_ips"]) == 1
    ip = port["fixed_ips"][0]
    assert ip["subnet_id"] == v4["id"]
    assert 2 <= int(ipaddress.ip_address(ip["ip_address"]).packed[-1]) <= 254
    assert _in(ip["ip_address"], "10.0.0.0/24")
    assert user.show("ports", port["id"]) == port


def test_default_allocation_with_ipv6_subnets(user, net, v4):
    v4b = user.subnet(net["id"], "10.0.1.0/24")
    slaac = user.subnet(net["id"], "2001:db8:1::/64", ipv6_ra_mode="slaac",
                        ipv6_address_mode="slaac")
    stateless = user.subnet(net["id"], "2001:db8:2::/64",
                            ipv6_address_mode="dhcpv6-stateless")
    stateful = user.subnet(net["id"], "2001:db8:3::/64", ipv6_address_mode="dhcpv6-stateful")
    port = user.port(net["id"])
    by_subnet = {ip["subnet_id"]: ip["ip_address"] for ip in port["fixed_ips"]}
    assert len(port["fixed_ips"]) == 4
    # one IPv4 address (from either subnet), one stateful v6, one per auto-address subnet
    assert len({v4["id"], v4b["id"]} & set(by_subnet)) == 1
    assert by_subnet[slaac["id"]] == _eui64("2001:db8:1::/64", port["mac_address"])
    assert by_subnet[stateless["id"]] == _eui64("2001:db8:2::/64", port["mac_address"])
    assert _in(by_subnet[stateful["id"]], "2001:db8:3::/64")
    assert by_subnet[stateful["id"]] != "2001:db8:3::1"


def test_no_subnets_no_addresses(user, net):
    assert user.port(net["id"])["fixed_ips"] == []
    resp = _post(user, net["id"], fixed_ips=[{"ip_address": "10.0.0.5"}])
    error = expect_error(resp, 400, "InvalidInput")
    assert error["message"] == ("Invalid input for operation: IP allocation requires subnets "
                                "for network.")


def test_generated_macs_differ(user, net):
    macs = {user.port(net["id"])["mac_address"] for _ in range(5)}
    assert len(macs) == 5
    assert all(BASE_MAC.match(m) for m in macs)


def test_explicit_mac_and_mac_in_use(user, net):
    port = user.port(net["id"], mac_address="FA:16:3E:0A:0B:0C")
    assert port["mac_address"] == "fa:16:3e:0a:0b:0c"
    resp = _post(user, net["id"], mac_address="fa:16:3e:0a:0b:0c")
    expect_error(resp, 409, "MacAddressInUse",
           f"Unable to complete operation for network {net['id']}. The mac address "
           "fa:16:3e:0a:0b:0c is in use.")
    # the same MAC on another network is fine
    assert user.port(user.network()["id"], mac_address="fa:16:3e:0a:0b:0c")
    expect_error(_post(user, net["id"], mac_address="not-a-mac"), 400, "HTTPBadRequest",
           "Invalid input for mac_address. Reason: 'not-a-mac' is not a valid MAC address.")


def test_fixed_ips_by_subnet_only(user, net, v4):
    port = user.port(net["id"], fixed_ips=[{"subnet_id": v4["id"]}])
    assert len(port["fixed_ips"]) == 1
    assert port["fixed_ips"][0]["subnet_id"] == v4["id"]
    assert _in(port["fixed_ips"][0]["ip_address"], v4["cidr"])
    two = user.port(net["id"], fixed_ips=[{"subnet_id": v4["id"]}, {"subnet_id": v4["id"]}])
    addresses = {ip["ip_address"] for ip in two["fixed_ips"]}
    assert len(addresses) == 2


def test_fixed_ips_by_ip_only_and_by_both(user, net, v4):
    other_v4 = user.subnet(net["id"], "10.0.1.0/24")
    port = user.port(net["id"], fixed_ips=[{"ip_address": "10.0.1.7"}])
    assert port["fixed_ips"] == [{"subnet_id": other_v4["id"], "ip_address": "10.0.1.7"}]
    port = user.port(net["id"], fixed_ips=[{"subnet_id": v4["id"], "ip_address": "10.0.0.9"}])
    assert port["fixed_ips"] == [{"subnet_id": v4["id"], "ip_address": "10.0.0.9"}]
    # an address outside the allocation pools but inside the cidr may be asked for
    port = user.port(net["id"], fixed_ips=[{"ip_address": "10.0.0.1"}])
    assert port["fixed_ips"] == [{"subnet_id": v4["id"], "ip_address": "10.0.0.1"}]
    listed = user.get("/v2.0/ports", params={"fixed_ips": "ip_address=10.0.0.9"}).json()
    assert [p["fixed_ips"] for p in listed["ports"]] == [
        [{"subnet_id": v4["id"], "ip_address": "10.0.0.9"}]]


def test_ip_address_already_allocated(user, net, v4):
    user.port(net["id"], fixed_ips=[{"ip_address": "10.0.0.5"}])
    for fixed in ({"ip_address": "10.0.0.5"}, {"subnet_id": v4["id"], "ip_address": "10.0.0.5"}):
        expect_error(_post(user, net["id"], fixed_ips=[fixed]), 409, "IpAddressAlreadyAllocated",
               f"IP address 10.0.0.5 already allocated in subnet {v4['id']}")
    resp = _post(user, net["id"], fixed_ips=[{"ip_address": "10.0.0.6"},
                                             {"ip_address": "10.0.0.6"}])
    expect_error(resp, 400, "HTTPBadRequest",
           "Invalid input for fixed_ips. Reason: Duplicate IP address '10.0.0.6'.")


def test_invalid_ip_for_subnet(user, net, v4):
    for address in ("10.0.1.5", "10.0.0.0", "10.0.0.255"):
        resp = _post(user, net["id"], fixed_ips=[{"subnet_id": v4["id"],
                                                  "ip_address": address}])
        expect_error(resp, 400, "InvalidIpForSubnet",
               f"IP address {address} is not a valid IP for the specified subnet.")


def test_invalid_ip_for_network(user, net, v4):
    for address in ("10.9.9.9", "10.0.0.255", "2001:db8::5"):
        resp = _post(user, net["id"], fixed_ips=[{"ip_address": address}])
        expect_error(resp, 400, "InvalidIpForNetwork",
               f"IP address {address} is not a valid IP for any of the subnets on the "
               "specified network.")


def test_subnet_of_another_network(user, net, v4):
    elsewhere = user.network()
    foreign = user.subnet(elsewhere["id"], "10.0.0.0/24")
    resp = _post(user, net["id"], fixed_ips=[{"subnet_id": foreign["id"]}])
    expect_error(resp, 400, "InvalidInput",
           f"Invalid input for operation: Failed to create port on network {net['id']}, "
           f"because fixed_ips included invalid subnet {foreign['id']}.")
    missing = "7f1a1d0e-4b0c-4a5d-8e6f-0a1b2c3d4e5f"
    expect_error(_post(user, net["id"], fixed_ips=[{"subnet_id": missing}]), 404, "SubnetNotFound",
           f"Subnet {missing} could not be found.")


def test_empty_fixed_ips_gives_no_addresses(user, net, v4):
    port = user.port(net["id"], fixed_ips=[])
    assert port["fixed_ips"] == []
    assert user.show("ports", port["id"])["fixed_ips"] == []


def test_empty_fixed_ips_still_gets_slaac_address(user, net, v4):
    slaac = user.subnet(net["id"], "2001:db8::/64", ipv6_address_mode="slaac")
    port = user.port(net["id"], fixed_ips=[])
    assert port["fixed_ips"] == [
        {"subnet_id": slaac["id"], "ip_address": _eui64("2001:db8::/64", port["mac_address"])}]


def test_address_on_slaac_subnet(user, net):
    slaac = user.subnet(net["id"], "2001:db8::/64", ipv6_address_mode="slaac")
    mac = "fa:16:3e:12:34:56"
    eui = _eui64("2001:db8::/64", mac)
    assert eui == "2001:db8::f816:3eff:fe12:3456"
    port = user.port(net["id"], mac_address=mac, fixed_ips=[{"subnet_id": slaac["id"]}])
    assert port["fixed_ips"] == [{"subnet_id": slaac["id"], "ip_address": eui}]
    resp = _post(user, net["id"], mac_address="fa:16:3e:12:34:57",
                 fixed_ips=[{"subnet_id": slaac["id"], "ip_address": "2001:db8::99"}])
    expect_error(resp, 400, "AllocationOnAutoAddressSubnet",
           f"IPv6 address 2001:db8::99 cannot be directly assigned to a port on subnet "
           f"{slaac['id']} as the subnet is configured for automatic addresses")


def test_exhaustion(user, net):
    tiny = user.subnet(net["id"], "10.0.0.0/30")
    assert tiny["allocation_pools"] == [{"start": "10.0.0.2", "end": "10.0.0.2"}]
    port = user.port(net["id"])
    assert port["fixed_ips"] == [{"subnet_id": tiny["id"], "ip_address": "10.0.0.2"}]
    expect_error(_post(user, net["id"]), 409, "IpAddressGenerationFailure",
           f"No more IP addresses available on network {net['id']}.")
    expect_error(_post(user, net["id"], fixed_ips=[{"subnet_id": tiny["id"]}]), 409,
           "IpAddressGenerationFailure",
           f"No more IP addresses available for subnet {tiny['id']}.")
    # the next IPv4 subnet is used once the first is full
    spare = user.subnet(net["id"], "10.0.1.0/30")
    assert user.port(net["id"])["fixed_ips"] == [
        {"subnet_id": spare["id"], "ip_address": "10.0.1.2"}]
    # freeing the address makes it available again
    assert user.delete(f"/v2.0/ports/{port['id']}").status_code == 204
    assert user.port(net["id"], fixed_ips=[{"subnet_id": tiny["id"]}])["fixed_ips"] == [
        {"subnet_id": tiny["id"], "ip_address": "10.0.0.2"}]


# --- update ------------------------------------------------------------------------------


def test_update_fixed_ips_add_remove_keep(user, net, v4):
    second = user.subnet(net["id"], "10.0.1.0/24")
    port = user.port(net["id"], fixed_ips=[{"subnet_id": v4["id"], "ip_address": "10.0.0.10"}])
    # add one, keep one (named by address)
    resp = _put(user, port["id"], fixed_ips=[{"ip_address": "10.0.0.10"},
                                             {"subnet_id": second["id"]}])
    assert resp.status_code == 200, resp.text
    updated = resp.json()["port"]
    assert len(updated["fixed_ips"]) == 2
    kept = [ip for ip in updated["fixed_ips"] if ip["subnet_id"] == v4["id"]]
    assert kept == [{"subnet_id": v4["id"], "ip_address": "10.0.0.10"}]
    added = [ip["ip_address"] for ip in updated["fixed_ips"] if ip["subnet_id"] == second["id"]]
    assert len(added) == 1 and _in(added[0], "10.0.1.0/24")
    assert updated["revision_number"] == port["revision_number"] + 1
    # keep one named by subnet only (its address stays), remove the other
    updated = _put(user, port["id"], fixed_ips=[{"subnet_id": second["id"]}]).json()["port"]
    assert updated["fixed_ips"] == [{"subnet_id": second["id"], "ip_address": added[0]}]
    assert user.show("ports", port["id"])["fixed_ips"] == updated["fixed_ips"]
    # the removed address is free again
    assert user.port(net["id"], fixed_ips=[{"ip_address": "10.0.0.10"}])
    # replace by another specific address
    updated = _put(user, port["id"], fixed_ips=[
        {"subnet_id": second["id"], "ip_address": "10.0.1.200"}]).json()["port"]
    assert updated["fixed_ips"] == [{"subnet_id": second["id"], "ip_address": "10.0.1.200"}]
    # and to nothing
    assert _put(user, port["id"], fixed_ips=[]).json()["port"]["fixed_ips"] == []


def test_update_subnet_entry_beside_its_address_adds_a_second_one(user, net, v4):
    """As Neutron (and ``openstack port set --fixed-ip subnet=S``): an entry naming only
    a subnet is matched with an address no other entry names, else it is a new one."""
    port = user.port(net["id"], fixed_ips=[{"subnet_id": v4["id"]}])
    first = port["fixed_ips"][0]
    resp = _put(user, port["id"], fixed_ips=[first, {"subnet_id": v4["id"]}])
    assert resp.status_code == 200, resp.text
    ips = resp.json()["port"]["fixed_ips"]
    assert len(ips) == 2 and first in ips
    assert all(ip["subnet_id"] == v4["id"] for ip in ips)
    second = next(ip for ip in ips if ip != first)
    assert user.show("ports", port["id"])["fixed_ips"] == ips
    # entries naming the addresses keep both; a subnet-only entry keeps one of them
    assert _ips(_put(user, port["id"], fixed_ips=ips).json()["port"]) == _ips({"fixed_ips": ips})
    kept = _put(user, port["id"], fixed_ips=[{"subnet_id": v4["id"]}]).json()["port"]
    assert len(kept["fixed_ips"]) == 1 and kept["fixed_ips"][0] in (first, second)
    # the address named by an entry is not the one a subnet-only entry takes
    other = kept["fixed_ips"][0]
    resp = _put(user, port["id"], fixed_ips=[{"subnet_id": v4["id"]},
                                             {"ip_address": other["ip_address"]}])
    ips = resp.json()["port"]["fixed_ips"]
    assert len(ips) == 2 and other in ips


def test_update_fixed_ips_conflicts_leave_port_unchanged(user, net, v4):
    taken = user.port(net["id"], fixed_ips=[{"ip_address": "10.0.0.20"}])
    port = user.port(net["id"], fixed_ips=[{"ip_address": "10.0.0.21"}])
    expect_error(_put(user, port["id"], fixed_ips=[{"ip_address": "10.0.0.20"}]), 409,
           "IpAddressAlreadyAllocated",
           f"IP address 10.0.0.20 already allocated in subnet {v4['id']}")
    expect_error(_put(user, port["id"], fixed_ips=[{"ip_address": "10.7.0.1"}]), 400,
           "InvalidIpForNetwork")
    shown = user.show("ports", port["id"])
    assert shown["fixed_ips"] == port["fixed_ips"]
    assert shown["revision_number"] == port["revision_number"]
    assert user.show("ports", taken["id"])["fixed_ips"] == taken["fixed_ips"]


def test_update_keeps_slaac_address(user, net, v4):
    slaac = user.subnet(net["id"], "2001:db8::/64", ipv6_address_mode="slaac")
    port = user.port(net["id"])
    eui = {"subnet_id": slaac["id"], "ip_address": _eui64("2001:db8::/64", port["mac_address"])}
    assert eui in port["fixed_ips"]
    updated = _put(user, port["id"], fixed_ips=[{"subnet_id": v4["id"],
                                                 "ip_address": "10.0.0.77"}]).json()["port"]
    assert _ips(updated) == sorted([(v4["id"], "10.0.0.77"),
                                    (eui["subnet_id"], eui["ip_address"])])
    updated = _put(user, port["id"], fixed_ips=[]).json()["port"]
    assert updated["fixed_ips"] == [eui]


def test_update_mac(admin, user, net, v4):
    slaac = user.subnet(net["id"], "2001:db8::/64", ipv6_address_mode="slaac")
    port = user.port(net["id"])
    resp = _put(user, port["id"], mac_address="fa:16:3e:00:00:01")
    expect_error(resp, 403, "PolicyNotAuthorized",
                 "update_port:mac_address is disallowed by policy")
    updated = _put(admin, port["id"], mac_address="fa:16:3e:00:00:01").json()["port"]
    assert updated["mac_address"] == "fa:16:3e:00:00:01"
    v4_ips = [ip for ip in port["fixed_ips"] if ip["subnet_id"] == v4["id"]]
    assert _ips(updated) == sorted(
        [(ip["subnet_id"], ip["ip_address"]) for ip in v4_ips]
        + [(slaac["id"], _eui64("2001:db8::/64", "fa:16:3e:00:00:01"))])
    assert user.show("ports", port["id"])["mac_address"] == "fa:16:3e:00:00:01"
    other_port = user.port(net["id"])
    expect_error(_put(admin, other_port["id"], mac_address="fa:16:3e:00:00:01"), 409,
           "MacAddressInUse")
    # null: a new MAC (port-mac-address-regenerate), and new EUI-64 addresses with it
    fresh = _put(admin, port["id"], mac_address=None).json()["port"]
    assert fresh["mac_address"] not in ("fa:16:3e:00:00:01", None)
    assert fresh["mac_address"].startswith("fa:16:3e:")
    assert (slaac["id"], _eui64("2001:db8::/64", fresh["mac_address"])) in _ips(fresh)
    made = user.create("ports", network_id=net["id"], mac_address=None)
    assert made["mac_address"].startswith("fa:16:3e:")


def test_update_device_and_attributes(user, net, v4):
    port = user.port(net["id"], name="p")
    resp = _put(user, port["id"], device_id="vm-1", device_owner="compute:nova",
                name="q", admin_state_up=False, description="d")
    assert resp.status_code == 200, resp.text
    updated = resp.json()["port"]
    assert (updated["device_id"], updated["device_owner"]) == ("vm-1", "compute:nova")
    assert (updated["name"], updated["admin_state_up"], updated["description"]) == (
        "q", False, "d")
    assert updated["fixed_ips"] == port["fixed_ips"]
    assert updated["revision_number"] == 2
    listed = user.get("/v2.0/ports", params={"device_id": "vm-1"}).json()["ports"]
    assert [p["id"] for p in listed] == [port["id"]]
    expect_error(_put(user, port["id"], network_id=net["id"]), 400, "HTTPBadRequest",
           "Cannot update read-only attribute network_id")
    expect_error(_put(user, port["id"], status="ACTIVE"), 400, "HTTPBadRequest",
           "Cannot update read-only attribute status")


def test_delete(user, net, v4):
    port = user.port(net["id"])
    resp = user.delete(f"/v2.0/ports/{port['id']}")
    assert resp.status_code == 204 and resp.content == b""
    expect_error(user.get(f"/v2.0/ports/{port['id']}"), 404, "PortNotFound",
           f"Port {port['id']} could not be found.")
    expect_error(user.delete(f"/v2.0/ports/{port['id']}"), 404, "PortNotFound")
    expect_error(_put(user, port["id"], name="x"), 404, "PortNotFound")


# --- visibility and policy -------------------------------------------------------------


def test_port_on_another_projects_private_network(user, other, net, v4):
    expect_error(_post(other, net["id"]), 404, "NetworkNotFound",
           f"Network {net['id']} could not be found.")
    port = user.port(net["id"])
    expect_error(other.get(f"/v2.0/ports/{port['id']}"), 404, "PortNotFound")
    expect_error(other.delete(f"/v2.0/ports/{port['id']}"), 404, "PortNotFound")
    assert port["id"] not in {p["id"] for p in other.get("/v2.0/ports").json()["ports"]}


def test_network_owner_sees_ports_of_other_projects(admin, user, other, server):
    net = admin.network(project_id=user.project_id, shared=True)
    subnet = user.subnet(net["id"], "10.0.0.0/24")
    theirs = other.port(net["id"])
    assert theirs["project_id"] == other.project_id
    assert theirs["fixed_ips"][0]["subnet_id"] == subnet["id"]
    assert user.show("ports", theirs["id"])["project_id"] == other.project_id
    listed = user.get("/v2.0/ports", params={"network_id": net["id"]}).json()["ports"]
    assert [p["id"] for p in listed] == [theirs["id"]]
    mine = user.port(net["id"])
    # the port's owner sees only its own port; a third project sees neither
    assert [p["id"] for p in other.get("/v2.0/ports",
                                       params={"network_id": net["id"]}).json()["ports"]] == [
        theirs["id"]]
    expect_error(other.get(f"/v2.0/ports/{mine['id']}"), 404, "PortNotFound")
    third = server.client("third-" + other.project_id)
    assert third.get("/v2.0/ports", params={"network_id": net["id"]}).json()["ports"] == []
    # the network owner may delete a port of another project on its network
    assert user.delete(f"/v2.0/ports/{theirs['id']}").status_code == 204


def test_policy_on_shared_network(admin, other):
    net = admin.network(shared=True)
    subnet = admin.subnet(net["id"], "10.0.0.0/24")
    expect_error(_post(other, net["id"], mac_address="fa:16:3e:01:02:03"), 403,
           "PolicyNotAuthorized", "create_port:mac_address is disallowed by policy")
    expect_error(_post(other, net["id"], fixed_ips=[{"ip_address": "10.0.0.9"}]), 403,
           "PolicyNotAuthorized", "create_port:fixed_ips:ip_address is disallowed by policy")
    expect_error(_post(other, net["id"], device_owner="network:router_interface"), 403,
           "PolicyNotAuthorized", "create_port:device_owner is disallowed by policy")
    port = other.port(net["id"], fixed_ips=[{"subnet_id": subnet["id"]}],
                      device_owner="compute:nova")
    assert port["fixed_ips"][0]["subnet_id"] == subnet["id"]
    expect_error(_put(other, port["id"], fixed_ips=[{"ip_address": "10.0.0.9"}]), 403,
           "PolicyNotAuthorized", "update_port:fixed_ips:ip_address is disallowed by policy")


def test_revision_bumps(user, net, v4):
    port = user.port(net["id"])
    assert port["revision_number"] == 1
    assert _put(user, port["id"], name="a").json()["port"]["revision_number"] == 2
    assert _put(user, port["id"], fixed_ips=[{"subnet_id": v4["id"]}]).json()["port"][
        "revision_number"] == 3
    assert user.show("ports", port["id"])["revision_number"] == 3


def test_a_long_list_reads_as_each_port_shows(admin, net, v4):
    """A list longer than ``FEW`` ports completes its views by the list's own
    condition, not by their ids: each port in it is as it shows alone."""
    from neutrino.db.query import FEW

    group = admin.post("/v2.0/security-groups",
                       json={"security_group": {"name": "long-list"}}).json()["security_group"]
    made = []
    for n in range(FEW + 5):
        extra = {"tags": ["even"]} if n % 2 == 0 else {"security_groups": [group["id"]]}
        if n % 3 == 0:
            extra["allowed_address_pairs"] = [{"ip_address": f"10.9.{n}.0/24"}]
            extra["extra_dhcp_opts"] = [{"opt_name": "tftp-server", "opt_value": f"t{n}"}]
        resp = _post(admin, net["id"], name=f"p{n}", **extra)
        assert resp.status_code == 201, resp.text
        made.append(resp.json()["port"]["id"])
    listed = admin.get("/v2.0/ports", params={"network_id": net["id"]}).json()["ports"]
    assert sorted(p["id"] for p in listed) == sorted(made)
    for port in listed[::7]:
        alone = admin.get(f"/v2.0/ports/{port['id']}").json()["port"]
        assert port == alone


@pytest.mark.parametrize("fields", [["id", "fixed_ips"], ["security_groups"],
                                    ["dns_assignment"], ["tags", "allowed_address_pairs"],
                                    ["tenant_id", "created_at", "updated_at", "mac_address"],
                                    ["name", "name", "binding:vif_type", "no_such_field"]])
@pytest.mark.parametrize("caller", ["admin", "user"])
def test_a_list_of_some_fields_reads_them_as_a_full_list_has_them(request, net, v4, fields,
                                                                   caller):
    """fields= makes a list read less, never answer differently (nor show more)."""
    client = request.getfixturevalue(caller)
    _post(client, net["id"], tags=["t"], allowed_address_pairs=[{"ip_address": "10.9.9.9"}])
    _post(client, net["id"])
    full = client.get("/v2.0/ports", params={"network_id": net["id"]}).json()["ports"]
    some = client.get("/v2.0/ports", params={"network_id": net["id"],
                                              "fields": fields}).json()["ports"]
    assert len(full) == 2
    assert some == [{f: port[f] for f in fields if f in port} for port in full]
    assert all(set(port) == set(fields) & set(full[0]) for port in some)
