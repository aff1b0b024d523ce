"""What the routers' sync data carries of VPN services, and the statuses the
agents report on ``ipsec_driver``, from a real database."""

from __future__ import annotations

import asyncio
import json
import typing
import uuid

import pytest
from sqlalchemy import event

from neutrino.context import Context
from neutrino.rpc import envelope
from neutrino.rpc.bus import Bus
from neutrino.rpc.contracts import vpn as contract
from neutrino.rpc.server import RpcServer
from neutrino.rpc.transport import get_transport
from tests.conftest import BACKENDS
from tests.functional.test_l3_rpc import CTX, Cloud, agent, network, topology  # noqa: F401

ADMIN = Context.admin()


def _cloud(backend, tmp_path_factory):
    from neutrino.cmd.server import build_app, load_config
    from neutrino.db import migrate
    from tests.harness import create_database

    tmp = tmp_path_factory.mktemp(f"vpn-rpc-{backend}")
    url, drop = create_database(backend, tmp)
    path = tmp / "neutrino.conf"
    path.write_text(f"[DEFAULT]\nstate_path = {tmp}\nservice_plugins = router,vpnaas\n"
                    f"[database]\nconnection = {url}\n"
                    "[quotas]\nquota_router = -1\nquota_floatingip = -1\n"
                    "quota_network = -1\nquota_subnet = -1\nquota_port = -1\n")
    conf = load_config([str(path)])
    migrate.upgrade(url)
    return Cloud(build_app(conf, sync=True)), drop


@pytest.fixture(scope="module", params=BACKENDS)
def cloud(request, tmp_path_factory):
    made, drop = _cloud(request.param, tmp_path_factory)
    made.vpn = made.app.router.controllers["vpn/vpnservices"].plugin
    [made.status] = made.vpn.rpc_endpoints()[contract.TOPIC]
    yield made
    made.app.on_shutdown()
    drop()


def vpn_site(cloud, endpoint_groups: bool = False) -> dict:
    """A router of p1 with a service, one connection and its policies."""
    t = topology(cloud)
    vpn = cloud.vpn
    base = {"project_id": "p1", "name": "", "description": ""}
    ike = vpn.create_ikepolicy(ADMIN, {**base, "ike_version": "v2", "pfs": "group14",
                                       "auth_algorithm": "sha256",
                                       "encryption_algorithm": "aes-256",
                                       "phase1_negotiation_mode": "main",
                                       "lifetime": {"value": 7200}})
    ipsec = vpn.create_ipsecpolicy(ADMIN, {**base, "transform_protocol": "esp",
                                           "auth_algorithm": "sha256",
                                           "encryption_algorithm": "aes-128",
                                           "encapsulation_mode": "tunnel", "pfs": "group5",
                                           "lifetime": {}})
    service = vpn.create_vpnservice(ADMIN, {
        **base, "router_id": t["router"]["id"], "admin_state_up": True,
        "subnet_id": None if endpoint_groups else t["subnet"]["id"]})
    extra: dict[str, typing.Any] = {"peer_cidrs": ["192.168.50.0/24"]}
    if endpoint_groups:
        local = vpn.create_endpoint_group(ADMIN, {**base, "type": "subnet",
                                                  "endpoints": [t["subnet"]["id"]]})
        peer = vpn.create_endpoint_group(ADMIN, {**base, "type": "cidr",
                                                 "endpoints": ["192.168.60.0/24",
                                                               "192.168.61.0/24"]})
        extra = {"peer_cidrs": [], "local_ep_group_id": local["id"],
                 "peer_ep_group_id": peer["id"]}
    connection = vpn.create_ipsec_site_connection(ADMIN, {
        **base, "vpnservice_id": service["id"], "ikepolicy_id": ike["id"],
        "ipsecpolicy_id": ipsec["id"], "peer_address": "172.24.4.200",
        "peer_id": "peer.example.org", "local_id": "", "psk": "s3cret", "mtu": 1400,
        "initiator": "bi-directional", "admin_state_up": True,
        "dpd": {"action": "restart", "interval": 10, "timeout": 40}, **extra})
    return {**t, "ike": ike, "ipsec": ipsec, "service": service, "connection": connection}


def synced(cloud, host, router_id) -> dict:
    [data] = cloud.rpc.sync_routers(CTX, host=host, router_ids=[router_id])
    json.dumps(data)  # it travels as JSON
    return data


