"""The L2 agents' ``qos`` extension without a host: what rules ask of the
dataplane, the flows and meters of Open vSwitch, the DSCP chain's text, and
when the extension writes (a driver that records, a server that answers)."""

from __future__ import annotations

import asyncio
from typing import Any

from neutrino.agents.extensions.api import AgentHandles
from neutrino.agents.extensions.l3_qos import FipQosExtension, GatewayIpQosExtension
from neutrino.agents.extensions.qos import QosExtension, policy_of
from neutrino.agents.extensions.qos_drivers import NOTHING, Port, Wanted, wanted_of
from neutrino.agents.extensions.qos_ovs import free_meter_id, stage_flows
from neutrino.linux import qos_marking, router
from neutrino.linux.qos_tc import MIN_BURST_BYTES, AddressLimit, Limit, address_class


def test_rules_become_what_the_dataplane_does():
    wanted = wanted_of([
        {"type": "bandwidth_limit", "max_kbps": 1000, "max_burst_kbps": 0,
         "direction": "egress"},
        {"type": "bandwidth_limit", "max_kbps": 500, "max_burst_kbps": 100,
         "direction": "ingress"},
        {"type": "packet_rate_limit", "max_kpps": 2, "max_burst_kpps": 1,
         "direction": "egress"},
        {"type": "packet_rate_limit", "max_kpps": 9, "direction": "ingress"},
        {"type": "dscp_marking", "dscp_mark": 26},
        {"type": "minimum_bandwidth", "min_kbps": 10, "direction": "egress"}])
    assert wanted == Wanted(egress=Limit(1000, 0), ingress=Limit(500, 100),
                            egress_pps=(2000, 1000), dscp=26)
    assert wanted_of([]) == NOTHING
    assert Limit(1000).burst_bytes == 100_000  # 80% of a second, in bytes
    assert Limit(8, 1).burst_bytes == MIN_BURST_BYTES


def test_a_port_follows_its_own_policy_else_its_networks():
    assert policy_of({"qos_policy_id": "p", "network_qos_policy_id": "n"}) == "p"
    assert policy_of({"qos_policy_id": None, "network_qos_policy_id": "n",
                      "device_owner": "compute:nova"}) == "n"
    assert policy_of({"network_qos_policy_id": "n", "device_owner": "network:dhcp"}) is None
    assert policy_of({"qos_policy_id": "p", "device_owner": "network:dhcp"}) == "p"


def test_ovs_stages_meter_then_mark_and_return_to_table_0():
    flows = stage_flows(Port("p1", "tap1", 7), [11, 12], 26)
    assert [f.split(",actions=")[1] for f in flows] == [
        "meter:11,set_field:1->reg2,resubmit(,0)",
        "meter:12,set_field:2->reg2,resubmit(,0)",
        "mod_nw_tos:104,set_field:3->reg2,resubmit(,0)",
        "mod_nw_tos:104,set_field:3->reg2,resubmit(,0)"]
    assert all("table=0,priority=200,in_port=7" in f for f in flows)
    assert ["reg2=0" in flows[0], "reg2=2,ip," in flows[2], "reg2=2,ipv6," in flows[3]] == [
        True, True, True]
    assert stage_flows(Port("p1", "tap1", 7), [], None) == []


def test_meter_ids_are_stable_and_distinct():
    first = free_meter_id("port/kbps", set())
    assert free_meter_id("port/kbps", set()) == first
    assert free_meter_id("port/kbps", {first}) == first % 0xFFFFFF + 1
    assert 1 <= first <= 0xFFFFFF


