"""VPNaaS over HTTP: policies, services, endpoint groups, site connections, their
checks (with Neutron's statuses and error types), policy and quotas."""

from __future__ import annotations

import socket
import uuid

import pytest

from tests.harness import ApiClient, expect_error

VPN = "/v2.0/vpn"
SINGULAR = {"ikepolicies": "ikepolicy", "ipsecpolicies": "ipsecpolicy",
            "vpnservices": "vpnservice", "endpoint-groups": "endpoint_group",
            "ipsec-site-connections": "ipsec_site_connection"}


def post(client: ApiClient, kind: str, **attrs):
    return client.post(f"{VPN}/{kind}", json={SINGULAR[kind]: attrs})


def make(client: ApiClient, kind: str, **attrs) -> dict:
    resp = post(client, kind, **attrs)
    assert resp.status_code == 201, resp.text
    return resp.json()[SINGULAR[kind]]


def show(client: ApiClient, kind: str, item_id: str) -> dict:
    resp = client.get(f"{VPN}/{kind}/{item_id}")
    assert resp.status_code == 200, resp.text
    return resp.json()[SINGULAR[kind]]


def put(client: ApiClient, kind: str, item_id: str, **attrs):
    return client.put(f"{VPN}/{kind}/{item_id}", json={SINGULAR[kind]: attrs})


def site(admin: ApiClient, user: ApiClient, cidr: str = "10.70.0.0/24",
         gateway: bool = True) -> dict:
    """A router of the user's with a gateway and an interface on a subnet of ``cidr``."""
    ext = admin.network(**{"router:external": True})
    ext_subnet = admin.subnet(ext["id"], "172.30.0.0/24")
    net = user.network()
    subnet = user.subnet(net["id"], cidr)
    body = {"name": "r"}
    if gateway:
        body["external_gateway_info"] = {"network_id": ext["id"]}
    router = user.create("routers", **body)
    resp = user.put(f"/v2.0/routers/{router['id']}/add_router_interface",
                    json={"subnet_id": subnet["id"]})
    assert resp.status_code == 200, resp.text
    return {"ext": ext, "ext_subnet": ext_subnet, "net": net, "subnet": subnet,
            "router": router}


def connection_body(service: dict, ike: dict, ipsec: dict, **attrs) -> dict:
    return {"vpnservice_id": service["id"], "ikepolicy_id": ike["id"],
            "ipsecpolicy_id": ipsec["id"], "peer_address": "172.30.0.100",
            "peer_id": "172.30.0.100", "psk": "secret", **attrs}


def legacy(admin, user, cidr="10.70.0.0/24") -> dict:
    """A service on the site's subnet, and two policies."""
    where = site(admin, user, cidr)
    service = make(user, "vpnservices", router_id=where["router"]["id"],
                   subnet_id=where["subnet"]["id"])
    return {**where, "service": service, "ike": make(user, "ikepolicies"),
            "ipsec": make(user, "ipsecpolicies")}


# --- policies -----------------------------------------------------------------------

def test_ike_policy_crud_with_neutrons_defaults(user, project):
    made = make(user, "ikepolicies", name="ike")
    assert made == {**made, "name": "ike", "description": "", "auth_algorithm": "sha1",
                    "encryption_algorithm": "aes-128", "phase1_negotiation_mode": "main",
                    "lifetime": {"units": "seconds", "value": 3600}, "ike_version": "v1",
                    "pfs": "group5", "project_id": project, "tenant_id": project}
    assert show(user, "ikepolicies", made["id"]) == made
    resp = put(user, "ikepolicies", made["id"], ike_version="v2", lifetime={"value": 7200},
               encryption_algorithm="aes-256-ctr")
    assert resp.status_code == 200, resp.text
    updated = resp.json()["ikepolicy"]
    assert updated["lifetime"] == {"units": "seconds", "value": 7200}
    assert (updated["ike_version"], updated["encryption_algorithm"]) == ("v2", "aes-256-ctr")
    listed = user.get(f"{VPN}/ikepolicies", params={"ike_version": "v2"}).json()["ikepolicies"]
    assert [p["id"] for p in listed] == [made["id"]]
    assert user.get(f"{VPN}/ikepolicies", params={"ike_version": "v1"}).json()[
        "ikepolicies"] == []
    assert user.delete(f"{VPN}/ikepolicies/{made['id']}").status_code == 204
    expect_error(user.get(f"{VPN}/ikepolicies/{made['id']}"), 404, "IKEPolicyNotFound",
                 f"IKEPolicy {made['id']} could not be found")


