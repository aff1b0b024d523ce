"""ML2 through the API: tenant segments, provider and multi-provider networks, MTU."""

import pytest

from tests.conftest import BACKENDS
from tests.harness import create_database, error_of, start_server

ML2_CONF = """
[ml2]
type_drivers = local,flat,vlan,vxlan,gre,geneve
tenant_network_types = vxlan
mechanism_drivers = logger
[ml2_type_flat]
flat_networks = physnet1,physnet2
[ml2_type_vlan]
network_vlan_ranges = physnet1:100:109,physnet2
[ml2_type_vxlan]
vni_ranges = 1000:1999
[ml2_type_gre]
tunnel_id_ranges = 1:100
[ml2_type_geneve]
vni_ranges = 5000:5099
"""


@pytest.fixture(scope="module", params=BACKENDS)
def ml2_server(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"ml2-{request.param}")
    url, drop = create_database(request.param, tmp)
    srv = start_server(tmp, url, auth="trusted_headers", extra=ML2_CONF)
    yield srv
    srv.stop()
    drop()


@pytest.fixture
def admin(ml2_server, project):
    return ml2_server.client(project, roles=("admin",))


@pytest.fixture
def user(ml2_server, project):
    return ml2_server.client(project, roles=("member",))


def provider(net):
    return (net["provider:network_type"], net["provider:physical_network"],
            net["provider:segmentation_id"])


def test_project_networks_get_a_vxlan_segment(admin, user):
    net = user.network(name="tenant")
    assert "provider:network_type" not in net  # hidden from non-admins
    seen = admin.show("networks", net["id"])
    kind, physnet, vni = provider(seen)
    assert (kind, physnet) == ("vxlan", None) and 1000 <= vni <= 1999
    assert seen["mtu"] == 1450


def test_provider_vlan(admin):
    net = admin.network(**{"provider:network_type": "vlan",
                           "provider:physical_network": "physnet2",
                           "provider:segmentation_id": 3000})
    assert provider(net) == ("vlan", "physnet2", 3000) and net["mtu"] == 1500
    resp = admin.post("/v2.0/networks", json={"network": {
        "provider:network_type": "vlan", "provider:physical_network": "physnet2",
        "provider:segmentation_id": 3000}})
    assert resp.status_code == 409 and error_of(resp)["type"] == "VlanIdInUse"
    partial = admin.network(**{"provider:network_type": "vlan",
                               "provider:physical_network": "physnet1"})
    assert 100 <= partial["provider:segmentation_id"] <= 109
    assert admin.delete(f"/v2.0/networks/{net['id']}").status_code == 204
    again = admin.network(**{"provider:network_type": "vlan",
                             "provider:physical_network": "physnet2",
                             "provider:segmentation_id": 3000})
    assert provider(again) == ("vlan", "physnet2", 3000)


@pytest.mark.parametrize("body,message", [
    ({"provider:network_type": "vlan", "provider:physical_network": "physnet9",
      "provider:segmentation_id": 5}, "physical_network 'physnet9' unknown for VLAN"),
    ({"provider:network_type": "vlan", "provider:physical_network": "physnet1",
      "provider:segmentation_id": 4095}, "segmentation_id out of range (1 through 4094)"),
    ({"provider:network_type": "flat"}, "physical_network required for flat"),
    ({"provider:network_type": "vxlan", "provider:physical_network": "physnet1"},
     "provider:physical_network specified for vxlan network"),
    ({"provider:network_type": "ipoverpigeon"}, "network_type value 'ipoverpigeon' not "
                                                "supported"),
    ({"provider:network_type": "vxlan",
      "segments": [{"provider:network_type": "vxlan"}]}, "Segments and provider values "
                                                         "cannot both be set"),
])
def test_provider_validation(admin, body, message):
    resp = admin.post("/v2.0/networks", json={"network": body})
    assert resp.status_code == 400, resp.text
    assert message in error_of(resp)["message"]


def test_flat_network_in_use(admin):
    admin.network(**{"provider:network_type": "flat", "provider:physical_network": "physnet2"})
    resp = admin.post("/v2.0/networks", json={"network": {
        "provider:network_type": "flat", "provider:physical_network": "physnet2"}})
    assert resp.status_code == 409 and error_of(resp)["type"] == "FlatNetworkInUse"


def test_tunnel_types_and_mtus(admin):
    gre = admin.network(**{"provider:network_type": "gre", "provider:segmentation_id": 7})
    geneve = admin.network(**{"provider:network_type": "geneve"})
    assert (gre["mtu"], geneve["mtu"]) == (1458, 1442)
    assert 5000 <= geneve["provider:segmentation_id"] <= 5099
    resp = admin.post("/v2.0/networks", json={"network": {
        "provider:network_type": "gre", "provider:segmentation_id": 7}})
    assert resp.status_code == 409 and error_of(resp)["type"] == "TunnelIdInUse"