def test_sync_data_carries_the_service_as_the_contract_says(cloud, agent):  # noqa: F811
    host = agent()
    s = vpn_site(cloud)
    data = synced(cloud, host, s["router"]["id"])
    [service] = data[contract.VPN_SERVICES]
    assert set(service) == set(contract.VpnServiceSyncData.__annotations__)
    gateway = [ip["ip_address"] for ip in data["gw_port"]["fixed_ips"]]
    assert service == {**service, "id": s["service"]["id"], "status": "PENDING_CREATE",
                       "admin_state_up": True, "router_id": s["router"]["id"],
                       "external_ip": gateway[0]}
    [connection] = service["ipsec_site_connections"]
    assert set(connection) == set(contract.SiteConnectionSyncData.__annotations__)
    assert connection == {
        "id": s["connection"]["id"], "status": "PENDING_CREATE", "admin_state_up": True,
        "peer_address": "172.24.4.200", "peer_id": "peer.example.org", "local_id": "",
        "psk": "s3cret", "initiator": "bi-directional", "mtu": 1400,
        "dpd": {"action": "restart", "interval": 10, "timeout": 40},
        "local_cidrs": ["10.0.0.0/24"], "peer_cidrs": ["192.168.50.0/24"],
        "ikepolicy": {"auth_algorithm": "sha256", "encryption_algorithm": "aes-256",
                      "ike_version": "v2", "lifetime_value": 7200, "pfs": "group14",
                      "phase1_negotiation_mode": "main"},
        "ipsecpolicy": {"transform_protocol": "esp", "auth_algorithm": "sha256",
                        "encryption_algorithm": "aes-128", "encapsulation_mode": "tunnel",
                        "lifetime_value": 3600, "pfs": "group5"}}
    # a router without a service has an empty list
    other = topology(cloud)["router"]
    assert synced(cloud, host, other["id"])[contract.VPN_SERVICES] == []


def test_endpoint_groups_give_the_cidrs(cloud, agent):  # noqa: F811
    host = agent()
    s = vpn_site(cloud, endpoint_groups=True)
    [service] = synced(cloud, host, s["router"]["id"])[contract.VPN_SERVICES]
    [connection] = service["ipsec_site_connections"]
    assert connection["local_cidrs"] == ["10.0.0.0/24"]
    assert connection["peer_cidrs"] == ["192.168.60.0/24", "192.168.61.0/24"]


def test_update_status_moves_statuses(cloud, agent):  # noqa: F811
    host = agent()
    s = vpn_site(cloud)
    service_id, connection_id = s["service"]["id"], s["connection"]["id"]

    def report(service_status, connection_status, pending):
        cloud.status.update_status(CTX, status=[{
            "id": service_id, "status": service_status, "updated_pending_status": pending,
            "ipsec_site_connections": {connection_id: {
                "status": connection_status, "updated_pending_status": pending}}}])

    def statuses():
        return (cloud.vpn.get_vpnservice(ADMIN, service_id)["status"],
                cloud.vpn.get_ipsec_site_connection(ADMIN, connection_id)["status"])

    report("ACTIVE", "DOWN", pending=False)  # pending stays until the agent settles it
    assert statuses() == ("PENDING_CREATE", "PENDING_CREATE")
    report("ACTIVE", "DOWN", pending=True)
    assert statuses() == ("ACTIVE", "DOWN")
    report("DOWN", "ACTIVE", pending=False)
    assert statuses() == ("DOWN", "ACTIVE")
    report("SPLENDID", "ACTIVE", pending=False)  # what no agent says is an error
    assert statuses() == ("ERROR", "ACTIVE")
    [service] = synced(cloud, host, s["router"]["id"])[contract.VPN_SERVICES]
    assert service["status"] == "ERROR"
    assert service["ipsec_site_connections"][0]["status"] == "ACTIVE"
    # now it can be updated, and a report of one gone is harmless
    cloud.vpn.update_ipsec_site_connection(ADMIN, connection_id, {"mtu": 1300})
    cloud.vpn.delete_ipsec_site_connection(ADMIN, connection_id)
    report("ACTIVE", "ACTIVE", pending=True)
    assert cloud.vpn.get_vpnservice(ADMIN, service_id)["status"] == "ACTIVE"
    cloud.status.update_status(CTX, status=[{"id": str(uuid.uuid4()), "status": "ACTIVE",
                                             "updated_pending_status": True,
                                             "ipsec_site_connections": {}}, "junk"])


def test_vpn_reads_do_not_grow_with_routers(cloud, agent):  # noqa: F811
    host = agent()
    made = [vpn_site(cloud, endpoint_groups=bool(n % 2))["router"]["id"] for n in range(6)]
    cloud.rpc.sync_routers(CTX, host=host, router_ids=made)  # binds their ports
    statements: list[str] = []

    def count(conn, cursor, statement, *args):
        statements.append(statement)

    engine = cloud.l3.db.engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        counts = []
        for ids in (made[:2], made):
            statements.clear()
            assert all(d[contract.VPN_SERVICES] for d in cloud.rpc.sync_routers(
                CTX, host=host, router_ids=ids))
            counts.append(len(statements))
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert counts[0] == counts[1]


def test_update_status_over_the_bus(cloud):
    s = vpn_site(cloud)

    async def scenario():
        bus = Bus(get_transport(f"memory://{uuid.uuid4().hex}"), timeout=10)
        await bus.start()
        await RpcServer(bus, contract.TOPIC, None, cloud.vpn.rpc_endpoints()[
            contract.TOPIC]).start()
        request = envelope.Request(method="update_status", version=contract.VERSION,
                                   context=CTX, args={"status": [{
                                       "id": s["service"]["id"], "status": "ACTIVE",
                                       "updated_pending_status": True,
                                       "ipsec_site_connections": {}}]})
        await bus.call(contract.TOPIC, request, None)
        await bus.close()

    asyncio.run(scenario())
    assert cloud.vpn.get_vpnservice(ADMIN, s["service"]["id"])["status"] == "ACTIVE"