def test_ipsec_policy_crud(user):
    made = make(user, "ipsecpolicies", name="p", pfs="group14", auth_algorithm="sha256",
                lifetime={"units": "seconds", "value": 60})
    assert (made["transform_protocol"], made["encapsulation_mode"]) == ("esp", "tunnel")
    assert (made["pfs"], made["auth_algorithm"], made["lifetime"]["value"]) == (
        "group14", "sha256", 60)
    updated = put(user, "ipsecpolicies", made["id"], encapsulation_mode="transport").json()
    assert updated["ipsecpolicy"]["encapsulation_mode"] == "transport"
    names = {p["name"] for p in user.get(f"{VPN}/ipsecpolicies", params={
        "fields": ["name", "id"]}).json()["ipsecpolicies"]}
    assert "p" in names
    assert user.delete(f"{VPN}/ipsecpolicies/{made['id']}").status_code == 204
    expect_error(user.delete(f"{VPN}/ipsecpolicies/{made['id']}"), 404,
                 "IPsecPolicyNotFound")


@pytest.mark.parametrize("kind, body", [
    ("ikepolicies", {"auth_algorithm": "md5"}),
    ("ikepolicies", {"encryption_algorithm": "des"}),
    ("ikepolicies", {"pfs": "group1"}),
    ("ikepolicies", {"ike_version": "v3"}),
    ("ikepolicies", {"phase1_negotiation_mode": "quick"}),
    ("ikepolicies", {"lifetime": {"value": 59}}),
    ("ikepolicies", {"lifetime": {"value": "soon"}}),
    ("ikepolicies", {"lifetime": {"units": "kilobytes"}}),
    ("ikepolicies", {"lifetime": {"hours": 1}}),
    ("ikepolicies", {"lifetime": 3600}),
    ("ikepolicies", {"lifetime": {"value": 2 ** 40}}),
    ("ipsecpolicies", {"transform_protocol": "gre"}),
    ("ipsecpolicies", {"encapsulation_mode": "bridge"}),
    ("ipsecpolicies", {"lifetime": {"value": True}}),
    ("ipsecpolicies", {"status": "ACTIVE"}),
])
def test_bad_policies_are_refused(user, kind, body):
    expect_error(post(user, kind, **body), 400, "HTTPBadRequest")


# --- services ------------------------------------------------------------------------

def test_service_crud_and_its_router_checks(admin, user, project):
    where = site(admin, user)
    made = make(user, "vpnservices", name="vpn", router_id=where["router"]["id"],
                subnet_id=where["subnet"]["id"])
    assert made["status"] == "PENDING_CREATE" and made["admin_state_up"] is True
    assert made["external_v4_ip"] in {ip["ip_address"] for ip in user.show(
        "routers", where["router"]["id"])["external_gateway_info"]["external_fixed_ips"]}
    assert made["external_v6_ip"] is None and made["flavor_id"] is None
    assert made["project_id"] == project
    # a pending service refuses updates, as Neutron's
    expect_error(put(user, "vpnservices", made["id"], name="x"), 400,
                 "VPNStateInvalidToUpdate")
    listed = user.get(f"{VPN}/vpnservices", params={"router_id": where["router"]["id"]})
    assert [s["id"] for s in listed.json()["vpnservices"]] == [made["id"]]
    assert user.delete(f"{VPN}/vpnservices/{made['id']}").status_code == 204
    expect_error(user.get(f"{VPN}/vpnservices/{made['id']}"), 404, "VPNServiceNotFound",
                 f"VPNService {made['id']} could not be found")


