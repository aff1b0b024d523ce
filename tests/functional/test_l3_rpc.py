"""What L3 agents ask of the L3 plugin over the bus, answered from a real database."""

from __future__ import annotations

import asyncio
import datetime
import json
import uuid

import pytest
from sqlalchemy import event

from neutrino.cmd.server import build_app, load_config
from neutrino.context import Context
from neutrino.db import migrate, models
from neutrino.db.query import CollectionQuery
from neutrino.rpc import envelope, topics
from neutrino.rpc.bus import Bus
from neutrino.rpc.errors import RemoteError
from neutrino.rpc.server import RpcServer
from neutrino.rpc.transport import get_transport
from neutrino.services.agents.rpc import TIME_FORMAT, ReportStateEndpoint
from neutrino.services.l3.rpc import (
    DistributedRoutersNotSupported,
    L3RpcCallback,
    TooManyExternalNetworks,
)
from tests.conftest import BACKENDS
from tests.harness import create_database

ADMIN = Context.admin()
CTX = {"request_id": "r"}


class Cloud:
    """One server's plugins on a fresh database."""

    def __init__(self, app):
        self.app = app
        self.l3 = app.router.controllers["routers"].plugin
        self.core = app.router.controllers["ports"].plugin
        self.agents = app.router.controllers["agents"].plugin
        [self.rpc] = self.l3.rpc_endpoints()[topics.L3_PLUGIN]
        self.reports = ReportStateEndpoint(self.l3.db, self.l3.conf)


def _cloud(backend, tmp_path_factory, name):
    tmp = tmp_path_factory.mktemp(f"{name}-{backend}")
    url, drop = create_database(backend, tmp)
    path = tmp / "neutrino.conf"
    # the module's tests share one project: no quotas to run out of
    path.write_text(f"[DEFAULT]\nstate_path = {tmp}\nservice_plugins = router\n"
                    f"[database]\nconnection = {url}\n"
                    "[quotas]\nquota_router = -1\nquota_floatingip = -1\n"
                    "quota_network = -1\nquota_subnet = -1\nquota_port = -1\n")
    conf = load_config([str(path)])
    migrate.upgrade(url)
    return Cloud(build_app(conf, sync=True)), drop


@pytest.fixture(scope="module", params=BACKENDS)
def cloud(request, tmp_path_factory):
    made, drop = _cloud(request.param, tmp_path_factory, "l3rpc")
    yield made
    made.app.on_shutdown()
    drop()


@pytest.fixture
def agent(cloud):
    """Registers L3 agents on new hosts; they are disabled after the test, so the
    next test's routers are not scheduled to them."""
    hosts = []

    def register(internal_only: bool = True) -> str:
        host = f"l3-{uuid.uuid4().hex[:12]}"
        sent = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
        status = cloud.reports.report_state(CTX, {"agent_state": {
            "agent_type": "L3 agent", "binary": "neutrino-l3-agent", "host": host,
            "topic": "l3_agent", "availability_zone": "nova",
            "configurations": {"handle_internal_only_routers": internal_only}}},
            time=sent.strftime(TIME_FORMAT))
        assert status == "new"
        hosts.append(host)
        return host

    yield register
    for host in hosts:
        [found] = cloud.agents.get_agents(ADMIN, CollectionQuery(filters={"host": [host]}))
        cloud.agents.update_agent(ADMIN, found["id"], {"admin_state_up": False})


def network(cloud, cidr, external=False, project="p1"):
    net = cloud.core.create_network(ADMIN, {"project_id": project, "name": "n",
                                            "router:external": external})
    subnet = cloud.core.create_subnet(ADMIN, {"project_id": project, "network_id": net["id"],
                                              "cidr": cidr, "ip_version": 4})
    return net, subnet


