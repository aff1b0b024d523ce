"""Routed networks (service_plugins = segments): subnets on segments, hosts
that reach segments, and ports whose addresses come from their host's segment."""

from __future__ import annotations

import uuid

import pytest

from neutrino.plugins.hooks import Hooks
from neutrino.plugins.ml2.host_segments import AgentReports
from tests.api.agent_reports import Reporter
from tests.conftest import BACKENDS
from tests.harness import ApiClient, create_database, expect_error, start_server

CONF = """
service_plugins = router,segments
[ml2]
type_drivers = flat,vlan,vxlan
tenant_network_types = vxlan
mechanism_drivers = openvswitch
[ml2_type_flat]
flat_networks = *
[ml2_type_vlan]
network_vlan_ranges = physnet1,physnet2
[ml2_type_vxlan]
vni_ranges = 1000:1999
"""
HOST = "binding:host_id"


@pytest.fixture(scope="module", params=BACKENDS)
def routed_server(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"routed-{request.param}")
    url, drop = create_database(request.param, tmp)
    srv = start_server(tmp, url, auth="trusted_headers", extra=CONF)
    yield srv
    srv.stop()
    drop()


@pytest.fixture(scope="module")
def reporter(routed_server):
    """Reports the agents' states with what the server runs with them (the
    segment host mappings ML2 keeps)."""
    hooks = Hooks()
    hooks.on_agent_report.append(AgentReports())
    found = Reporter(routed_server.db_url, hooks=hooks)
    yield found
    found.close()


@pytest.fixture
def admin(routed_server) -> ApiClient:
    return routed_server.client(uuid.uuid4().hex, roles=("admin", "member"))


def physnets() -> tuple[str, str]:
    tag = uuid.uuid4().hex[:6]
    return f"rack1-{tag}", f"rack2-{tag}"


def routed_network(admin: ApiClient, reporter: Reporter) -> dict:
    """Two segments, a host on each, a subnet on each; the hosts report first
    or after, as happens: one before its segment exists, one after."""
    one, two = physnets()
    host_a, host_b = f"host-a-{one}", f"host-b-{two}"
    reporter.report(host_a, configurations={"bridge_mappings": {one: "br-1"}},
                    start_flag=True)
    net = admin.network(**{"provider:network_type": "flat",
                           "provider:physical_network": one})
    resp = admin.post("/v2.0/segments", json={"segment": {
        "network_id": net["id"], "network_type": "flat", "physical_network": two}})
    assert resp.status_code == 201, resp.text
    seg_b = resp.json()["segment"]
    reporter.report(host_b, configurations={"bridge_mappings": {two: "br-2"}},
                    start_flag=True)
    segs = admin.get("/v2.0/segments", params={"network_id": net["id"]}).json()["segments"]
    seg_a = next(s for s in segs if s["physical_network"] == one)
    sub_a = admin.subnet(net["id"], "10.81.1.0/24", segment_id=seg_a["id"])
    sub_b = admin.subnet(net["id"], "10.81.2.0/24", segment_id=seg_b["id"])
    return {"net": net, "seg_a": seg_a, "seg_b": seg_b, "sub_a": sub_a, "sub_b": sub_b,
            "host_a": host_a, "host_b": host_b}


def subnet_of(port: dict) -> set[str]:
    return {ip["subnet_id"] for ip in port["fixed_ips"]}


def test_subnets_on_segments_route_to_each_other(admin, reporter):
    r = routed_network(admin, reporter)
    assert r["sub_a"]["segment_id"] == r["seg_a"]["id"]
    assert admin.show("networks", r["net"]["id"])["l2_adjacency"] is False
    # each subnet routes to the other segment's through its own gateway
    a = admin.show("subnets", r["sub_a"]["id"])
    b = admin.show("subnets", r["sub_b"]["id"])
    assert a["host_routes"] == [{"destination": "10.81.2.0/24", "nexthop": "10.81.1.1"}]
    assert b["host_routes"] == [{"destination": "10.81.1.0/24", "nexthop": "10.81.2.1"}]
    listed = admin.get("/v2.0/subnets", params={"segment_id": r["seg_b"]["id"]}).json()
    assert [s["id"] for s in listed["subnets"]] == [b["id"]]
    # a subnet on no segment does not mix with them
    resp = admin.post("/v2.0/subnets", json={"subnet": {
        "network_id": r["net"]["id"], "ip_version": 4, "cidr": "10.81.3.0/24"}})
    expect_error(resp, 400, "SubnetsNotAllAssociatedWithSegments")
    # a segment with a subnet stays
    expect_error(admin.delete(f"/v2.0/segments/{r['seg_b']['id']}"), 409, "SegmentInUse")
    # the subnet gone, its peers' routes to it go
    assert admin.delete(f"/v2.0/subnets/{b['id']}").status_code == 204
    assert admin.show("subnets", a["id"])["host_routes"] == []


