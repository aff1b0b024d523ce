"""openstacksdk and the openstack CLI manage network segment ranges
(``network segment range``), and a project's network takes its id from its range."""

from __future__ import annotations

import openstack
import pytest

from tests.compat.cli import run_scenario
from tests.compat.conftest import write_clouds_yaml
from tests.harness import create_database, start_server

EXTRA = """service_plugins = router,network_segment_range
[ml2]
type_drivers = local,flat,vlan,vxlan
tenant_network_types = vxlan
[ml2_type_vlan]
network_vlan_ranges = physnet1:100:109
[ml2_type_vxlan]
vni_ranges = 1000:1009
"""


@pytest.fixture(scope="module")
def ranges_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("compat-segment-ranges")
    url, drop = create_database("sqlite", tmp)
    srv = start_server(tmp, url, auth="noauth", extra=EXTRA)
    yield srv
    srv.stop()
    drop()


def test_openstacksdk_manages_network_segment_ranges(ranges_server):
    conn = openstack.connection.Connection(
        auth_type="none", network_endpoint_override=ranges_server.url)
    try:
        defaults = {(r.network_type, r.minimum, r.maximum): r
                    for r in conn.network.network_segment_ranges() if r.default}
        assert set(defaults) == {("vxlan", 1000, 1009), ("vlan", 100, 109)}
        assert defaults[("vlan", 100, 109)].physical_network == "physnet1"
        assert defaults[("vxlan", 1000, 1009)].available == list(range(1000, 1010))

        made = conn.network.create_network_segment_range(
            name="sdk-range", network_type="vxlan", minimum=5000, maximum=5001,
            shared=False, project_id="sdk-project")
        assert (made.shared, made.project_id, made.used) == (False, "sdk-project", {})
        net = conn.network.create_network(name="sdk-ranged", project_id="sdk-project")
        assert conn.network.get_network(net.id).provider_segmentation_id in (5000, 5001)
        found = conn.network.find_network_segment_range("sdk-range")
        assert found.used == {str(conn.network.get_network(net.id).provider_segmentation_id):
                              "sdk-project"}
        assert len(found.available) == 1
        changed = conn.network.update_network_segment_range(made, name="sdk-range2",
                                                            maximum=5003)
        assert (changed.name, changed.maximum, len(changed.available)) == ("sdk-range2", 5003, 3)
        with pytest.raises(openstack.exceptions.ConflictException):
            conn.network.delete_network_segment_range(made)
        conn.network.delete_network(net)
        conn.network.delete_network_segment_range(made)
        assert conn.network.find_network_segment_range("sdk-range2") is None
        with pytest.raises(openstack.exceptions.BadRequestException):
            conn.network.delete_network_segment_range(defaults[("vlan", 100, 109)])
    finally:
        conn.close()


def test_openstack_cli_network_segment_range(ranges_server, tmp_path):
    session = run_scenario([
        ("create", "network segment range create cli-range --shared --network-type vxlan "
                   "--minimum 6000 --maximum 6009 -f json"),
        ("vlan", "network segment range create cli-vlan --shared --network-type vlan "
                 "--physical-network physnet2 --minimum 20 --maximum 29 -f json"),
        ("list", "network segment range list -f json"),
        ("long", "network segment range list --long -f json"),
        ("show", "network segment range show cli-range -f json"),
        ("set", "network segment range set cli-range --name cli-range2 --minimum 6000 "
                "--maximum 6019"),
        ("shown", "network segment range show cli-range2 -f json"),
        ("delete", "network segment range delete cli-range2 cli-vlan"),
        ("after", "network segment range list -f json"),
    ], write_clouds_yaml(tmp_path, ranges_server.url), tmp_path)
    made = session.json("create")
    assert (made["name"], made["shared"], made["default"], made["network_type"]) == (
        "cli-range", True, False, "vxlan")
    assert (made["minimum"], made["maximum"], made["available"]) == (6000, 6009, ["6000-6009"])
    assert session.json("vlan")["physical_network"] == "physnet2"
    rows = {r["Name"]: r for r in session.json("list")}
    assert rows["cli-range"]["Network Type"] == "vxlan"
    assert rows["cli-vlan"]["Physical Network"] == "physnet2"
    assert {(r["Default"], r["Minimum ID"]) for r in session.json("list")} >= {
        (True, 1000), (True, 100), (False, 6000), (False, 20)}
    [long] = [r for r in session.json("long") if r["Name"] == "cli-range"]
    assert long["Available"] == ["6000-6009"] and long["Used"] == {}
    assert session.json("show")["id"] == made["id"]
    session.quiet("set")
    shown = session.json("shown")
    assert (shown["name"], shown["maximum"], shown["available"]) == (
        "cli-range2", 6019, ["6000-6019"])
    session.quiet("delete")
    assert {r["Name"] for r in session.json("after")} == {""}  # the defaults, unnamed