def topology(cloud):
    """A router with a gateway, an interface on a tenant subnet and a floating IP
    for a port on that subnet."""
    ext, ext_subnet = network(cloud, "172.24.4.0/24", external=True)
    net, subnet = network(cloud, "10.0.0.0/24")
    router = cloud.l3.create_router(ADMIN, {
        "project_id": "p1", "name": "r", "external_gateway_info": {"network_id": ext["id"]}})
    cloud.l3.add_router_interface(ADMIN, router["id"], {"subnet_id": subnet["id"]})
    vm = cloud.core.create_port(ADMIN, {"project_id": "p1", "network_id": net["id"]})
    fip = cloud.l3.create_floatingip(ADMIN, {"project_id": "p1",
                                             "floating_network_id": ext["id"],
                                             "port_id": vm["id"]})
    return {"ext": ext, "ext_subnet": ext_subnet, "net": net, "subnet": subnet,
            "router": router, "vm": vm, "fip": fip}


def internal_router(cloud, project="p1"):
    return cloud.l3.create_router(ADMIN, {"project_id": project, "name": "internal"})


def test_registered_on_the_l3_topic(cloud):
    assert isinstance(cloud.rpc, L3RpcCallback)
    assert cloud.rpc.rpc_version == "1.12"


def test_sync_routers_gives_the_full_router(cloud, agent):
    host = agent()
    t = topology(cloud)
    # a second subnet on the external network: an extra subnet of the gateway port
    extra = cloud.core.create_subnet(ADMIN, {"project_id": "p1", "network_id": t["ext"]["id"],
                                             "cidr": "172.24.5.0/24", "ip_version": 4})
    router_id = t["router"]["id"]
    cloud.l3.update_router(ADMIN, router_id, {"routes": [
        {"destination": "192.168.0.0/24", "nexthop": "10.0.0.5"}]})
    assert router_id in cloud.rpc.get_router_ids(CTX, host=host)

    [router] = cloud.rpc.sync_routers(CTX, host=host, router_ids=[router_id])
    json.dumps(router)  # it travels as JSON
    assert router["id"] == router_id and router["name"] == "r"
    assert router["project_id"] == router["tenant_id"] == "p1"
    assert router["admin_state_up"] is True and router["status"] == "ACTIVE"
    assert router["ha"] is False and router["distributed"] is False
    assert router["gw_port_host"] is None
    assert router["enable_snat"] is True
    assert router["routes"] == [{"destination": "192.168.0.0/24", "nexthop": "10.0.0.5"}]
    assert router["availability_zone_hints"] == []
    gateway = router["external_gateway_info"]
    assert gateway["network_id"] == t["ext"]["id"] and gateway["enable_snat"] is True

    gw_port = router["gw_port"]
    assert gw_port["id"] == router["gw_port_id"]
    assert gw_port["device_owner"] == "network:router_gateway"
    assert gw_port["device_id"] == router_id and gw_port["network_id"] == t["ext"]["id"]
    assert gw_port["binding:host_id"] == host  # bound to the agent's host
    fixed_subnets = {ip["subnet_id"] for ip in gw_port["fixed_ips"]}
    assert {s["id"] for s in gw_port["subnets"]} == fixed_subnets
    assert all(ip["prefixlen"] == 24 for ip in gw_port["fixed_ips"])
    assert {s["id"] for s in gw_port["extra_subnets"]} == (
        {t["ext_subnet"]["id"], extra["id"]} - fixed_subnets)
    assert gw_port["mtu"] == t["ext"]["mtu"]
    assert gw_port["address_scopes"] == {"4": None, "6": None}
    by_id = {s["id"]: s for s in gw_port["subnets"] + gw_port["extra_subnets"]}
    assert by_id[t["ext_subnet"]["id"]] == {
        "id": t["ext_subnet"]["id"], "cidr": "172.24.4.0/24", "gateway_ip": "172.24.4.1",
        "dns_nameservers": [], "ipv6_ra_mode": None, "subnetpool_id": None,
        "host_routes": []}

    [interface] = router["_interfaces"]
    assert interface["device_owner"] == "network:router_interface"
    assert interface["device_id"] == router_id
    assert interface["network_id"] == t["net"]["id"]
    assert interface["binding:host_id"] == host
    assert interface["fixed_ips"] == [{"subnet_id": t["subnet"]["id"],
                                       "ip_address": "10.0.0.1", "prefixlen": 24}]
    [subnet] = interface["subnets"]
    assert (subnet["id"], subnet["cidr"], subnet["gateway_ip"]) == (
        t["subnet"]["id"], "10.0.0.0/24", "10.0.0.1")
    assert interface["extra_subnets"] == []
    assert interface["mtu"] == t["net"]["mtu"]
    assert interface["address_scopes"] == {"4": None, "6": None}

    [fip] = router["_floatingips"]
    assert fip["id"] == t["fip"]["id"]
    assert fip["floating_ip_address"] == t["fip"]["floating_ip_address"]
    assert fip["fixed_ip_address"] == t["vm"]["fixed_ips"][0]["ip_address"]
    assert fip["port_id"] == t["vm"]["id"] and fip["router_id"] == router_id
    assert fip["floating_network_id"] == t["ext"]["id"]
    assert fip["status"] == "DOWN" and fip["project_id"] == "p1"
    assert fip["fixed_ip_address_scope"] is None and fip["host"] is None

    # the ports are bound: a second sync does not move them again
    again = cloud.rpc.sync_routers(CTX, host=host, router_ids=[router_id])
    assert again[0]["gw_port"]["revision_number"] == gw_port["revision_number"]


