"""What the OVS agents call on the trunk plugin (``rpc.contracts.trunk``), from
a real database: a trunk's details by its parent, the subports following the
parent's host, the statuses the agent reports."""

from __future__ import annotations

import datetime
import uuid

import pytest

from neutrino.cmd.server import build_app, load_config
from neutrino.context import Context
from neutrino.db import migrate
from neutrino.rpc.contracts import trunk as contract
from neutrino.services.agents.rpc import TIME_FORMAT, ReportStateEndpoint
from tests.conftest import BACKENDS
from tests.harness import create_database

ADMIN = Context.admin()
CTX = {"request_id": None, "project_id": None, "is_admin": True}


class Cloud:
    def __init__(self, app):
        self.app = app
        self.core = app.router.controllers["ports"].plugin
        self.trunks = app.router.controllers["trunks"].plugin
        [self.rpc] = self.trunks.rpc_endpoints()[contract.TOPIC]
        self.reports = ReportStateEndpoint(self.core.db, self.core.conf)

    def ovs_agent(self) -> str:
        host = f"ovs-{uuid.uuid4().hex[:12]}"
        sent = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
        self.reports.report_state(CTX, {"agent_state": {
            "agent_type": "Open vSwitch agent", "binary": "neutrino-openvswitch-agent",
            "host": host, "topic": "N/A", "configurations": {
                "bridge_mappings": {}, "tunnel_types": ["vxlan"], "l2_population": False}}},
            time=sent.strftime(TIME_FORMAT))
        return host

    def port(self) -> dict:
        net = self.core.create_network(ADMIN, {"project_id": "p1", "name": "n"})
        return self.core.create_port(ADMIN, {"project_id": "p1", "network_id": net["id"]})


@pytest.fixture(scope="module", params=BACKENDS)
def cloud(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"trunk-rpc-{request.param}")
    url, drop = create_database(request.param, tmp)
    path = tmp / "neutrino.conf"
    path.write_text(f"[DEFAULT]\nstate_path = {tmp}\nservice_plugins = trunk\n"
                    f"[database]\nconnection = {url}\n"
                    "[ml2]\nmechanism_drivers = openvswitch\ntenant_network_types = vxlan\n"
                    "[ml2_type_vxlan]\nvni_ranges = 1000:1999\n"
                    "[quotas]\nquota_network = -1\nquota_port = -1\n")
    conf = load_config([str(path)])
    migrate.upgrade(url)
    made = Cloud(build_app(conf, sync=True))
    yield made
    made.app.on_shutdown()
    drop()


def trunk_of(cloud, subports: int = 2) -> tuple[dict, list[dict]]:
    parent = cloud.port()
    subs = [cloud.port() for _ in range(subports)]
    made = cloud.trunks.create_trunk(ADMIN, {"project_id": "p1", "port_id": parent["id"],
                                             "sub_ports": [
        {"port_id": s["id"], "segmentation_type": "vlan", "segmentation_id": 101 + i}
        for i, s in enumerate(subs)]})
    return made, subs


def test_details_by_parent(cloud):
    trunk, subs = trunk_of(cloud)
    other = cloud.port()
    found = cloud.rpc.get_trunk_details(CTX, port_ids=[trunk["port_id"], other["id"]])
    assert list(found) == [trunk["port_id"]]
    details = found[trunk["port_id"]]
    assert details["trunk_id"] == trunk["id"] and details["status"] == "DOWN"
    assert {(s["port_id"], s["segmentation_id"], s["mac_address"])
            for s in details["sub_ports"]} == {
        (s["id"], 101 + i, s["mac_address"]) for i, s in enumerate(subs)}


def test_subports_follow_the_parents_host(cloud):
    host = cloud.ovs_agent()
    trunk, subs = trunk_of(cloud)
    cloud.core.update_port(ADMIN, trunk["port_id"], {"binding:host_id": host})
    # the parent is to be plugged into its trunk's bridge, as Neutron tells Nova
    details = cloud.core.get_port(ADMIN, trunk["port_id"])["binding:vif_details"]
    assert details["bridge_name"] == f"tbr-{trunk['id'][:11]}"
    bound = cloud.rpc.update_subport_bindings(CTX, trunk_id=trunk["id"])
    assert bound == sorted(s["id"] for s in subs)
    for sub in subs:
        port = cloud.core.get_port(ADMIN, sub["id"])
        assert port["binding:host_id"] == host and port["binding:vif_type"] == "ovs"
        assert port["device_owner"] == "trunk:subport"
        assert port["binding:vif_details"]["bridge_name"] == "br-int"
    assert cloud.trunks.get_trunk(ADMIN, trunk["id"])["status"] == "BUILD"
    cloud.rpc.update_trunk_status(CTX, trunk_id=trunk["id"], status="ACTIVE")
    assert cloud.trunks.get_trunk(ADMIN, trunk["id"])["status"] == "ACTIVE"
    # a subport removed gives its binding back, and the trunk is DOWN until wired again
    after = cloud.trunks.remove_subports(ADMIN, trunk["id"], {
        "sub_ports": [{"port_id": subs[0]["id"]}]})
    assert after["status"] == "DOWN"
    assert cloud.core.get_port(ADMIN, subs[0]["id"])["binding:host_id"] == ""


def test_down_from_a_host_the_parent_left_is_passed_over(cloud):
    """The instance moved: the old host's agent saw it go, the new one wires it."""
    old, new = cloud.ovs_agent(), cloud.ovs_agent()
    trunk, _ = trunk_of(cloud, subports=0)
    cloud.core.update_port(ADMIN, trunk["port_id"], {"binding:host_id": new})
    cloud.rpc.update_trunk_status(CTX, trunk_id=trunk["id"], status="ACTIVE", host=new)
    cloud.rpc.update_trunk_status(CTX, trunk_id=trunk["id"], status="DOWN", host=old)
    assert cloud.trunks.get_trunk(ADMIN, trunk["id"])["status"] == "ACTIVE"
    cloud.rpc.update_trunk_status(CTX, trunk_id=trunk["id"], status="DOWN", host=new)
    assert cloud.trunks.get_trunk(ADMIN, trunk["id"])["status"] == "DOWN"


def test_unbindable_subports_leave_the_trunk_degraded(cloud):
    trunk, subs = trunk_of(cloud)
    cloud.core.update_port(ADMIN, trunk["port_id"], {"binding:host_id": "nowhere"})
    assert cloud.rpc.update_subport_bindings(CTX, trunk_id=trunk["id"]) == []
    assert cloud.trunks.get_trunk(ADMIN, trunk["id"])["status"] == "DEGRADED"


def test_a_trunk_gone_is_passed_over(cloud):
    gone = str(uuid.uuid4())
    assert cloud.rpc.update_subport_bindings(CTX, trunk_id=gone) == []
    cloud.rpc.update_trunk_status(CTX, trunk_id=gone, status="ACTIVE")


def test_unknown_status_is_refused(cloud):
    trunk, _ = trunk_of(cloud, subports=0)
    with pytest.raises(Exception, match="Unknown trunk status"):
        cloud.rpc.update_trunk_status(CTX, trunk_id=trunk["id"], status="HAPPY")
