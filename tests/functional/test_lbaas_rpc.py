"""The haproxy provider's server side on a real database: load balancers
scheduled to load-balancer agents, the trees the agents read, and their
reports completing the pending work (or putting it in ERROR); a dead agent's
load balancers move to an alive one."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import orjson
import pytest
from sqlalchemy import update

from neutrino.db import models
from neutrino.rpc.contracts import lbaas as contract
from neutrino.services.agents import db as agents_db
from tests.conftest import BACKENDS

pytestmark = pytest.mark.slow
OCTAVIA_PORT = 19876


class Cloud:
    """One in-process server with the octavia plugin and the haproxy provider."""

    def __init__(self, app: Any):
        self.app = app
        self.octavia = app.by_port[OCTAVIA_PORT]
        self.plugin = self.octavia.router.plugin
        self.provider = self.plugin.providers["haproxy"]
        [self.rpc] = self.provider.rpc_endpoints()[contract.TOPIC]

    def _call(self, app: Any, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        path, _, query = path.partition("?")
        scope = {"type": "http", "method": method, "path": path,
                 "query_string": query.encode(),
                 "headers": [(b"host", b"localhost"), (b"x-project-id", b"p1"),
                             (b"x-roles", b"admin")],
                 "scheme": "http", "server": ("127.0.0.1", OCTAVIA_PORT)}
        status, _, payload = app.handle(scope, orjson.dumps(body) if body else b"")
        return status, orjson.loads(payload) if payload else None

    def lb(self, method: str, path: str, body: Any = None, expect: int = 200) -> Any:
        status, answer = self._call(self.octavia, method, "/v2/lbaas/" + path, body)
        assert status == expect, answer
        return answer

    def net(self, method: str, path: str, body: Any = None, expect: int = 201) -> Any:
        status, answer = self._call(self.app, method, "/v2.0/" + path, body)
        assert status == expect, answer
        return answer

    def register(self, host: str, when: datetime.datetime | None = None,
                 zone: str = "nova") -> None:
        state = {"agent_type": contract.AGENT_TYPE, "binary": contract.BINARY,
                 "host": host, "topic": contract.AGENT_TOPIC, "configurations": {},
                 "availability_zone": zone}
        self.plugin.db.write(lambda conn: agents_db.report(
            conn, state, when or datetime.datetime.now(datetime.UTC).replace(
                tzinfo=None, microsecond=0), 75, True))


@pytest.fixture(scope="module", params=BACKENDS)
def cloud(request, tmp_path_factory):
    from neutrino.cmd.server import build_app, load_config
    from neutrino.db import migrate
    from tests.harness import create_database

    tmp = tmp_path_factory.mktemp(f"lbaas-rpc-{request.param}")
    url, drop = create_database(request.param, tmp)
    path = tmp / "neutrino.conf"
    path.write_text(f"[DEFAULT]\nstate_path = {tmp}\nservice_plugins = router,octavia\n"
                    f"[database]\nconnection = {url}\n"
                    f"[api_settings]\nbind_port = {OCTAVIA_PORT}\n"
                    "enabled_provider_drivers = haproxy:HAProxy in a namespace\n"
                    "default_provider_driver = haproxy\n"
                    "[ml2]\nextension_drivers = port_security\n")
    conf = load_config([str(path)])
    migrate.upgrade(url)
    made = Cloud(build_app(conf, sync=True))
    yield made
    made.app.on_shutdown()
    drop()


def subnet(cloud: Cloud) -> dict[str, Any]:
    network = cloud.net("POST", "networks", {"network": {"name": "vip"}})["network"]
    return cloud.net("POST", "subnets", {"subnet": {
        "network_id": network["id"], "cidr": "10.77.0.0/24", "ip_version": 4}})["subnet"]


def test_a_load_balancer_waits_for_an_agent_then_runs_on_it(cloud):
    vip = subnet(cloud)
    lb = cloud.lb("POST", "loadbalancers", {"loadbalancer": {"vip_subnet_id": vip["id"]}},
                  201)["loadbalancer"]
    assert lb["provider"] == "haproxy" and lb["provisioning_status"] == "PENDING_CREATE"
    host = f"lb-{uuid.uuid4().hex[:8]}"
    assert lb["id"] not in cloud.rpc.get_ready_devices({}, host)
    cloud.register(host)
    cloud.provider.reschedule()  # what the periodic task does
    assert lb["id"] in cloud.rpc.get_ready_devices({}, host)
    port = cloud.net("GET", f"ports/{lb['vip_port_id']}", expect=200)["port"]
    assert port["binding:host_id"] == host and port["admin_state_up"] is True
    # open to all, as Octavia's VIPs are: only the listeners answer there
    assert port["port_security_enabled"] is False and port["security_groups"] == []

    tree = cloud.rpc.get_loadbalancer({}, lb["id"])
    assert tree["vip"]["address"] == lb["vip_address"]
    assert tree["vip"]["mac_address"] == port["mac_address"]
    assert tree["vip"]["gateway_ip"] == "10.77.0.1" and tree["vip"]["prefixlen"] == 24
    assert tree["listeners"] == [] and tree["provisioning_status"] == "PENDING_CREATE"

    # a report of an older tree completes nothing; the current one does
    stale = {"loadbalancer_id": lb["id"], "revision_number": tree["revision_number"] - 1,
             "applied": True, "error": "", "loadbalancer": "ONLINE", "listeners": [],
             "pools": [], "members": [], "stats": {}}
    cloud.rpc.update_status({}, host, stale)
    assert cloud.lb("GET", f"loadbalancers/{lb['id']}")["loadbalancer"][
        "provisioning_status"] == "PENDING_CREATE"
    cloud.rpc.update_status({}, host, {**stale, "revision_number": tree["revision_number"]})
    shown = cloud.lb("GET", f"loadbalancers/{lb['id']}")["loadbalancer"]
    assert (shown["provisioning_status"], shown["operating_status"]) == ("ACTIVE", "ONLINE")

    # a listener and a pool with a member: the tree carries them, statuses follow
    listener = cloud.lb("POST", "listeners", {"listener": {
        "loadbalancer_id": lb["id"], "protocol": "HTTP", "protocol_port": 80}},
        201)["listener"]
    tree = cloud.rpc.get_loadbalancer({}, lb["id"])
    counters = {"bytes_in": 100, "bytes_out": 2000, "active_connections": 1,
                "total_connections": 7, "request_errors": 0}
    cloud.rpc.update_status({}, host, {**stale, "revision_number": tree["revision_number"],
                                       "listeners": [{"id": listener["id"],
                                                      "operating_status": "ONLINE"}],
                                       "stats": {listener["id"]: counters,
                                                 str(uuid.uuid4()): counters}})
    assert cloud.lb("GET", f"listeners/{listener['id']}/stats")["stats"] == counters
    assert cloud.lb("GET", f"loadbalancers/{lb['id']}/stats")["stats"] == counters
    pool = cloud.lb("POST", "pools", {"pool": {
        "listener_id": listener["id"], "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN"}},
        201)["pool"]
    tree = cloud.rpc.get_loadbalancer({}, lb["id"])
    cloud.rpc.update_status({}, host, {**stale, "revision_number": tree["revision_number"]})
    member = cloud.lb("POST", f"pools/{pool['id']}/members", {"member": {
        "address": "10.77.0.20", "protocol_port": 8080}}, 201)["member"]
    tree = cloud.rpc.get_loadbalancer({}, lb["id"])
    assert tree["listeners"][0]["default_pool_id"] == pool["id"]
    assert [m["address"] for m in tree["pools"][0]["members"]] == ["10.77.0.20"]
    cloud.rpc.update_status({}, host, {
        **stale, "revision_number": tree["revision_number"], "loadbalancer": "DEGRADED",
        "pools": [{"id": pool["id"], "operating_status": "ERROR"}],
        "members": [{"id": member["id"], "operating_status": "ERROR"}]})
    shown = cloud.lb("GET", f"pools/{pool['id']}/members/{member['id']}")["member"]
    assert (shown["provisioning_status"], shown["operating_status"]) == ("ACTIVE", "ERROR")
    assert cloud.lb("GET", f"loadbalancers/{lb['id']}")["loadbalancer"][
        "operating_status"] == "DEGRADED"

    # a failure puts the pending work in ERROR
    cloud.lb("PUT", f"pools/{pool['id']}/members/{member['id']}",
             {"member": {"weight": 5}})
    tree = cloud.rpc.get_loadbalancer({}, lb["id"])
    cloud.rpc.update_status({}, host, {**stale, "revision_number": tree["revision_number"],
                                       "applied": False, "error": "haproxy -c failed"})
    shown = cloud.lb("GET", f"loadbalancers/{lb['id']}")["loadbalancer"]
    assert shown["provisioning_status"] == "ERROR"
    assert cloud.lb("GET", f"pools/{pool['id']}/members/{member['id']}")["member"][
        "provisioning_status"] == "ERROR"

    # a cascade delete: the agent's report of the deleted tree removes it all
    cloud.lb("DELETE", f"loadbalancers/{lb['id']}?cascade=true", expect=204)
    tree = cloud.rpc.get_loadbalancer({}, lb["id"])
    assert tree["provisioning_status"] == "PENDING_DELETE"
    cloud.rpc.update_status({}, host, {**stale, "revision_number": tree["revision_number"],
                                       "loadbalancer": "OFFLINE"})
    cloud.lb("GET", f"loadbalancers/{lb['id']}", expect=404)
    assert cloud.rpc.get_loadbalancer({}, lb["id"]) is None
    cloud.net("GET", f"ports/{lb['vip_port_id']}", expect=404)


def kill_every_agent(cloud: Cloud) -> None:
    """Every load-balancer agent's last heartbeat long ago: dead, even to failover."""
    AG = models.agents
    cloud.plugin.db.write(lambda conn: conn.execute(
        update(AG).where(AG.c.agent_type == contract.AGENT_TYPE)
        .values(heartbeat_timestamp=datetime.datetime(2020, 1, 1))))