def test_service_needs_a_gateway_and_a_subnet_on_the_router(admin, user):
    where = site(admin, user, gateway=False)
    router_id = where["router"]["id"]
    expect_error(post(user, "vpnservices", router_id=router_id), 400, "RouterIsNotExternal",
                 f"Router {router_id} has no external network gateway set")
    user.put(f"/v2.0/routers/{router_id}", json={"router": {
        "external_gateway_info": {"network_id": where["ext"]["id"]}}})
    elsewhere = user.subnet(user.network()["id"], "10.71.0.0/24")
    expect_error(post(user, "vpnservices", router_id=router_id, subnet_id=elsewhere["id"]),
                 400, "SubnetIsNotConnectedToRouter",
                 f"Subnet {elsewhere['id']} is not connected to Router {router_id}")
    missing = str(uuid.uuid4())
    expect_error(post(user, "vpnservices", router_id=missing), 404, "RouterNotFound")
    expect_error(post(user, "vpnservices", router_id=router_id, flavor_id=missing), 404,
                 "FlavorsPluginNotLoaded")
    expect_error(post(user, "vpnservices"), 400, "HTTPBadRequest")
    expect_error(post(user, "vpnservices", router_id="nope"), 400, "HTTPBadRequest")
    expect_error(post(user, "vpnservices", router_id=router_id, status="ACTIVE"), 400,
                 "HTTPBadRequest")
    assert user.get(f"{VPN}/vpnservices", params={"router_id": router_id}).json()[
        "vpnservices"] == []  # nothing half-written
    # without a subnet: endpoint groups say what is local
    assert make(user, "vpnservices", router_id=router_id)["subnet_id"] is None


def test_routers_keep_what_their_services_use(admin, user):
    t = legacy(admin, user)
    router_id = t["router"]["id"]
    expect_error(user.put(f"/v2.0/routers/{router_id}/remove_router_interface",
                          json={"subnet_id": t["subnet"]["id"]}), 409,
                 "SubnetInUseByVPNService",
                 f"Subnet {t['subnet']['id']} is used by VPNService {t['service']['id']}")
    expect_error(user.put(f"/v2.0/routers/{router_id}", json={"router": {
        "external_gateway_info": {}}}), 409, "RouterInUse",
        f"Router {router_id} is currently used by VPN service ({t['service']['id']})")
    router = user.show("routers", router_id)
    assert router["external_gateway_info"] is not None
    assert user.delete(f"{VPN}/vpnservices/{t['service']['id']}").status_code == 204
    assert user.put(f"/v2.0/routers/{router_id}", json={"router": {
        "external_gateway_info": {}}}).status_code == 200


def test_a_router_without_interfaces_but_a_service_is_not_deleted(admin, user):
    where = site(admin, user)
    router_id = where["router"]["id"]
    make(user, "vpnservices", router_id=router_id)
    assert user.put(f"/v2.0/routers/{router_id}/remove_router_interface",
                    json={"subnet_id": where["subnet"]["id"]}).status_code == 200
    expect_error(user.delete(f"/v2.0/routers/{router_id}"), 409, "RouterInUse")
    assert user.show("routers", router_id)["id"] == router_id


# --- endpoint groups -------------------------------------------------------------------

def test_endpoint_groups_of_cidrs_and_subnets(admin, user):
    where = site(admin, user)
    cidrs = make(user, "endpoint-groups", name="peers", type="cidr",
                 endpoints=["192.168.1.0/24", "192.168.2.0/24"])
    assert cidrs["endpoints"] == ["192.168.1.0/24", "192.168.2.0/24"]
    assert cidrs["type"] == "cidr"
    subnets = make(user, "endpoint-groups", type="subnet", endpoints=where["subnet"]["id"])
    assert subnets["endpoints"] == [where["subnet"]["id"]]
    renamed = user.put(f"{VPN}/endpoint-groups/{cidrs['id']}",
                       json={"endpoint_group": {"name": "far"}}).json()["endpoint_group"]
    assert renamed["name"] == "far" and renamed["endpoints"] == cidrs["endpoints"]
    expect_error(user.put(f"{VPN}/endpoint-groups/{cidrs['id']}", json={"endpoint_group": {
        "endpoints": ["10.0.0.0/8"]}}), 400, "HTTPBadRequest")
    listed = user.get(f"{VPN}/endpoint-groups", params={"type": "subnet"}).json()
    assert [g["id"] for g in listed["endpoint_groups"]] == [subnets["id"]]
    # a subnet an endpoint group names stays
    resp = user.put(f"/v2.0/routers/{where['router']['id']}/remove_router_interface",
                    json={"subnet_id": where["subnet"]["id"]})
    assert resp.status_code == 200, resp.text
    expect_error(user.delete(f"/v2.0/subnets/{where['subnet']['id']}"), 409,
                 "SubnetInUseByEndpointGroup")
    assert user.delete(f"{VPN}/endpoint-groups/{subnets['id']}").status_code == 204
    assert user.delete(f"/v2.0/subnets/{where['subnet']['id']}").status_code == 204
    expect_error(user.get(f"{VPN}/endpoint-groups/{subnets['id']}"), 404,
                 "VPNEndpointGroupNotFound")