def test_addresses_follow_the_host(admin, reporter):
    r = routed_network(admin, reporter)
    net_id = r["net"]["id"]
    waiting = admin.port(net_id)
    assert (waiting["fixed_ips"], waiting["ip_allocation"]) == ([], "deferred")
    resp = admin.put(f"/v2.0/ports/{waiting['id']}", json={"port": {HOST: r["host_a"]}})
    assert resp.status_code == 200, resp.text
    bound = resp.json()["port"]
    assert subnet_of(bound) == {r["sub_a"]["id"]}
    assert bound["ip_allocation"] == "immediate"
    assert bound["binding:vif_type"] == "ovs"
    on_b = admin.port(net_id, **{HOST: r["host_b"]})
    assert subnet_of(on_b) == {r["sub_b"]["id"]}
    # a host on neither segment, an address on each, a move away from its segment
    resp = admin.post("/v2.0/ports", json={"port": {"network_id": net_id,
                                                    HOST: f"nowhere-{uuid.uuid4().hex}"}})
    expect_error(resp, 409, "HostNotConnectedToAnySegment")
    resp = admin.post("/v2.0/ports", json={"port": {"network_id": net_id, "fixed_ips": [
        {"subnet_id": r["sub_a"]["id"]}, {"subnet_id": r["sub_b"]["id"]}]}})
    expect_error(resp, 400, "FixedIpsSubnetsNotOnSameSegment",
                 "Cannot allocate addresses from different segments.")
    resp = admin.put(f"/v2.0/ports/{bound['id']}", json={"port": {HOST: r["host_b"]}})
    expect_error(resp, 409, "HostNotCompatibleWithFixedIps")
    # fixed_ips: [] asks for no address at all
    bare = admin.port(net_id, fixed_ips=[])
    assert (bare["fixed_ips"], bare["ip_allocation"]) == ([], "none")
    assert admin.show("ports", bare["id"])["ip_allocation"] == "none"


def test_a_subnet_joins_the_one_segment(admin, reporter):
    one, two = physnets()
    net = admin.network(**{"provider:network_type": "flat", "provider:physical_network": one})
    subnet = admin.subnet(net["id"], "10.82.0.0/24")
    [segment] = admin.get("/v2.0/segments", params={"network_id": net["id"]}).json()[
        "segments"]
    url = f"/v2.0/subnets/{subnet['id']}"
    resp = admin.put(url, json={"subnet": {"segment_id": segment["id"]}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["subnet"]["segment_id"] == segment["id"]
    expect_error(admin.put(url, json={"subnet": {"segment_id": None}}), 400,
                 "SubnetSegmentAssociationChangeNotAllowed")
    # with two segments, which one would be a guess
    other = admin.network(**{"provider:network_type": "flat",
                             "provider:physical_network": two})
    resp = admin.post("/v2.0/segments", json={"segment": {
        "network_id": other["id"], "network_type": "flat", "physical_network": f"{two}-b"}})
    assert resp.status_code == 201, resp.text
    loose = admin.subnet(other["id"], "10.83.0.0/24")
    segs = admin.get("/v2.0/segments", params={"network_id": other["id"]}).json()["segments"]
    expect_error(admin.put(f"/v2.0/subnets/{loose['id']}", json={"subnet": {
        "segment_id": segs[0]["id"]}}), 400, "NoUpdateSubnetWhenMultipleSegmentsOnNetwork")
    # a segment of another network, or none at all
    resp = admin.post("/v2.0/subnets", json={"subnet": {
        "network_id": other["id"], "ip_version": 4, "cidr": "10.84.0.0/24",
        "segment_id": segment["id"]}})
    expect_error(resp, 400, "NetworkIdsDontMatch")
    resp = admin.post("/v2.0/subnets", json={"subnet": {
        "network_id": other["id"], "ip_version": 4, "cidr": "10.84.0.0/24",
        "segment_id": str(uuid.uuid4())}})
    expect_error(resp, 404, "SegmentNotFound")


def test_extensions_are_listed(admin):
    aliases = {e["alias"] for e in admin.get("/v2.0/extensions").json()["extensions"]}
    assert {"ip_allocation", "subnet-segmentid-writable",
            "segments-peer-subnet-host-routes", "segment"} <= aliases


def test_without_the_plugin_no_subnet_is_on_a_segment(admin_of_shared_server):
    admin = admin_of_shared_server
    net = admin.network()
    port = admin.port(net["id"])
    assert "ip_allocation" not in port
    [segment] = admin.get("/v2.0/segments", params={"network_id": net["id"]}).json()[
        "segments"]
    resp = admin.post("/v2.0/subnets", json={"subnet": {
        "network_id": net["id"], "ip_version": 4, "cidr": "10.85.0.0/24",
        "segment_id": segment["id"]}})
    expect_error(resp, 400, "RoutedNetworksNotEnabled")


@pytest.fixture
def admin_of_shared_server(server, project) -> ApiClient:
    return server.client(project, roles=("admin", "member"))