def test_a_dead_agents_load_balancers_move(cloud):
    vip = subnet(cloud)
    old, new = f"lb-{uuid.uuid4().hex[:8]}", f"lb-{uuid.uuid4().hex[:8]}"
    kill_every_agent(cloud)  # the other tests' agents
    cloud.register(old)
    lb = cloud.lb("POST", "loadbalancers", {"loadbalancer": {"vip_subnet_id": vip["id"]}},
                  201)["loadbalancer"]
    assert lb["id"] in cloud.rpc.get_ready_devices({}, old)
    kill_every_agent(cloud)
    cloud.register(new)
    cloud.provider.reschedule()
    assert lb["id"] not in cloud.rpc.get_ready_devices({}, old)
    assert lb["id"] in cloud.rpc.get_ready_devices({}, new)
    port = cloud.net("GET", f"ports/{lb['vip_port_id']}", expect=200)["port"]
    assert port["binding:host_id"] == new


def test_what_haproxy_cannot_do_is_refused_as_unsupported(cloud):
    vip = subnet(cloud)
    lb = cloud.lb("POST", "loadbalancers", {"loadbalancer": {"vip_subnet_id": vip["id"]}},
                  201)["loadbalancer"]
    # completed by hand: no agent needed to see the refusals
    cloud.plugin.db.write(lambda conn: conn.execute(
        update(models.lbaas_loadbalancers).where(models.lbaas_loadbalancers.c.id == lb["id"])
        .values(provisioning_status="ACTIVE")))
    for protocol in ("UDP", "SCTP"):
        fault = cloud.lb("POST", "listeners", {"listener": {
            "loadbalancer_id": lb["id"], "protocol": protocol, "protocol_port": 53}}, 501)
        assert fault["faultstring"] == (
            "Provider 'haproxy' does not support a requested option: "
            f"{protocol} listeners: HAProxy balances TCP and HTTP only")
        cloud.lb("POST", "pools", {"pool": {"loadbalancer_id": lb["id"], "protocol": protocol,
                                            "lb_algorithm": "ROUND_ROBIN"}}, 501)
    assert cloud.lb("GET", f"loadbalancers/{lb['id']}")["loadbalancer"][
        "provisioning_status"] == "ACTIVE"  # nothing was started


