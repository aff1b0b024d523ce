"""network-segment-range: the configured ranges as default ones, an admin's
ranges (shared or of one project), what each holds, and project networks
taking their ids from their project's ranges, then from the shared ones."""

from __future__ import annotations

import uuid

import pytest

from tests.conftest import BACKENDS
from tests.harness import ApiClient, create_database, error_of, expect_error, start_server

PATH = "/v2.0/network_segment_ranges"
PLUGINS = "service_plugins = router,network_segment_range\n"
ML2 = """
[ml2]
type_drivers = local,flat,vlan,vxlan
tenant_network_types = vxlan
[ml2_type_vlan]
network_vlan_ranges = physnet1:100:109,physnet2
[ml2_type_vxlan]
vni_ranges = {vni_ranges}
"""


def config(vni_ranges: str = "1000:1099") -> str:
    return PLUGINS + ML2.format(vni_ranges=vni_ranges)


@pytest.fixture(scope="module", params=BACKENDS)
def ranges_server(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"ranges-{request.param}")
    url, drop = create_database(request.param, tmp)
    srv = start_server(tmp, url, auth="trusted_headers", extra=config())
    srv.backend = request.param
    yield srv
    srv.stop()
    drop()


@pytest.fixture
def admin(ranges_server, project) -> ApiClient:
    return ranges_server.client(project, roles=("admin", "member"))


@pytest.fixture
def user(ranges_server, project) -> ApiClient:
    return ranges_server.client(project, roles=("member",))


@pytest.fixture
def other(ranges_server, other_project) -> ApiClient:
    return ranges_server.client(other_project, roles=("member",))


def create(client: ApiClient, **attrs) -> dict:
    resp = client.post(PATH, json={"network_segment_range": {"name": "r", **attrs}})
    assert resp.status_code == 201, resp.text
    return resp.json()["network_segment_range"]


def show(client: ApiClient, range_id: str) -> dict:
    resp = client.get(f"{PATH}/{range_id}")
    assert resp.status_code == 200, resp.text
    return resp.json()["network_segment_range"]


def defaults(client: ApiClient) -> dict[tuple, dict]:
    listed = client.get(PATH).json()["network_segment_ranges"]
    return {(r["network_type"], r["physical_network"], r["minimum"], r["maximum"]): r
            for r in listed if r["default"]}


def segment_of(admin: ApiClient, network: dict) -> tuple:
    seen = admin.show("networks", network["id"])
    return seen["provider:network_type"], seen["provider:segmentation_id"]


def test_the_configured_ranges_are_default_ones(admin):
    found = defaults(admin)
    # physnet2 has no range (provider networks only), gre no driver: neither shows
    assert set(found) == {("vxlan", None, 1000, 1099), ("vlan", "physnet1", 100, 109)}
    vlan = found[("vlan", "physnet1", 100, 109)]
    assert (vlan["shared"], vlan["project_id"], vlan["tenant_id"]) == (True, None, None)
    assert vlan["available"] == list(range(100, 110)) and vlan["used"] == {}
    assert {"id", "name", "description", "tags", "created_at", "updated_at",
            "revision_number"} <= set(vlan)
    expect_error(admin.delete(f"{PATH}/{vlan['id']}"), 400,
                 "NetworkSegmentRangeDefaultReadOnly",
                 f"Network Segment Range {vlan['id']} is a default segment range which could "
                 "not be updated or deleted.")
    expect_error(admin.put(f"{PATH}/{vlan['id']}", json={
        "network_segment_range": {"name": "mine"}}), 400, "NetworkSegmentRangeDefaultReadOnly")
    assert show(admin, vlan["id"])["name"] == ""
    # openstacksdk's query names: filters here too
    listed = admin.get(PATH, params={"default": "true", "network_type": "vlan"}).json()
    assert [r["id"] for r in listed["network_segment_ranges"]] == [vlan["id"]]
    expect_error(admin.get(PATH, params={"used": "1"}), 400, "HTTPBadRequest")