@pytest.mark.parametrize("body, kind", [
    ({"type": "cidr", "endpoints": []}, "MissingEndpointForEndpointGroup"),
    ({"type": "cidr"}, "MissingEndpointForEndpointGroup"),
    ({"type": "cidr", "endpoints": ["10.0.0.0/24", "10.0.0.0/24"]},
     "InvalidEndpointInEndpointGroup"),
    ({"type": "cidr", "endpoints": ["10.0.0.300/24"]}, "InvalidEndpointInEndpointGroup"),
    ({"type": "subnet", "endpoints": ["not-a-uuid"]}, "InvalidEndpointInEndpointGroup"),
    ({"type": "subnet", "endpoints": [str(uuid.uuid4())]}, "NonExistingSubnetInEndpointGroup"),
    ({"type": "galaxy", "endpoints": ["10.0.0.0/24"]}, "HTTPBadRequest"),
    ({"endpoints": ["10.0.0.0/24"]}, "HTTPBadRequest"),
    ({"type": "cidr", "endpoints": [{"cidr": "10.0.0.0/24"}]}, "HTTPBadRequest"),
])
def test_bad_endpoint_groups_are_refused(user, body, kind):
    expect_error(post(user, "endpoint-groups", **body), 400, kind)


def test_another_projects_subnet_is_not_an_endpoint(user, other):
    theirs = other.subnet(other.network()["id"], "10.72.0.0/24")
    expect_error(post(user, "endpoint-groups", type="subnet", endpoints=[theirs["id"]]),
                 400, "NonExistingSubnetInEndpointGroup")


# --- site connections ------------------------------------------------------------------

def test_legacy_connection_crud(admin, user):
    t = legacy(admin, user)
    made = make(user, "ipsec-site-connections", **connection_body(
        t["service"], t["ike"], t["ipsec"], name="c",
        peer_cidrs=["192.168.10.0/24", "192.168.11.1/24"], dpd={"interval": 10}))
    assert made["status"] == "PENDING_CREATE" and made["route_mode"] == "static"
    assert made["auth_mode"] == "psk" and made["initiator"] == "bi-directional"
    assert made["peer_cidrs"] == ["192.168.10.0/24", "192.168.11.0/24"]
    assert made["dpd"] == {"action": "hold", "interval": 10, "timeout": 120}
    assert (made["mtu"], made["local_id"], made["psk"]) == (1500, "", "secret")
    assert (made["local_ep_group_id"], made["peer_ep_group_id"]) == (None, None)
    assert show(user, "ipsec-site-connections", made["id"]) == made
    listed = user.get(f"{VPN}/ipsec-site-connections", params={
        "vpnservice_id": t["service"]["id"]}).json()["ipsec_site_connections"]
    assert [c["id"] for c in listed] == [made["id"]]
    expect_error(put(user, "ipsec-site-connections", made["id"], mtu=1400), 400,
                 "VPNStateInvalidToUpdate")
    # policies and services in use stay
    expect_error(user.delete(f"{VPN}/ikepolicies/{t['ike']['id']}"), 409, "IKEPolicyInUse")
    expect_error(put(user, "ikepolicies", t["ike"]["id"], name="x"), 409, "IKEPolicyInUse")
    expect_error(user.delete(f"{VPN}/ipsecpolicies/{t['ipsec']['id']}"), 409,
                 "IPsecPolicyInUse")
    expect_error(put(user, "ipsecpolicies", t["ipsec"]["id"], pfs="group2"), 409,
                 "IPsecPolicyInUse")
    expect_error(user.delete(f"{VPN}/vpnservices/{t['service']['id']}"), 409,
                 "VPNServiceInUse")
    assert user.delete(f"{VPN}/ipsec-site-connections/{made['id']}").status_code == 204
    expect_error(user.get(f"{VPN}/ipsec-site-connections/{made['id']}"), 404,
                 "IPsecSiteConnectionNotFound",
                 f"ipsec_site_connection {made['id']} not found")
    assert user.delete(f"{VPN}/ikepolicies/{t['ike']['id']}").status_code == 204