def test_dscp_chain_is_read_back_and_rewritten_whole():
    wanted = qos_marking.rules({"tapb": 10, "tapa": 26})
    assert wanted == [
        "-A neutrino-qos-dscp -m physdev --physdev-in tapa -j DSCP --set-dscp 0x1a",
        "-A neutrino-qos-dscp -m physdev --physdev-in tapb -j DSCP --set-dscp 0x0a"]
    chain = qos_marking.CHAIN
    saved = "\n".join(["*mangle", ":PREROUTING ACCEPT [0:0]", ":neutrino-qos-dscp - [0:0]",
                       chain.jump, *wanted, "COMMIT"])
    assert chain.present(saved) == (wanted, True)
    assert chain.present("*mangle\n:PREROUTING ACCEPT [0:0]\nCOMMIT") is None
    text = chain.restore_text(wanted[:1], jump=True)
    assert text.splitlines() == ["*mangle", ":neutrino-qos-dscp - [0:0]", wanted[0], "COMMIT"]
    assert "-A PREROUTING -j neutrino-qos-dscp" in chain.restore_text([], jump=False)


class Driver:
    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []
        self.known: list[Wanted | None] = []

    def apply(self, port: Port, wanted: Wanted, known: Wanted | None = None) -> None:
        self.calls.append(("apply", port.port_id, repr(wanted)))
        self.known.append(known)

    def remove(self, port: Port) -> None:
        self.calls.append(("remove", port.port_id))

    def keep_only(self, ports: Any) -> None:
        self.calls.append(("keep_only", *sorted(p.port_id for p in ports)))

    def forget_switch(self) -> None:
        return None

    def flows(self) -> list[str]:
        return []


class Server:
    def __init__(self, rules: dict[str, list[dict]]):
        self.rules = rules
        self.asked: list[list[str]] = []

    async def get_policies(self, ctx: dict, policy_ids: list[str]) -> dict:
        self.asked.append(policy_ids)
        return {p: self.rules[p] for p in policy_ids if p in self.rules}


def extension(rules: dict[str, list[dict]]) -> tuple[QosExtension, Driver, Server, list]:
    dirty: list = []

    async def run(work: Any, *args: Any) -> Any:
        return work(*args)

    ext = QosExtension()
    ext.handles = AgentHandles(
        conf=None, bus=None, host="h", agent_type="Linux bridge agent",  # type: ignore[arg-type]
        context={}, mark_dirty=lambda *items: dirty.extend(items),
        request_full_sync=lambda: None, run=run)
    server, driver = Server(rules), Driver()
    ext._plugin = server  # type: ignore[assignment]
    ext.driver = driver  # type: ignore[assignment]
    return ext, driver, server, dirty


def port(port_id: str, policy: str | None = None, network_policy: str | None = None) -> dict:
    return {"port_id": port_id, "device": f"tap{port_id}", "qos_policy_id": policy,
            "network_qos_policy_id": network_policy, "device_owner": "compute:nova"}


LIMIT = [{"type": "bandwidth_limit", "max_kbps": 100, "direction": "egress"}]


def test_the_extension_writes_what_changed_and_asks_once_per_policy():
    ext, driver, server, dirty = extension({"p": LIMIT, "n": []})

    async def scenario() -> None:
        await ext.handle_port(port("a", "p"))
        await ext.handle_port(port("b", "p"))
        await ext.handle_port(port("a", "p"))  # the same again: nothing written
        await ext.handle_port(port("c", None, None))  # never limited: nothing to undo
        await ext.handle_port(port("d", None, "n"))  # the network's policy, no rules
        assert server.asked == [["p"], ["n"]]
        assert [c[:2] for c in driver.calls] == [("apply", "a"), ("apply", "b")]
        # a change of the policy: asked again, its ports marked dirty
        server.rules["p"] = []
        await ext.policies_changed(["p", "elsewhere"])
        assert server.asked[-1] == ["p"] and dirty == [("port", "a"), ("port", "b")]
        await ext.handle_port(port("a", "p"))
        assert driver.calls[-1] == ("apply", "a", repr(NOTHING))
        assert driver.known[-1] == wanted_of(LIMIT)  # what it had: only the change is written
        await ext.policies_changed(["unused"])  # not used here: not asked
        assert server.asked[-1] == ["p"]
        # a full sync asks again and hands every port to the driver, which
        # then removes what others left
        await ext.before_full_sync()
        for port_id in "abcd":
            await ext.handle_port(port(port_id, "p"))
        await ext.after_full_sync()
        assert [c[:2] for c in driver.calls[-5:]] == [
            ("apply", "a"), ("apply", "b"), ("apply", "c"), ("apply", "d"),
            ("keep_only", "a")]
        assert driver.calls[-1] == ("keep_only", "a", "b", "c", "d")
        assert driver.known[-4:] == [None] * 4  # a full sync reads the host
        await ext.delete_port(port("a", "p"))
        assert driver.calls[-1] == ("remove", "a") and "a" not in ext.ports

    asyncio.run(scenario())