def test_gre_keys_use_all_32_bits(admin):
    """Outside the project ranges a provider GRE network may take any 32-bit key;
    beyond that the API refuses it on every database."""
    top = 2 ** 32 - 1
    net = admin.network(**{"provider:network_type": "gre", "provider:segmentation_id": top})
    assert admin.show("networks", net["id"])["provider:segmentation_id"] == top
    found = admin.get("/v2.0/networks", params={"provider:segmentation_id": str(top)})
    assert [n["id"] for n in found.json()["networks"]] == [net["id"]]
    resp = admin.post("/v2.0/networks", json={"network": {
        "provider:network_type": "gre", "provider:segmentation_id": top + 1}})
    assert resp.status_code == 400 and "segmentation_id" in error_of(resp)["message"]
    resp = admin.post("/v2.0/networks", json={"network": {"segments": [
        {"provider:network_type": "gre", "provider:segmentation_id": 2 ** 40}]}})
    assert resp.status_code == 400, resp.text
    assert admin.delete(f"/v2.0/networks/{net['id']}").status_code == 204


def test_multi_provider(admin):
    segments = [{"provider:network_type": "vlan", "provider:physical_network": "physnet2",
                 "provider:segmentation_id": 3100},
                {"provider:network_type": "vxlan", "provider:segmentation_id": 77777}]
    net = admin.network(segments=segments)
    assert net["segments"] == [
        {"provider:network_type": "vlan", "provider:physical_network": "physnet2",
         "provider:segmentation_id": 3100},
        {"provider:network_type": "vxlan", "provider:physical_network": None,
         "provider:segmentation_id": 77777}]
    assert "provider:network_type" not in net
    assert net["mtu"] == 1450  # the smallest segment decides
    shown = admin.show("networks", net["id"])
    assert shown["segments"] == net["segments"]


def test_non_admins_cannot_choose_segments(user):
    resp = user.post("/v2.0/networks", json={"network": {"provider:network_type": "vxlan"}})
    assert resp.status_code == 403


def test_provider_attributes_are_not_updatable(admin):
    net = admin.network()
    resp = admin.put(f"/v2.0/networks/{net['id']}",
                     json={"network": {"provider:segmentation_id": 1}})
    assert resp.status_code == 400
    assert "does not support updating" in error_of(resp)["message"]


def test_filter_by_provider_attributes(admin, project):
    net = admin.network(**{"provider:network_type": "gre", "provider:segmentation_id": 50})
    found = admin.get("/v2.0/networks", params={"provider:network_type": "gre",
                                                "provider:segmentation_id": "50"})
    assert [n["id"] for n in found.json()["networks"]] == [net["id"]]


def test_segments_resource(admin, user):
    # physnet2 has no project ranges: nothing else in this module can take vlan 3201
    net = admin.network(**{"provider:network_type": "vlan",
                           "provider:physical_network": "physnet2",
                           "provider:segmentation_id": 3201})
    listed = admin.get("/v2.0/segments", params={"network_id": net["id"]}).json()["segments"]
    assert [(s["network_type"], s["physical_network"], s["segmentation_id"])
            for s in listed] == [("vlan", "physnet2", 3201)]
    added = admin.create("segments", network_id=net["id"], network_type="vxlan",
                         segmentation_id=99999, name="second")
    assert (added["network_type"], added["segmentation_id"], added["name"]) == (
        "vxlan", 99999, "second")
    shown = admin.show("networks", net["id"])
    assert len(shown["segments"]) == 2 and "provider:network_type" not in shown
    # no subnet is bound to a segment: one L2 domain still (l2_adjacency)
    assert shown["l2_adjacency"] is True
    aliases = {e["alias"] for e in admin.get("/v2.0/extensions").json()["extensions"]}
    assert {"l2_adjacency", "standard-attr-segment"} <= aliases
    resp = admin.post("/v2.0/segments", json={"segment": {
        "network_id": net["id"], "network_type": "vxlan", "segmentation_id": 99999}})
    assert resp.status_code == 409 and error_of(resp)["type"] == "TunnelIdInUse"
    renamed = admin.put(f"/v2.0/segments/{added['id']}",
                        json={"segment": {"name": "renamed", "description": "d"}}
                        ).json()["segment"]
    assert renamed["name"] == "renamed" and renamed["revision_number"] == 1
    # standard attributes (standard-attr-segment)
    assert renamed["description"] == "d" and renamed["updated_at"] >= renamed["created_at"]
    assert user.get("/v2.0/segments").json()["segments"] == []
    assert user.get(f"/v2.0/segments/{added['id']}").status_code == 404
    assert user.post("/v2.0/segments", json={"segment": {
        "network_id": net["id"], "network_type": "vxlan"}}).status_code == 403
    assert admin.delete(f"/v2.0/segments/{added['id']}").status_code == 204
    only = listed[0]["id"]
    resp = admin.delete(f"/v2.0/segments/{only}")
    assert resp.status_code == 409 and error_of(resp)["type"] == "SegmentInUse"
    again = admin.create("segments", network_id=net["id"], network_type="vxlan",
                         segmentation_id=99999)
    assert again["segmentation_id"] == 99999  # the id went back when its segment went
