"""What DHCP agents ask of the server over the bus, answered from a real
database on every backend, and once end to end over RabbitMQ."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import uuid

import pytest
from sqlalchemy import delete

from neutrino import exceptions as exc
from neutrino.cmd.server import build_app, load_config
from neutrino.context import Context
from neutrino.db import migrate, models
from neutrino.plugins.ml2.dhcp_rpc import DhcpRpcCallback
from neutrino.rpc.contracts.dhcp import (
    DHCP_OWNER,
    NAMESPACE,
    RESERVED_DHCP_PORT,
    dhcp_device_id,
)
from neutrino.services.agents.rpc import TIME_FORMAT, ReportStateEndpoint
from tests.conftest import BACKENDS
from tests.harness import create_database, start_server, wait_until

ADMIN = Context.admin()
CTX = {"request_id": "r", "is_admin": True}


@pytest.fixture(scope="module", params=BACKENDS)
def plugin(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"dhcprpc-{request.param}")
    url, drop = create_database(request.param, tmp)
    path = tmp / "neutrino.conf"
    path.write_text(f"[DEFAULT]\nstate_path = {tmp}\ndhcp_agents_per_network = 1\n"
                    f"[database]\nconnection = {url}\n")
    conf = load_config([str(path)])
    migrate.upgrade(url)
    app = build_app(conf, sync=True)
    yield app.router.controllers["ports"].plugin
    app.on_shutdown()
    drop()


@pytest.fixture
def rpc(plugin):
    return DhcpRpcCallback(plugin)


def agent_state(host: str) -> dict:
    return {"agent_state": {"agent_type": "DHCP agent", "binary": "neutrino-dhcp-agent",
                            "host": host, "topic": "dhcp_agent", "configurations": {},
                            "availability_zone": "nova"}}


def utc_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime(TIME_FORMAT)


@pytest.fixture
def register(plugin):
    """Register DHCP agents by their state reports; they are gone after the test,
    so that they take no networks from the next one."""
    hosts: list[str] = []

    def make() -> str:
        host = f"dhcp-{uuid.uuid4().hex[:10]}"
        endpoint = ReportStateEndpoint(plugin.db, plugin.conf)  # before the report's time
        assert endpoint.report_state(CTX, agent_state=agent_state(host), time=utc_now()) == "new"
        hosts.append(host)
        return host

    yield make
    plugin.db.write(lambda conn: conn.execute(
        delete(models.agents).where(models.agents.c.host.in_(hosts))))


def make_network(plugin, cidr: str = "10.0.0.0/24", enable_dhcp: bool = True) -> tuple:
    project = uuid.uuid4().hex
    net = plugin.create_network(ADMIN, {"project_id": project, "name": "n"})
    subnet = plugin.create_subnet(ADMIN, {"project_id": project, "network_id": net["id"],
                                          "cidr": cidr, "ip_version": 4,
                                          "enable_dhcp": enable_dhcp})
    return net, subnet


def dhcp_port_request(net: dict, subnet: dict, host: str) -> dict:
    """The body Neutron's DHCP agent sends."""
    return {"port": {"name": "", "admin_state_up": True, "network_id": net["id"],
                     "tenant_id": net["project_id"],
                     "device_id": dhcp_device_id(net["id"], host),
                     "fixed_ips": [{"subnet_id": subnet["id"]}]}}


def by_id(items: list[dict]) -> dict[str, dict]:
    return {item["id"]: item for item in items}


# --- the agent's networks --------------------------------------------------------------------