def test_create_show_list_update_delete(admin, project):
    made = create(admin, name="blue", description="for blue", shared=False,
                  project_id=project, network_type="vxlan", minimum=2000, maximum=2004)
    assert (made["name"], made["description"], made["default"], made["shared"]) == (
        "blue", "for blue", False, False)
    assert (made["project_id"], made["tenant_id"], made["network_type"]) == (
        project, project, "vxlan")
    assert (made["physical_network"], made["minimum"], made["maximum"]) == (None, 2000, 2004)
    assert made["available"] == [2000, 2001, 2002, 2003, 2004] and made["used"] == {}
    assert made["revision_number"] == 0 and made["tags"] == []
    assert show(admin, made["id"]) == made
    listed = admin.get(PATH, params={"name": "blue", "project_id": project}).json()
    assert [r["id"] for r in listed["network_segment_ranges"]] == [made["id"]]
    few = admin.get(PATH, params={"id": made["id"], "fields": ["id", "maximum"]}).json()
    assert few["network_segment_ranges"] == [{"id": made["id"], "maximum": 2004}]

    resp = admin.put(f"{PATH}/{made['id']}", json={"network_segment_range": {
        "name": "bluer", "minimum": 1995, "maximum": 2006}})
    assert resp.status_code == 200, resp.text
    changed = resp.json()["network_segment_range"]
    assert (changed["name"], changed["minimum"], changed["maximum"]) == ("bluer", 1995, 2006)
    assert changed["available"] == list(range(1995, 2007))
    assert changed["revision_number"] == 1
    stale = admin.put(f"{PATH}/{made['id']}", json={"network_segment_range": {"name": "x"}},
                      headers={"If-Match": "revision_number=0"})
    expect_error(stale, 412, "RevisionNumberConstraintFailed")
    resp = admin.put(f"{PATH}/{made['id']}", json={"network_segment_range": {"maximum": 2001}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["network_segment_range"]["available"] == list(range(1995, 2002))

    assert admin.put(f"{PATH}/{made['id']}/tags", json={"tags": ["a", "b"]}).status_code == 200
    assert show(admin, made["id"])["tags"] == ["a", "b"]
    tagged = admin.get(PATH, params={"tags": "a", "project_id": project}).json()
    assert [r["id"] for r in tagged["network_segment_ranges"]] == [made["id"]]

    assert admin.delete(f"{PATH}/{made['id']}").status_code == 204
    expect_error(admin.get(f"{PATH}/{made['id']}"), 404, "NetworkSegmentRangeNotFound",
                 f"Network Segment Range {made['id']} could not be found.")
    expect_error(admin.delete(f"{PATH}/{made['id']}"), 404, "NetworkSegmentRangeNotFound")


def test_a_shared_range_has_no_project(admin):
    # as Neutron (and tempest, which sends project_id "" and physical_network ""):
    # a shared range's project is none, a tunnel's physical network none
    made = create(admin, network_type="vxlan", minimum=2100, maximum=2101, project_id="",
                  physical_network="")
    assert (made["shared"], made["project_id"], made["physical_network"]) == (True, None, None)
    assert admin.delete(f"{PATH}/{made['id']}").status_code == 204


@pytest.mark.parametrize("body, status, kind, message", [
    ({"network_type": "vlan", "physical_network": "physnet1", "minimum": 5, "maximum": 4095},
     400, "NetworkVlanRangeError",
     "Invalid network VLAN range: '5:4095' - '4095 is not a valid VLAN tag'."),
    ({"network_type": "vlan", "physical_network": "physnet1", "minimum": 60, "maximum": 50},
     400, "NetworkVlanRangeError", "Invalid network VLAN range: '60:50' - 'End of VLAN range "
     "is less than start of VLAN range'."),
    ({"network_type": "vxlan", "minimum": 5, "maximum": 2 ** 24}, 400,
     "NetworkTunnelRangeError",
     "Invalid network tunnel range: '5:16777216' - 16777216 is not a valid vxlan identifier."),
    ({"network_type": "vxlan", "minimum": 9, "maximum": 8}, 400, "NetworkTunnelRangeError",
     "Invalid network tunnel range: '9:8' - End of tunnel range is less than start of "
     "tunnel range."),
    ({"network_type": "vxlan", "minimum": 1, "maximum": 2 ** 21}, 400,
     "NetworkTunnelRangeError", None),
    ({"network_type": "gre", "minimum": 1, "maximum": 2}, 400,
     "NetworkSegmentRangeNetTypeNotSupported",
     "Network type gre does not support network segment ranges."),
    ({"network_type": "flat", "minimum": 1, "maximum": 2}, 400, "HTTPBadRequest", None),
    ({"network_type": "vxlan", "minimum": 0, "maximum": 2}, 400, "HTTPBadRequest",
     "Invalid input for minimum. Reason: '0' is too small - must be at least '1'."),
    ({"network_type": "vxlan", "minimum": 1, "maximum": 2 ** 32}, 400, "HTTPBadRequest", None),
    ({"network_type": "vxlan", "minimum": "one", "maximum": 2}, 400, "InvalidInput", None),
    ({"network_type": "vxlan", "minimum": 1}, 400, "HTTPBadRequest",
     "Failed to parse request. Required attribute 'maximum' not specified"),
    ({"minimum": 1, "maximum": 2}, 400, "HTTPBadRequest", None),
    ({"network_type": "vlan", "minimum": 10, "maximum": 20}, 400, "BadRequest",
     "Bad network_segment_range request: Network type vlan requires 'physical_network' to "
     "be specified while creating new range."),
    ({"network_type": "vxlan", "physical_network": "physnet1", "minimum": 10, "maximum": 20},
     400, "BadRequest", None),
    ({"network_type": "vxlan", "minimum": 10, "maximum": 20, "shared": False,
      "project_id": ""}, 400, "BadRequest", None),
    ({"network_type": "vxlan", "minimum": 10, "maximum": 20, "default": True}, 400,
     "HTTPBadRequest", "Attribute 'default' not allowed in POST"),
    ({"network_type": "vxlan", "minimum": 10, "maximum": 20, "available": []}, 400,
     "HTTPBadRequest", None),
])
def test_refused_ranges(admin, body, status, kind, message):
    resp = admin.post(PATH, json={"network_segment_range": body})
    error = expect_error(resp, status, kind, message)
    assert error["message"]


def test_read_only_attributes_and_overlaps(admin, project):
    made = create(admin, network_type="vxlan", minimum=2200, maximum=2209)
    for key, value in (("network_type", "vlan"), ("physical_network", "x"),
                       ("shared", False), ("project_id", project), ("default", True)):
        resp = admin.put(f"{PATH}/{made['id']}", json={"network_segment_range": {key: value}})
        expect_error(resp, 400, "HTTPBadRequest", f"Cannot update read-only attribute {key}")
    # ranges other than the defaults may not share an id (defaults may: 1000-1099)
    overlap = admin.post(PATH, json={"network_segment_range": {
        "network_type": "vxlan", "minimum": 2209, "maximum": 2300, "shared": False,
        "project_id": project}})
    expect_error(overlap, 409, "NetworkSegmentRangeOverlaps",
                 f"Network segment range overlaps with range(s) with id {made['id']}")
    inside_default = create(admin, network_type="vxlan", minimum=1090, maximum=1099,
                            shared=False, project_id=project)
    moved = admin.put(f"{PATH}/{inside_default['id']}", json={"network_segment_range": {
        "maximum": 2200}})
    expect_error(moved, 409, "NetworkSegmentRangeOverlaps")
    backwards = admin.put(f"{PATH}/{made['id']}", json={"network_segment_range": {
        "minimum": 2300}})
    expect_error(backwards, 400, "NetworkTunnelRangeError")
    for item in (made, inside_default):
        assert admin.delete(f"{PATH}/{item['id']}").status_code == 204


def test_an_admins_only(admin, user, project):
    made = create(admin, network_type="vxlan", minimum=2400, maximum=2401, shared=False,
                  project_id=project)
    assert user.get(PATH).json()["network_segment_ranges"] == []
    expect_error(user.get(f"{PATH}/{made['id']}"), 404, "NetworkSegmentRangeNotFound")
    expect_error(user.get(f"{PATH}/{made['id']}/tags"), 404, "NetworkSegmentRangeNotFound")
    expect_error(user.put(f"{PATH}/{made['id']}/tags", json={"tags": ["x"]}), 404,
                 "NetworkSegmentRangeNotFound")
    resp = user.post(PATH, json={"network_segment_range": {
        "network_type": "vxlan", "minimum": 2410, "maximum": 2411}})
    expect_error(resp, 403, "PolicyNotAuthorized")
    resp = user.put(f"{PATH}/{made['id']}", json={"network_segment_range": {"name": "x"}})
    expect_error(resp, 404, "NetworkSegmentRangeNotFound")
    expect_error(user.delete(f"{PATH}/{made['id']}"), 404, "NetworkSegmentRangeNotFound")
    assert admin.delete(f"{PATH}/{made['id']}").status_code == 204


def test_a_projects_networks_take_its_own_range_first(admin, user, other, project,
                                                      other_project):
    mine = create(admin, name="mine", network_type="vxlan", minimum=3000, maximum=3002,
                  shared=False, project_id=project)
    theirs = create(admin, name="theirs", network_type="vxlan", minimum=3100, maximum=3101,
                    shared=False, project_id=other_project)
    own = [user.network(name=f"own-{n}") for n in range(3)]
    assert sorted(segment_of(admin, n)[1] for n in own) == [3000, 3001, 3002]
    # its range used up, the project's next network takes a shared one (a default)
    spill = user.network(name="spill")
    assert segment_of(admin, spill)[0] == "vxlan"
    assert 1000 <= segment_of(admin, spill)[1] <= 1099
    # another project never takes this project's ids: its own, then the shared
    others = [other.network(name=f"other-{n}") for n in range(3)]
    ids = sorted(segment_of(admin, n)[1] for n in others)
    assert ids[1:] == [3100, 3101] and 1000 <= ids[0] <= 1099

    seen = show(admin, mine["id"])
    assert seen["used"] == {"3000": project, "3001": project, "3002": project}
    assert seen["available"] == []
    seen = show(admin, theirs["id"])
    assert seen["used"] == {"3100": other_project, "3101": other_project}
    default = defaults(admin)[("vxlan", None, 1000, 1099)]
    assert default["used"][str(segment_of(admin, spill)[1])] == project

    # in use: not deleted, and its bounds do not move past (or onto) its used ids
    expect_error(admin.delete(f"{PATH}/{mine['id']}"), 409,
                 "NetworkSegmentRangeReferencedByProject",
                 f"Network Segment Range {mine['id']} is referenced by one or more project "
                 "networks.")
    for bounds in ({"minimum": 3001}, {"maximum": 3002 - 1}, {"minimum": 3002}):
        resp = admin.put(f"{PATH}/{mine['id']}", json={"network_segment_range": bounds})
        expect_error(resp, 409, "NetworkSegmentRangeReferencedByProject")
    # a name, or wider bounds, change whatever the networks use
    resp = admin.put(f"{PATH}/{mine['id']}", json={"network_segment_range": {
        "name": "mine2", "maximum": 3003}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["network_segment_range"]["available"] == [3003]
    assert segment_of(admin, user.network(name="widened"))[1] == 3003

    # a network deleted gives its id back to the range
    freed = segment_of(admin, own[0])[1]
    assert admin.delete(f"/v2.0/networks/{own[0]['id']}").status_code == 204
    assert show(admin, mine["id"])["available"] == [freed]


def test_partial_provider_networks_take_from_the_pools(admin, project, other_project):
    """vlan: a project's range inside the default one is kept from other projects."""
    theirs = create(admin, network_type="vlan", physical_network="physnet1", minimum=105,
                    maximum=109, shared=False, project_id=other_project)
    partial = {"provider:network_type": "vlan"}
    mine = [admin.network(name=f"p-{n}", project_id=project, **partial) for n in range(5)]
    assert sorted(segment_of(admin, n)[1] for n in mine) == [100, 101, 102, 103, 104]
    full = admin.post("/v2.0/networks", json={"network": {
        "name": "none-left", "project_id": project, **partial}})
    expect_error(full, 503, "NoNetworkAvailable")
    # the owner takes its own; an admin may still name any id
    owned = admin.network(name="owned", project_id=other_project, **partial)
    assert 105 <= segment_of(admin, owned)[1] <= 109
    named = admin.network(name="named", project_id=project, **{
        "provider:network_type": "vlan", "provider:physical_network": "physnet1",
        "provider:segmentation_id": 107 if segment_of(admin, owned)[1] != 107 else 108})
    assert segment_of(admin, named)[0] == "vlan"
    used = show(admin, theirs["id"])["used"]
    assert set(used.values()) == {project, other_project} and len(used) == 2
    for network in (*mine, owned, named):
        assert admin.delete(f"/v2.0/networks/{network['id']}").status_code == 204
    assert admin.delete(f"{PATH}/{theirs['id']}").status_code == 204
    vlan = defaults(admin)[("vlan", "physnet1", 100, 109)]
    assert vlan["available"] == list(range(100, 110)) and vlan["used"] == {}


def test_a_new_range_beyond_the_configured_ones_serves_networks(admin, user, project):
    """A range's ids need not be configured: they get allocation rows when it is
    made, and lose the free ones when it goes."""
    made = create(admin, network_type="vxlan", minimum=7000, maximum=7000, shared=False,
                  project_id=project)
    net = user.network(name="beyond")
    assert segment_of(admin, net) == ("vxlan", 7000)
    assert admin.delete(f"/v2.0/networks/{net['id']}").status_code == 204
    assert show(admin, made["id"])["available"] == [7000]
    assert admin.delete(f"{PATH}/{made['id']}").status_code == 204
    again = user.network(name="default-again")
    assert 1000 <= segment_of(admin, again)[1] <= 1099
    # an admin may still name an id outside every range, as before
    named = admin.network(name="named-7000", **{"provider:network_type": "vxlan",
                                                "provider:segmentation_id": 7000})
    assert segment_of(admin, named) == ("vxlan", 7000)
    error = error_of(admin.post("/v2.0/networks", json={"network": {
        "name": "taken", "provider:network_type": "vxlan", "provider:segmentation_id": 7000}}))
    assert error["type"] == "TunnelIdInUse"


@pytest.fixture(params=BACKENDS)
def restartable(request, tmp_path):
    url, drop = create_database(request.param, tmp_path)
    servers = []

    def start(vni_ranges: str):
        if servers:
            servers[-1].stop()
        (tmp_path / "state").mkdir(exist_ok=True)
        servers.append(start_server(tmp_path, url, auth="trusted_headers",
                                    extra=config(vni_ranges)))
        return servers[-1]

    yield start
    servers[-1].stop()
    drop()


def test_default_ranges_follow_the_configuration_at_each_start(restartable):
    project = uuid.uuid4().hex
    admin = restartable("1000:1099").client(project, roles=("admin", "member"))
    kept = defaults(admin)[("vlan", "physnet1", 100, 109)]
    custom = create(admin, network_type="vxlan", minimum=1050, maximum=1051, shared=False,
                    project_id=project)
    held = admin.network(name="held", project_id=project)
    assert segment_of(admin, held)[1] in (1050, 1051)

    admin = restartable("1000:1019,1200:1201").client(project, roles=("admin", "member"))
    now = defaults(admin)
    assert set(now) == {("vxlan", None, 1000, 1019), ("vxlan", None, 1200, 1201),
                        ("vlan", "physnet1", 100, 109)}
    assert now[("vlan", "physnet1", 100, 109)]["id"] == kept["id"]  # unchanged, kept
    assert now[("vxlan", None, 1200, 1201)]["available"] == [1200, 1201]
    # the admin's range outlives the configuration it overlapped, and still serves
    seen = show(admin, custom["id"])
    assert seen["used"] == {str(segment_of(admin, held)[1]): project}
    assert len(seen["available"]) == 1
    second = admin.network(name="second", project_id=project)
    assert segment_of(admin, second)[1] in (1050, 1051)