def test_address_scopes_of_pools(cloud, agent):
    """A subnet from a pool in an address scope: the interface and the floating
    IP of an address on it carry the scope."""
    host = agent()
    scope = str(uuid.uuid4())
    pool = cloud.core.create_subnetpool(ADMIN, {
        "project_id": "p1", "name": "pool", "prefixes": ["10.80.0.0/16"]})
    # no API makes address scopes yet (the API refuses an id that names none): the
    # pool joins one in the database, as an address scope would put it there
    cloud.l3.db.write(lambda conn: conn.execute(models.subnetpools.update().where(
        models.subnetpools.c.id == pool["id"]).values(address_scope_id=scope)))
    ext, _ = network(cloud, "172.28.0.0/24", external=True)
    net = cloud.core.create_network(ADMIN, {"project_id": "p1", "name": "scoped"})
    subnet = cloud.core.create_subnet(ADMIN, {
        "project_id": "p1", "network_id": net["id"], "ip_version": 4,
        "subnetpool_id": pool["id"], "cidr": "10.80.1.0/24"})
    router = cloud.l3.create_router(ADMIN, {
        "project_id": "p1", "name": "r", "external_gateway_info": {"network_id": ext["id"]}})
    cloud.l3.add_router_interface(ADMIN, router["id"], {"subnet_id": subnet["id"]})
    vm = cloud.core.create_port(ADMIN, {"project_id": "p1", "network_id": net["id"]})
    cloud.l3.create_floatingip(ADMIN, {"project_id": "p1", "floating_network_id": ext["id"],
                                       "port_id": vm["id"]})
    [synced] = cloud.rpc.sync_routers(CTX, host=host, router_ids=[router["id"]])
    assert synced["_interfaces"][0]["address_scopes"] == {"4": scope, "6": None}
    assert synced["_interfaces"][0]["subnets"][0]["subnetpool_id"] == pool["id"]
    assert synced["gw_port"]["address_scopes"] == {"4": None, "6": None}
    assert synced["_floatingips"][0]["fixed_ip_address_scope"] == scope


def test_without_router_ids_every_router_of_the_agent(cloud, agent):
    host = agent()
    first, second = internal_router(cloud), internal_router(cloud)
    ids = cloud.rpc.get_router_ids(CTX, host=host)
    assert {first["id"], second["id"]} <= set(ids)
    synced = cloud.rpc.sync_routers(CTX, host=host)
    assert {r["id"] for r in synced} == set(ids)
    router = next(r for r in synced if r["id"] == first["id"])
    assert router["_interfaces"] == [] and router["_floatingips"] == []
    assert "gw_port" not in router and router["external_gateway_info"] is None
    # router_ids: only those asked for
    only = cloud.rpc.sync_routers(CTX, host=host, router_ids=[second["id"]])
    assert [r["id"] for r in only] == [second["id"]]