def test_connection_with_endpoint_groups(admin, user):
    where = site(admin, user)
    service = make(user, "vpnservices", router_id=where["router"]["id"])
    ike, ipsec = make(user, "ikepolicies"), make(user, "ipsecpolicies")
    local = make(user, "endpoint-groups", type="subnet", endpoints=[where["subnet"]["id"]])
    peer = make(user, "endpoint-groups", type="cidr", endpoints=["192.168.20.0/24"])
    made = make(user, "ipsec-site-connections", **connection_body(
        service, ike, ipsec, local_ep_group_id=local["id"], peer_ep_group_id=peer["id"]))
    assert made["peer_cidrs"] == [] and made["local_ep_group_id"] == local["id"]
    expect_error(user.delete(f"{VPN}/endpoint-groups/{peer['id']}"), 400,
                 "EndpointGroupInUse")
    expect_error(user.put(f"/v2.0/routers/{where['router']['id']}/remove_router_interface",
                          json={"subnet_id": where["subnet"]["id"]}), 409,
                 "SubnetInUseByIPsecSiteConnection")
    # endpoint groups with a service that has a subnet, and the other way round
    t = legacy(admin, user, "10.73.0.0/24")
    expect_error(post(user, "ipsec-site-connections", **connection_body(
        t["service"], ike, ipsec, peer_cidrs=["192.168.0.0/24"],
        local_ep_group_id=local["id"])), 400, "InvalidEndpointGroup",
        "Endpoint group local cannot be specified, when VPN Service has subnet specified")
    expect_error(post(user, "ipsec-site-connections", **connection_body(
        service, ike, ipsec, peer_cidrs=["192.168.0.0/24"])), 400, "PeerCidrsInvalid")
    expect_error(post(user, "ipsec-site-connections", **connection_body(
        service, ike, ipsec)), 400, "MissingRequiredEndpointGroup",
        "Missing endpoint groups local and peer for IPSec site-to-site connection")
    # groups of the wrong type
    expect_error(post(user, "ipsec-site-connections", **connection_body(
        service, ike, ipsec, local_ep_group_id=peer["id"], peer_ep_group_id=peer["id"])),
        400, "WrongEndpointGroupType",
        f"Endpoint group {peer['id']} type is 'cidr' and should be 'subnet'")
    expect_error(post(user, "ipsec-site-connections", **connection_body(
        service, ike, ipsec, local_ep_group_id=local["id"], peer_ep_group_id=local["id"])),
        400, "WrongEndpointGroupType")
    mixed = make(user, "endpoint-groups", type="cidr",
                 endpoints=["192.168.30.0/24", "fd00:30::/64"])
    expect_error(post(user, "ipsec-site-connections", **connection_body(
        service, ike, ipsec, local_ep_group_id=local["id"], peer_ep_group_id=mixed["id"])),
        400, "MixedIPVersionsForIPSecEndpoints")
    v6 = make(user, "endpoint-groups", type="cidr", endpoints=["fd00:31::/64"])
    expect_error(post(user, "ipsec-site-connections", **connection_body(
        service, ike, ipsec, local_ep_group_id=local["id"], peer_ep_group_id=v6["id"])),
        400, "MixedIPVersionsForIPSecConnection")
    overlapping = make(user, "endpoint-groups", type="cidr", endpoints=["10.70.0.128/25"])
    expect_error(post(user, "ipsec-site-connections", **connection_body(
        service, ike, ipsec, local_ep_group_id=local["id"],
        peer_ep_group_id=overlapping["id"])), 400, "PeerCidrOverlapsLocalCidr")
    elsewhere = user.subnet(user.network()["id"], "10.74.0.0/24")
    off_router = make(user, "endpoint-groups", type="subnet", endpoints=[elsewhere["id"]])
    expect_error(post(user, "ipsec-site-connections", **connection_body(
        service, ike, ipsec, local_ep_group_id=off_router["id"],
        peer_ep_group_id=peer["id"])), 400, "SubnetIsNotConnectedToRouter")
    listed = user.get(f"{VPN}/ipsec-site-connections", params={
        "vpnservice_id": service["id"]}).json()["ipsec_site_connections"]
    assert [c["id"] for c in listed] == [made["id"]]  # nothing half-written