def test_active_networks_info(plugin, rpc, register):
    host = register()
    net, dhcp_subnet = make_network(plugin)
    plain = plugin.create_subnet(ADMIN, {"project_id": net["project_id"],
                                         "network_id": net["id"], "cidr": "10.9.0.0/24",
                                         "ip_version": 4, "enable_dhcp": False})
    port = plugin.create_port(ADMIN, {"project_id": net["project_id"],
                                      "network_id": net["id"]})
    no_dhcp, _ = make_network(plugin, enable_dhcp=False)

    infos = by_id(rpc.get_active_networks_info(CTX, host=host))
    assert net["id"] in infos and no_dhcp["id"] not in infos
    info = infos[net["id"]]
    assert [s["id"] for s in info["subnets"]] == [dhcp_subnet["id"]]
    assert info["subnets"][0]["cidr"] == "10.0.0.0/24"
    assert info["subnets"][0]["allocation_pools"] == dhcp_subnet["allocation_pools"]
    assert info["non_local_subnets"] == []
    assert [p["id"] for p in info["ports"]] == [port["id"]]
    assert info["ports"][0]["fixed_ips"] == port["fixed_ips"]
    assert info["mtu"] == 1500 and info["admin_state_up"] is True
    assert info["project_id"] == net["project_id"]
    assert info["provider:network_type"] == "local"

    everything = by_id(rpc.get_active_networks_info(CTX, host=host,
                                                    enable_dhcp_filter=False))
    assert [s["id"] for s in everything[net["id"]]["subnets"]] == sorted(
        [dhcp_subnet["id"], plain["id"]])

    assert net["id"] in rpc.get_active_networks(CTX, host=host)
    assert rpc.get_active_networks_info(CTX, host="no-such-host-" + uuid.uuid4().hex) == []

    # one network: every subnet; a missing network: None
    one = rpc.get_network_info(CTX, network_id=net["id"], host=host)
    assert [s["id"] for s in one["subnets"]] == sorted([dhcp_subnet["id"], plain["id"]])
    assert [p["id"] for p in one["ports"]] == [port["id"]]
    assert one["non_local_subnets"] == []
    assert rpc.get_network_info(CTX, network_id=str(uuid.uuid4()), host=host) is None

    # an administratively down network is not served
    plugin.update_network(ADMIN, net["id"], {"admin_state_up": False})
    assert net["id"] not in by_id(rpc.get_active_networks_info(CTX, host=host))
    assert net["id"] not in rpc.get_active_networks(CTX, host=host)

    [listed] = rpc.get_networks(CTX, filters={"id": [net["id"]]}, fields=["id", "mtu"])
    assert listed == {"id": net["id"], "mtu": 1500}

    with pytest.raises(ValueError, match="host"):
        rpc.get_active_networks_info(CTX)


def test_two_agents_share_the_networks(plugin, rpc, register):
    """dhcp_agents_per_network = 1: each network on exactly one of two agents,
    whether the agent takes it when it asks (auto-scheduling) or it is given one
    when its DHCP subnet is made."""
    before = [make_network(plugin)[0]["id"] for _ in range(2)]  # no agent yet
    first, second = register(), register()
    served_first = {n["id"] for n in rpc.get_active_networks_info(CTX, host=first)}
    assert set(before) <= served_first
    after = [make_network(plugin)[0]["id"] for _ in range(2)]  # scheduled at once
    served_first = {n["id"] for n in rpc.get_active_networks_info(CTX, host=first)}
    served_second = {n["id"] for n in rpc.get_active_networks_info(CTX, host=second)}
    mine = set(before + after)
    assert mine <= served_first | served_second
    assert not mine & served_first & served_second
    assert mine & served_second  # the less loaded agent got the new ones
    for network_id in mine:
        assert len(plugin.dhcp.list_dhcp_agents_hosting_network(ADMIN, network_id)) == 1


# --- DHCP ports --------------------------------------------------------------------------------