def test_failover_moves_a_load_balancer_to_another_agent(cloud):
    vip = subnet(cloud)
    kill_every_agent(cloud)
    first, second = f"lb-{uuid.uuid4().hex[:8]}", f"lb-{uuid.uuid4().hex[:8]}"
    cloud.register(first)
    lb = cloud.lb("POST", "loadbalancers", {"loadbalancer": {"vip_subnet_id": vip["id"]}},
                  201)["loadbalancer"]
    tree = cloud.rpc.get_loadbalancer({}, lb["id"])
    done = {"loadbalancer_id": lb["id"], "revision_number": tree["revision_number"],
            "applied": True, "error": "", "loadbalancer": "ONLINE", "listeners": [],
            "pools": [], "members": [], "stats": {}}
    cloud.rpc.update_status({}, first, done)
    cloud.register(second)
    assert cloud.lb("PUT", f"loadbalancers/{lb['id']}/failover", expect=202) is None
    assert cloud.rpc.get_ready_devices({}, first) == []
    assert cloud.rpc.get_ready_devices({}, second) == [lb["id"]]
    assert cloud.net("GET", f"ports/{lb['vip_port_id']}", expect=200)["port"][
        "binding:host_id"] == second
    tree = cloud.rpc.get_loadbalancer({}, lb["id"])
    assert tree["provisioning_status"] == "PENDING_UPDATE"
    # pending, it refuses another failover; the new agent's report completes it
    cloud.lb("PUT", f"loadbalancers/{lb['id']}/failover", expect=409)
    cloud.rpc.update_status({}, second, {**done, "revision_number": tree["revision_number"]})
    assert cloud.lb("GET", f"loadbalancers/{lb['id']}")["loadbalancer"][
        "provisioning_status"] == "ACTIVE"
    cloud.lb("PUT", f"loadbalancers/{uuid.uuid4()}/failover", expect=404)