@pytest.mark.parametrize("attrs, status, kind", [
    ({"peer_cidrs": []}, 400, "MissingPeerCidrs"),
    ({"peer_cidrs": ["192.168.0.0/24", "fd00::/64"]}, 400, "MixedIPVersionsForPeerCidrs"),
    ({"peer_cidrs": ["fd00::/64"]}, 400, "MixedIPVersionsForIPSecConnection"),
    ({"peer_cidrs": ["10.70.0.0/16"]}, 400, "PeerCidrOverlapsLocalCidr"),
    ({"peer_cidrs": ["192.168.0.0/33"]}, 400, "HTTPBadRequest"),
    ({"peer_cidrs": ["192.168.0.0/24", "192.168.0.0/24"]}, 400, "HTTPBadRequest"),
    ({"dpd": {"interval": 120, "timeout": 120}}, 400,
     "IPsecSiteConnectionDpdIntervalValueError"),
    ({"dpd": {"interval": 200}}, 400, "IPsecSiteConnectionDpdIntervalValueError"),
    ({"dpd": {"action": "explode"}}, 400, "HTTPBadRequest"),
    ({"dpd": {"interval": -1}}, 400, "HTTPBadRequest"),
    ({"dpd": {"interval": 2 ** 40}}, 400, "HTTPBadRequest"),
    ({"dpd": "hold"}, 400, "HTTPBadRequest"),
    ({"mtu": 67}, 400, "IPsecSiteConnectionMtuError"),
    ({"mtu": -1}, 400, "HTTPBadRequest"),
    ({"mtu": "big"}, 400, "InvalidInput"),
    ({"initiator": "sometimes"}, 400, "HTTPBadRequest"),
    ({"psk": ""}, 400, "HTTPBadRequest"),
    ({"psk": "a\nb"}, 400, "HTTPBadRequest"),
    ({"psk": 'say "hi"'}, 400, "HTTPBadRequest"),
    ({"psk": "x" * 256}, 400, "HTTPBadRequest"),
    ({"psk": 42}, 400, "HTTPBadRequest"),
    ({"peer_address": "not an address!"}, 400, "VPNPeerAddressNotResolved"),
    ({"peer_address": "fd00::1"}, 400, "ExternalNetworkHasNoSubnet"),
    ({"peer_id": "a\x00b"}, 400, "HTTPBadRequest"),
    ({"local_id": "x\ny"}, 400, "HTTPBadRequest"),
    ({"route_mode": "bgp"}, 400, "HTTPBadRequest"),
    ({"vpnservice_id": str(uuid.uuid4())}, 404, "VPNServiceNotFound"),
    ({"ikepolicy_id": str(uuid.uuid4())}, 404, "IKEPolicyNotFound"),
    ({"ipsecpolicy_id": str(uuid.uuid4())}, 404, "IPsecPolicyNotFound"),
    ({"ikepolicy_id": "bad"}, 400, "HTTPBadRequest"),
])
def test_bad_connections_are_refused(admin, user, attrs, status, kind):
    t = legacy(admin, user)
    body = connection_body(t["service"], t["ike"], t["ipsec"],
                           peer_cidrs=["192.168.40.0/24"])
    expect_error(post(user, "ipsec-site-connections", **{**body, **attrs}), status, kind)
    assert user.get(f"{VPN}/ipsec-site-connections", params={
        "vpnservice_id": t["service"]["id"]}).json()["ipsec_site_connections"] == []


def test_required_connection_attributes(admin, user):
    t = legacy(admin, user)
    body = connection_body(t["service"], t["ike"], t["ipsec"], peer_cidrs=["192.168.0.0/24"])
    for key in ("psk", "peer_address", "peer_id", "vpnservice_id"):
        expect_error(post(user, "ipsec-site-connections",
                          **{k: v for k, v in body.items() if k != key}),
                     400, "HTTPBadRequest")


def test_ah_esp_is_refused_for_strongswan(admin, user):
    t = legacy(admin, user)
    ah_esp = make(user, "ipsecpolicies", transform_protocol="ah-esp")
    expect_error(post(user, "ipsec-site-connections", **connection_body(
        t["service"], t["ike"], ah_esp, peer_cidrs=["192.168.0.0/24"])), 400,
        "IpsecValidationFailure",
        "IPSec does not support IPsec Policy attribute transform_protocol with value "
        "'ah-esp'")