def test_sync_reads_do_not_grow_with_routers(cloud, agent):
    """The sync data is read in batches: as many statements for 6 routers with
    interfaces and floating IPs as for 2."""
    host = agent()
    made = [topology(cloud)["router"]["id"] for _ in range(6)]
    cloud.rpc.sync_routers(CTX, host=host, router_ids=made)  # binds their ports
    statements = []

    def count(conn, cursor, statement, *args):
        statements.append(statement)

    engine = cloud.l3.db.engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        counts = []
        for ids in (made[:2], made):
            statements.clear()
            assert len(cloud.rpc.sync_routers(CTX, host=host, router_ids=ids)) == len(ids)
            counts.append(len(statements))
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert counts[0] == counts[1]


def test_a_router_stays_with_its_agent(cloud, agent):
    first = agent()
    router = internal_router(cloud)
    assert router["id"] in cloud.rpc.get_router_ids(CTX, host=first)
    second = agent()
    assert router["id"] not in cloud.rpc.get_router_ids(CTX, host=second)
    assert cloud.rpc.sync_routers(CTX, host=second, router_ids=[router["id"]]) == []
    # a router made now goes to one of them, and only one hears of it
    other = internal_router(cloud)
    holders = [host for host in (first, second)
               if other["id"] in cloud.rpc.get_router_ids(CTX, host=host)]
    assert len(holders) == 1


def test_unknown_host_gets_nothing(cloud, agent):
    agent()
    internal_router(cloud)
    assert cloud.rpc.get_router_ids(CTX, host="nowhere") == []
    assert cloud.rpc.sync_routers(CTX, host="nowhere") == []


def test_agent_without_internal_only_routers(cloud, agent):
    host = agent(internal_only=False)
    internal = internal_router(cloud)
    ext, _ = network(cloud, "172.25.0.0/24", external=True)
    outside = cloud.l3.create_router(ADMIN, {
        "project_id": "p1", "name": "out", "external_gateway_info": {"network_id": ext["id"]}})
    ids = cloud.rpc.get_router_ids(CTX, host=host)
    assert internal["id"] not in ids and outside["id"] in ids
    assert [r["id"] for r in cloud.rpc.sync_routers(
        CTX, host=host, router_ids=[internal["id"], outside["id"]])] == [outside["id"]]


def test_a_disabled_router_is_not_synced(cloud, agent):
    host = agent()
    router = internal_router(cloud)
    assert cloud.rpc.sync_routers(CTX, host=host, router_ids=[router["id"]])
    cloud.l3.update_router(ADMIN, router["id"], {"admin_state_up": False})
    # still the agent's, but the agent is to remove it
    assert router["id"] in cloud.rpc.get_router_ids(CTX, host=host)
    assert cloud.rpc.sync_routers(CTX, host=host, router_ids=[router["id"]]) == []


def test_floating_ip_statuses(cloud, agent):
    agent()
    t = topology(cloud)
    fip_id, router_id = t["fip"]["id"], t["router"]["id"]
    before = cloud.l3.get_floatingip(ADMIN, fip_id)
    unknown = str(uuid.uuid4())
    assert cloud.rpc.update_floatingip_statuses(
        CTX, router_id=router_id, fip_statuses={fip_id: "ACTIVE", unknown: "ACTIVE"}) is None
    after = cloud.l3.get_floatingip(ADMIN, fip_id)
    assert after["status"] == "ACTIVE"
    assert after["revision_number"] > before["revision_number"]
    # the same status again changes nothing
    cloud.rpc.update_floatingip_statuses(CTX, router_id=router_id,
                                         fip_statuses={fip_id: "ACTIVE"})
    assert cloud.l3.get_floatingip(ADMIN, fip_id)["revision_number"] == \
        after["revision_number"]
    cloud.rpc.update_floatingip_statuses(CTX, router_id=router_id,
                                         fip_statuses={fip_id: "DOWN"})
    assert cloud.l3.get_floatingip(ADMIN, fip_id)["status"] == "DOWN"
    # another router's agent does not decide for this router's floating IP,
    # and a status that is none is ignored
    other = internal_router(cloud)
    cloud.rpc.update_floatingip_statuses(CTX, router_id=other["id"],
                                         fip_statuses={fip_id: "ACTIVE"})
    cloud.rpc.update_floatingip_statuses(CTX, router_id=router_id,
                                         fip_statuses={fip_id: "BROKEN"})
    assert cloud.l3.get_floatingip(ADMIN, fip_id)["status"] == "DOWN"
    # disassociated: whatever its old router's agent says, it is DOWN
    cloud.rpc.update_floatingip_statuses(CTX, router_id=router_id,
                                         fip_statuses={fip_id: "ACTIVE"})
    cloud.l3.update_floatingip(ADMIN, fip_id, {"port_id": None})
    cloud.rpc.update_floatingip_statuses(CTX, router_id=router_id,
                                         fip_statuses={fip_id: "ACTIVE"})
    assert cloud.l3.get_floatingip(ADMIN, fip_id)["status"] == "DOWN"


