"""A DHCP agent on a routed network serves the subnets of the segments its
host reaches; the others are non-local to it (Neutron's get_network_info)."""

from __future__ import annotations

import uuid

import pytest

from neutrino.cmd.server import build_app, load_config
from neutrino.context import Context
from neutrino.db import migrate
from neutrino.db.query import CollectionQuery
from neutrino.plugins.ml2.dhcp_rpc import DhcpRpcCallback
from neutrino.plugins.ml2.host_segments import AgentReports
from tests.conftest import BACKENDS
from tests.harness import create_database

ADMIN = Context.admin()
CTX = {"request_id": "r", "is_admin": True}


@pytest.fixture(scope="module", params=BACKENDS)
def plugin(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"routed-dhcp-{request.param}")
    url, drop = create_database(request.param, tmp)
    path = tmp / "neutrino.conf"
    path.write_text(f"[DEFAULT]\nstate_path = {tmp}\nservice_plugins = router,segments\n"
                    "[ml2]\ntype_drivers = flat,vxlan\ntenant_network_types = vxlan\n"
                    "mechanism_drivers = logger\n[ml2_type_flat]\nflat_networks = *\n"
                    "[ml2_type_vxlan]\nvni_ranges = 1000:1999\n"
                    f"[database]\nconnection = {url}\n")
    migrate.upgrade(url)
    app = build_app(load_config([str(path)]), sync=True)
    yield app.router.controllers["ports"].plugin
    app.on_shutdown()
    drop()


def test_the_agent_gets_its_segments_subnets(plugin):
    rpc = DhcpRpcCallback(plugin)
    tag = uuid.uuid4().hex[:6]
    rack1, rack2, host = f"r1-{tag}", f"r2-{tag}", f"dhcp-{tag}"
    net = plugin.create_network(ADMIN, {"project_id": "p", "name": "routed",
                                        "provider:network_type": "flat",
                                        "provider:physical_network": rack1,
                                        "admin_state_up": True})
    second = plugin.create_segment(ADMIN, {"network_id": net["id"], "network_type": "flat",
                                           "physical_network": rack2})
    [first] = [s for s in plugin.get_segments(ADMIN, _query(net["id"]))
               if s["id"] != second["id"]]
    subnets = {}
    for segment, cidr in ((first, "10.97.1.0/24"), (second, "10.97.2.0/24")):
        subnets[segment["id"]] = plugin.create_subnet(ADMIN, {
            "project_id": "p", "network_id": net["id"], "ip_version": 4, "cidr": cidr,
            "segment_id": segment["id"], "enable_dhcp": True})
    # the host's L2 agent maps rack2 only
    plugin.db.write(lambda conn: AgentReports()(conn, {
        "host": host, "start_flag": True,
        "configurations": {"bridge_mappings": {rack2: "br-2"}}}))
    info = rpc.get_network_info(CTX, network_id=net["id"], host=host)
    assert [s["id"] for s in info["subnets"]] == [subnets[second["id"]]["id"]]
    assert [s["id"] for s in info["non_local_subnets"]] == [subnets[first["id"]]["id"]]
    # a host on no segment serves none of them
    elsewhere = rpc.get_network_info(CTX, network_id=net["id"], host=f"none-{tag}")
    assert elsewhere["subnets"] == [] and len(elsewhere["non_local_subnets"]) == 2


def _query(network_id: str) -> CollectionQuery:
    return CollectionQuery(filters={"network_id": [network_id]})