def test_a_zones_load_balancers_run_on_its_agents_with_their_flavors_limits(cloud):
    vip = subnet(cloud)
    kill_every_agent(cloud)
    elsewhere, here = f"lb-{uuid.uuid4().hex[:8]}", f"lb-{uuid.uuid4().hex[:8]}"
    cloud.register(elsewhere, zone="rack-1")
    cloud.register(here, zone="rack-2")
    zone = f"z-{uuid.uuid4().hex[:8]}"
    profile = cloud.lb("POST", "availabilityzoneprofiles", {"availability_zone_profile": {
        "name": "rack 2", "provider_name": "haproxy",
        "availability_zone_data": '{"agent_availability_zone": "rack-2"}'}},
        201)["availability_zone_profile"]
    cloud.lb("POST", "availabilityzones", {"availability_zone": {
        "name": zone, "availability_zone_profile_id": profile["id"]}}, 201)
    flavor_profile = cloud.lb("POST", "flavorprofiles", {"flavorprofile": {
        "name": "small", "provider_name": "haproxy",
        "flavor_data": '{"maxconn": 300, "nbthread": 2}'}}, 201)["flavorprofile"]
    flavor = cloud.lb("POST", "flavors", {"flavor": {
        "name": f"small-{uuid.uuid4().hex[:8]}", "flavor_profile_id": flavor_profile["id"]}},
        201)["flavor"]
    for _ in range(3):  # the least loaded agent would be the other one, in turn
        lb = cloud.lb("POST", "loadbalancers", {"loadbalancer": {
            "vip_subnet_id": vip["id"], "availability_zone": zone,
            "flavor_id": flavor["id"]}}, 201)["loadbalancer"]
        assert lb["id"] in cloud.rpc.get_ready_devices({}, here)
        assert cloud.rpc.get_loadbalancer({}, lb["id"])["flavor"] == {
            "maxconn": 300, "nbthread": 2}
    assert cloud.rpc.get_ready_devices({}, elsewhere) == []
    # with no agent of its zone alive, it waits
    kill_every_agent(cloud)
    cloud.register(elsewhere, zone="rack-1")
    lb = cloud.lb("POST", "loadbalancers", {"loadbalancer": {
        "vip_subnet_id": vip["id"], "availability_zone": zone}}, 201)["loadbalancer"]
    cloud.provider.reschedule()
    assert lb["id"] not in cloud.rpc.get_ready_devices({}, elsewhere)
    assert cloud.rpc.get_loadbalancer({}, lb["id"])["flavor"] == {}