def test_service_plugins_and_unsupported_calls(cloud):
    assert cloud.rpc.get_service_plugin_list(CTX) == ["router"]
    assert cloud.rpc.get_host_ha_router_count(CTX, host="h") == 0
    assert cloud.rpc.update_all_ha_network_port_statuses(CTX, host="h") is None
    with pytest.raises(DistributedRoutersNotSupported, match="agent_mode = legacy"):
        cloud.rpc.get_agent_gateway_port(CTX, network_id=str(uuid.uuid4()), host="h")


def test_get_networks(cloud):
    net, _ = network(cloud, "10.9.0.0/24")
    [found] = cloud.rpc.get_networks(CTX, filters={"id": [net["id"]]},
                                     fields=["id", "mtu"])
    assert found == {"id": net["id"], "mtu": net["mtu"]}


def test_over_the_bus(cloud, agent):
    host = agent()
    t = topology(cloud)

    async def scenario():
        bus = Bus(get_transport(f"memory://{uuid.uuid4().hex}"), timeout=10)
        await bus.start()
        endpoints = cloud.l3.rpc_endpoints()[topics.L3_PLUGIN]
        await RpcServer(bus, topics.L3_PLUGIN, None, endpoints).start()

        async def call(method, version="1.0", **args):
            # as the agent: ``host`` is an argument, the call goes to the topic
            request = envelope.Request(method=method, version=version, args=args, context=CTX)
            return await bus.call(topics.L3_PLUGIN, request, None)

        ids = await call("get_router_ids", "1.9", host=host)
        routers = await call("sync_routers", host=host, router_ids=ids)
        with pytest.raises(RemoteError) as raised:
            await call("get_agent_gateway_port", "1.2", network_id=t["ext"]["id"], host=host)
        await bus.close()
        return ids, routers, raised.value.type

    ids, routers, error = asyncio.run(scenario())
    assert t["router"]["id"] in ids
    router = next(r for r in routers if r["id"] == t["router"]["id"])
    assert router["gw_port"]["subnets"] and router["_interfaces"][0]["subnets"]
    assert router["_floatingips"][0]["id"] == t["fip"]["id"]
    assert error == "DistributedRoutersNotSupported"


@pytest.mark.parametrize("backend", BACKENDS)
def test_external_network_id(backend, tmp_path_factory):
    """On a database of its own: it counts every external network."""
    fresh, drop = _cloud(backend, tmp_path_factory, "l3rpc-ext")
    try:
        network(fresh, "10.1.0.0/24")  # not external
        assert fresh.rpc.get_external_network_id(CTX) is None
        ext, _ = network(fresh, "172.26.0.0/24", external=True, project="p2")
        assert fresh.rpc.get_external_network_id(CTX) == ext["id"]
        network(fresh, "172.27.0.0/24", external=True)
        with pytest.raises(TooManyExternalNetworks,
                           match="More than one external network exists."):
            fresh.rpc.get_external_network_id(CTX)
    finally:
        fresh.app.on_shutdown()
        drop()