def test_create_update_and_release_dhcp_port(plugin, rpc, register):
    host = register()
    net, subnet = make_network(plugin)
    port = rpc.create_dhcp_port(CTX, port=dhcp_port_request(net, subnet, host), host=host)
    assert port["device_owner"] == DHCP_OWNER
    assert port["binding:host_id"] == host
    assert port["device_id"] == dhcp_device_id(net["id"], host)
    assert port["project_id"] == net["project_id"]
    [ip] = port["fixed_ips"]
    assert ip["subnet_id"] == subnet["id"]
    assert ipaddress.ip_address(ip["ip_address"]) in ipaddress.ip_network("10.0.0.0/24")
    info = by_id(rpc.get_active_networks_info(CTX, host=host))[net["id"]]
    assert port["id"] in {p["id"] for p in info["ports"]}
    assert rpc.get_dhcp_port(CTX, port_id=port["id"])["id"] == port["id"]

    updated = rpc.update_dhcp_port(CTX, port_id=port["id"], host=host, port={"port": {
        "network_id": net["id"],
        "fixed_ips": [{"subnet_id": subnet["id"], "ip_address": "10.0.0.50"}]}})
    assert updated["fixed_ips"] == [{"subnet_id": subnet["id"], "ip_address": "10.0.0.50"}]
    assert updated["binding:host_id"] == host
    # another host's agent may not touch it, nor anyone another device's port
    other = "other-" + uuid.uuid4().hex[:8]
    assert rpc.update_dhcp_port(CTX, port_id=port["id"], host=other,
                                port={"port": {"network_id": net["id"]}}) is None
    vm_port = plugin.create_port(ADMIN, {"project_id": net["project_id"],
                                         "network_id": net["id"], "device_id": "vm"})
    assert rpc.update_dhcp_port(CTX, port_id=vm_port["id"], host=host,
                                port={"port": {"network_id": net["id"], "name": "x"}}) is None
    assert plugin.get_port(ADMIN, vm_port["id"])["name"] == ""
    assert plugin.get_port(ADMIN, port["id"])["binding:host_id"] == host
    assert rpc.update_dhcp_port(CTX, port_id=str(uuid.uuid4()), host=host,
                                port={"port": {"network_id": net["id"]}}) is None

    assert rpc.dhcp_ready_on_ports(CTX, port_ids=[port["id"]]) is None
    rpc.release_dhcp_port(CTX, network_id=net["id"], device_id=port["device_id"], host=host)
    with pytest.raises(exc.PortNotFound):
        plugin.get_port(ADMIN, port["id"])
    assert plugin.get_port(ADMIN, vm_port["id"])["device_id"] == "vm"  # not a DHCP port


def test_reserved_dhcp_port_is_reused(plugin, rpc, register):
    host = register()
    net, subnet = make_network(plugin)
    kept = plugin.create_port(ADMIN, {
        "project_id": net["project_id"], "network_id": net["id"],
        "device_owner": DHCP_OWNER, "device_id": RESERVED_DHCP_PORT,
        "fixed_ips": [{"subnet_id": subnet["id"]}]})
    second = plugin.create_subnet(ADMIN, {"project_id": net["project_id"],
                                          "network_id": net["id"], "cidr": "10.1.0.0/24",
                                          "ip_version": 4})
    request = dhcp_port_request(net, subnet, host)
    request["port"]["fixed_ips"].append({"subnet_id": second["id"]})
    port = rpc.create_dhcp_port(CTX, port=request, host=host)
    assert port["id"] == kept["id"]
    assert port["device_id"] == dhcp_device_id(net["id"], host)
    assert port["binding:host_id"] == host
    ips = {ip["subnet_id"]: ip["ip_address"] for ip in port["fixed_ips"]}
    assert ips[subnet["id"]] == kept["fixed_ips"][0]["ip_address"]  # what clients know
    assert second["id"] in ips  # and an address on the subnet made meanwhile
    dhcp_ports = [p for p in rpc.get_network_info(CTX, network_id=net["id"])["ports"]
                  if p["device_owner"] == DHCP_OWNER]
    assert [p["id"] for p in dhcp_ports] == [kept["id"]]
    # with none reserved any more, the next agent gets a port of its own
    other = register()
    fresh = rpc.create_dhcp_port(CTX, port=dhcp_port_request(net, subnet, other), host=other)
    assert fresh["id"] != kept["id"] and fresh["binding:host_id"] == other