def test_router_limits_of_floating_ips_and_the_gateway():
    rules = {"p": [{"type": "bandwidth_limit", "max_kbps": 1000, "max_burst_kbps": 100,
                    "direction": "ingress"}],
             "g": [{"type": "bandwidth_limit", "max_kbps": 500, "direction": "egress"}],
             "marks-only": [{"type": "dscp_marking", "dscp_mark": 8}]}
    data = {"id": "r1", "_qos_policies": rules,
            "external_gateway_info": {"network_id": "n", "qos_policy_id": "g"},
            "gw_port": {"fixed_ips": [{"ip_address": "203.0.113.5"},
                                      {"ip_address": "2001:db8::5"}]},
            "_floatingips": [
                {"floating_ip_address": "203.0.113.9", "fixed_ip_address": "10.0.0.3",
                 "qos_policy_id": "p"},
                {"floating_ip_address": "203.0.113.10", "fixed_ip_address": None,
                 "qos_policy_id": "p"},  # not associated: not on the router
                {"floating_ip_address": "203.0.113.11", "fixed_ip_address": "10.0.0.4",
                 "qos_policy_id": "marks-only"}]}
    spec = router.Router(id="r1", gateway=router.Port("gw", "fa:16:3e:00:00:01", 1500, ()))
    fips, gateway = FipQosExtension(), GatewayIpQosExtension()
    both = gateway.router_spec(data, fips.router_spec(data, spec))
    assert both.limits == (AddressLimit("203.0.113.9", None, Limit(1000, 100)),
                           AddressLimit("203.0.113.5", Limit(500, 0), None))
    # without a gateway, nothing; the policies used are noted all the same
    assert fips.router_spec(data, router.Router(id="r1")).limits == ()
    assert fips.used == {"r1": {"p", "g", "marks-only"}}
    dirty: list = []
    fips.handles = AgentHandles(
        conf=None, bus=None, host="h", agent_type="L3 agent",  # type: ignore[arg-type]
        context={}, mark_dirty=lambda *items: dirty.extend(items),
        request_full_sync=lambda: None)
    fips.policies_changed(["g", "other"])
    assert dirty == [("router", "r1")]


def test_address_classes_follow_the_last_16_bits():
    assert address_class("203.0.113.9") == 0x7109
    assert address_class("10.1.0.0") == 0xFFFF  # class 0 is no class


def test_what_the_host_refuses_is_logged_and_tried_again(caplog, monkeypatch):
    monkeypatch.setattr("neutrino.agents.extensions.qos.RETRY_SECONDS", 0.01)
    ext, driver, _, dirty = extension({"p": LIMIT})

    def refuse(port: Port, wanted: Wanted, known: Wanted | None = None) -> None:
        raise RuntimeError("tc: no such device")

    driver.apply = refuse  # type: ignore[method-assign]

    async def scenario() -> None:
        await ext.handle_port(port("a", "p"))
        assert "a" not in ext.applied
        await asyncio.sleep(0.05)

    asyncio.run(scenario())
    assert dirty == [("port", "a")]
    assert "port a: the QoS of policy p is not in place" in caplog.text