def test_a_peer_by_name_is_resolved(admin, user):
    t = legacy(admin, user)
    resp = post(user, "ipsec-site-connections", **connection_body(
        t["service"], t["ike"], t["ipsec"], peer_address="localhost",
        peer_cidrs=["192.168.0.0/24"]))
    resolved = socket.getaddrinfo("localhost", None)[0][4][0]  # the server's host is ours
    if ":" in resolved:  # the router's gateway has no IPv6 address
        expect_error(resp, 400, "ExternalNetworkHasNoSubnet")
    else:
        assert resp.status_code == 201, resp.text
        assert resp.json()["ipsec_site_connection"]["peer_address"] == resolved


# --- policy, projects, quotas ----------------------------------------------------------

def test_readers_see_nothing_and_write_nothing(server, project, user):
    made = make(user, "ikepolicies")
    reader = server.client(project, roles=("reader",))
    expect_error(reader.get(f"{VPN}/ikepolicies/{made['id']}"), 404, "IKEPolicyNotFound")
    assert reader.get(f"{VPN}/ikepolicies").json()["ikepolicies"] == []
    any_id = str(uuid.uuid4())
    for kind, body in (("ikepolicies", {}), ("ipsecpolicies", {}),
                       ("vpnservices", {"router_id": any_id}),
                       ("endpoint-groups", {"type": "cidr", "endpoints": ["10.0.0.0/8"]}),
                       ("ipsec-site-connections", {
                           "vpnservice_id": any_id, "ikepolicy_id": any_id,
                           "ipsecpolicy_id": any_id, "peer_address": "10.0.0.1",
                           "peer_id": "10.0.0.1", "psk": "s"})):
        expect_error(post(reader, kind, **body), 403, "PolicyNotAuthorized")
    expect_error(put(reader, "ikepolicies", made["id"], name="x"), 403, "PolicyNotAuthorized")
    expect_error(reader.delete(f"{VPN}/ikepolicies/{made['id']}"), 403,
                 "PolicyNotAuthorized")
    assert show(user, "ikepolicies", made["id"]) == made


def test_other_projects_see_nothing_and_use_nothing(admin, user, other):
    t = legacy(admin, user)
    for kind, item in (("ikepolicies", t["ike"]), ("ipsecpolicies", t["ipsec"]),
                       ("vpnservices", t["service"])):
        assert other.get(f"{VPN}/{kind}/{item['id']}").status_code == 404
        assert item["id"] not in {i["id"] for i in other.get(f"{VPN}/{kind}").json()[
            kind]}
        assert other.delete(f"{VPN}/{kind}/{item['id']}").status_code == 404
    theirs = legacy(admin, other, "10.75.0.0/24")
    expect_error(post(user, "ipsec-site-connections", **connection_body(
        t["service"], theirs["ike"], t["ipsec"], peer_cidrs=["192.168.0.0/24"])), 404,
        "IKEPolicyNotFound")
    expect_error(post(user, "vpnservices", router_id=theirs["router"]["id"]), 404,
                 "RouterNotFound")
    # an admin sees and acts on everyone's
    assert show(admin, "ikepolicies", theirs["ike"]["id"])["id"] == theirs["ike"]["id"]
    assert admin.delete(f"{VPN}/ikepolicies/{theirs['ike']['id']}").status_code == 204


def test_quotas_count_vpn_resources(admin, user, project):
    resp = admin.put(f"/v2.0/quotas/{project}", json={"quota": {
        "ikepolicy": 1, "vpnservice": 0, "endpoint_group": 1}})
    assert resp.status_code == 200, resp.text
    make(user, "ikepolicies")
    expect_error(post(user, "ikepolicies"), 409, "OverQuota")
    make(user, "endpoint-groups", type="cidr", endpoints=["10.0.0.0/24"])
    expect_error(post(user, "endpoint-groups", type="cidr", endpoints=["10.1.0.0/24"]), 409,
                 "OverQuota")
    where = site(admin, user)
    expect_error(post(user, "vpnservices", router_id=where["router"]["id"]), 409, "OverQuota")
    assert user.get(f"{VPN}/vpnservices").json()["vpnservices"] == []


def test_extensions_are_listed(user):
    aliases = {e["alias"] for e in user.get("/v2.0/extensions").json()["extensions"]}
    assert {"vpnaas", "vpn-endpoint-groups", "vpn-aes-ctr", "vpn-flavors"} <= aliases