def test_races_and_bad_requests(plugin, rpc, register):
    host = register()
    net, subnet = make_network(plugin)
    gone = {"port": {**dhcp_port_request(net, subnet, host)["port"],
                     "network_id": str(uuid.uuid4())}}
    assert rpc.create_dhcp_port(CTX, port=gone, host=host) is None  # network deleted
    other_net, other_subnet = make_network(plugin, "10.5.0.0/24")
    request = dhcp_port_request(other_net, other_subnet, host)
    plugin.delete_subnet(ADMIN, other_subnet["id"])
    assert rpc.create_dhcp_port(CTX, port=request, host=host) is None  # subnet deleted

    with pytest.raises(ValueError, match="port must be"):
        rpc.create_dhcp_port(CTX, port={"network_id": net["id"]}, host=host)
    with pytest.raises(ValueError, match="network_id"):
        rpc.create_dhcp_port(CTX, port={"port": {"device_id": "d"}}, host=host)
    with pytest.raises(ValueError, match="status"):
        rpc.create_dhcp_port(CTX, port={"port": {"network_id": net["id"], "status": "UP"}},
                             host=host)
    with pytest.raises(ValueError, match="fixed_ips"):
        rpc.create_dhcp_port(CTX, port={"port": {"network_id": net["id"],
                                                 "fixed_ips": "10.0.0.3"}}, host=host)
    with pytest.raises(ValueError, match="host"):
        rpc.create_dhcp_port(CTX, port=dhcp_port_request(net, subnet, host))
    with pytest.raises(ValueError, match="device_id"):
        rpc.release_dhcp_port(CTX, network_id=net["id"], host=host)
    port = rpc.create_dhcp_port(CTX, port=dhcp_port_request(net, subnet, host), host=host)
    with pytest.raises(ValueError, match="is on network"):
        rpc.update_dhcp_port(CTX, port_id=port["id"], host=host,
                             port={"port": {"network_id": other_net["id"]}})
    assert plugin.get_port(ADMIN, port["id"])["network_id"] == net["id"]
    assert [p["device_owner"] for p in rpc.get_network_info(
        CTX, network_id=net["id"])["ports"]] == [DHCP_OWNER]


# --- over RabbitMQ, end to end -----------------------------------------------------------------


def test_dhcp_agent_gets_its_networks_over_rabbitmq(tmp_path, rabbit_url):
    """A server process on RabbitMQ; an in-process DHCP agent registers by its
    heartbeats over the bus; a client in this process asks, as the agent would,
    for the agent's networks (in the ``dhcp`` namespace of ``q-plugin``)."""
    from neutrino import config
    from neutrino.agents.base import AGENT_OPTIONS
    from neutrino.agents.dhcp import DhcpAgent
    from neutrino.rpc import topics
    from neutrino.rpc.bus import Bus
    from neutrino.rpc.client import RpcClient
    from neutrino.rpc.transport import get_transport

    url, drop = create_database("sqlite", tmp_path)
    server = start_server(tmp_path, url, auth="noauth",
                          extra=f"transport_url = {rabbit_url}\n")
    try:
        client = server.client(None)
        net = client.network()
        subnet = client.subnet(net["id"], "10.0.0.0/24")
        port = client.port(net["id"])
        host = f"e2e-dhcp-{uuid.uuid4().hex[:8]}"
        path = tmp_path / "agent.conf"
        path.write_text(f"[DEFAULT]\nhost = {host}\ntransport_url = {rabbit_url}\n"
                        "[agent]\nreport_interval = 1\n")
        conf = config.load([str(path)])
        conf.register((AGENT_OPTIONS, *DhcpAgent.option_groups))

        def registered() -> bool:
            return bool(client.get("/v2.0/agents", params={"host": host}).json()["agents"])

        async def scenario() -> list:
            agent = DhcpAgent(conf, Bus(get_transport(rabbit_url), timeout=5))
            stop = asyncio.Event()
            running = asyncio.create_task(agent.run(stop))
            bus = Bus(get_transport(rabbit_url), timeout=5)
            await bus.start()
            loop = asyncio.get_running_loop()
            try:
                await loop.run_in_executor(None, lambda: wait_until(registered,
                                                                  what="registration"))
                rpc = RpcClient(bus, topics.PLUGIN, "1.1", namespace=NAMESPACE)
                return await rpc.call(CTX, "get_active_networks_info", host=host)
            finally:
                stop.set()
                await running
                await bus.close()

        [info] = asyncio.run(scenario())
        assert info["id"] == net["id"]
        assert [s["id"] for s in info["subnets"]] == [subnet["id"]]
        assert port["id"] in {p["id"] for p in info["ports"]}
        assert info["non_local_subnets"] == []
    finally:
        server.stop()
        drop()
