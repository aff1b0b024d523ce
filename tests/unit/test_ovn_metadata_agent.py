"""neutrino-ovn-metadata-agent without a host: its pure core (which networks a
chassis serves, what a sync does, which port a request came from, the
liveness keys), and the agent reconciling against a fake Southbound replica
and a fake host that answer behavioural questions (which networks are served,
with which port) - including the round trip: an instance bound then gone
leaves the host as it was."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from neutrino import config
from neutrino.agents.base import AGENT_OPTIONS, NotConverged
from neutrino.agents.ovn_metadata import (
    LIVENESS,
    Binding,
    OvnMetadataAgent,
    agent_id,
    liveness_keys,
    mac_and_addresses,
    plan,
    ports_at,
    read_bindings,
    wanted_ports,
)
from neutrino.agents.ovn_metadata_options import OPTIONS
from neutrino.linux.ovn_metadata import MetadataPort, namespace, veth_names
from neutrino.ovn import names
from neutrino.rpc.bus import Bus
from neutrino.rpc.transport import get_transport

NET, OTHER = "0f0e4a52-1111-4b6e-9a36-5d0c54a1a2b3", "77aa0c1d-2222-4b6e-9a36-5d0c54a1a2b3"
HERE, THERE = "chassis-1", "chassis-2"


def metadata_binding(network: str = NET, ip: str = "10.0.0.2") -> Binding:
    return Binding(f"md-{network[:4]}", network, "localport", None,
                   ("fa:16:3e:00:00:02", ip),
                   {names.DEVICE_OWNER: "network:distributed", names.CIDRS: f"{ip}/24"})


def vif(name: str, network: str = NET, chassis: str | None = HERE, ip: str = "10.0.0.5",
        device: str = "vm-1") -> Binding:
    return Binding(name, network, "", chassis, ("fa:16:3e:00:00:05", ip),
                   {names.DEVICE_ID: device, names.PROJECT: "p1"})


# --- the pure core --------------------------------------------------------------------------

def test_a_network_is_served_where_an_instance_of_it_is_bound():
    bindings = [metadata_binding(), vif("a"), metadata_binding(OTHER), vif("b", OTHER, THERE)]
    assert wanted_ports(bindings, HERE) == {NET: MetadataPort(
        NET, f"md-{NET[:4]}", "fa:16:3e:00:00:02", ("10.0.0.2/24",))}
    assert set(wanted_ports(bindings, THERE)) == {OTHER}


@pytest.mark.parametrize("bindings", [
    [metadata_binding(), vif("a", chassis=None)],  # not bound yet
    [vif("a")],  # no metadata port (ovn_metadata_enabled off, or no DHCP subnet)
    [Binding("md", NET, "localport", None, ("fa:16:3e:00:00:02",), {}), vif("a")],  # no address
    [metadata_binding(), Binding("r", NET, "router", HERE, (), {})],  # no instance's port
])
def test_nothing_to_serve(bindings):
    assert wanted_ports(bindings, HERE) == {}


def test_a_port_being_migrated_here_counts_as_here():
    migrating = Binding("a", NET, "", THERE, ("fa:16:3e:00:00:05", "10.0.0.5"), {}, (HERE,))
    assert set(wanted_ports([metadata_binding(), migrating], HERE)) == {NET}


def test_the_mac_column_read_past_unknown():
    assert mac_and_addresses(["unknown"]) == ()
    assert mac_and_addresses(["fa:16:3e:00:00:05 10.0.0.5", "unknown"]) == (
        "fa:16:3e:00:00:05", "10.0.0.5")
    assert mac_and_addresses(["router"]) == ()


def test_only_ipv4_addresses_go_on_the_metadata_port():
    port = metadata_binding()
    port = Binding(port.logical_port, NET, "localport", None, port.addresses,
                   {names.CIDRS: "fd00::2/64 10.0.0.2/24"})
    assert wanted_ports([port, vif("a")], HERE)[NET].cidrs == ("10.0.0.2/24",)


def test_a_full_sync_plans_everything_a_dirty_one_its_networks():
    port = MetadataPort(NET, "md", "fa:16:3e:00:00:02", ("10.0.0.2/24",))
    assert plan({NET: port}, {OTHER}, None) == ([port], [OTHER])
    assert plan({NET: port}, {OTHER}, {NET}) == ([port], [])
    assert plan({NET: port}, {OTHER}, {OTHER}) == ([], [OTHER])
    assert plan({}, set(), {NET}) == ([], [])


def test_a_request_is_the_bound_port_with_its_address_on_its_network():
    bindings = [metadata_binding(), vif("a"), vif("b", ip="10.0.0.6", device="vm-2"),
                vif("c", OTHER, ip="10.0.0.5", device="vm-3"),
                vif("d", chassis=None, ip="10.0.0.7")]
    [found] = ports_at(bindings, NET, "10.0.0.6")
    assert (found["device_id"], found["project_id"]) == ("vm-2", "p1")
    assert [p["device_id"] for p in ports_at(bindings, OTHER, "10.0.0.5")] == ["vm-3"]
    assert ports_at(bindings, NET, "10.0.0.7") == []  # not bound: not an instance yet
    assert ports_at(bindings, NET, "fa:16:3e:00:00:05") == []  # a MAC is no address


def test_the_agent_id_is_the_chassis_own():
    assert agent_id(HERE) == agent_id(HERE) != agent_id(THERE)
    assert agent_id("8d0e4f8e-58b9-4c8a-8e57-6f1b4c3a2d10") != agent_id(HERE)


def test_liveness_keys_are_written_only_when_behind():
    own = agent_id(HERE)
    assert liveness_keys(5, {}, own) == {names.METADATA_SB_CFG: "5", names.METADATA_ID: own}
    assert liveness_keys(6, {names.METADATA_SB_CFG: "5", names.METADATA_ID: own}, own) == {
        names.METADATA_SB_CFG: "6"}
    assert liveness_keys(6, {names.METADATA_SB_CFG: "6", names.METADATA_ID: own}, own) == {}


def test_names_are_neutrons():
    assert namespace(NET) == f"ovnmeta-{NET}"
    outside, inside = veth_names(NET)
    assert (outside, inside) == (f"tap{NET[:10]}0", f"tap{NET[:10]}1")
    assert len(outside) <= 15


# --- fakes ----------------------------------------------------------------------------------

class FakeSouthbound:
    """A Southbound replica: rows as the IDL shows them; ``db_set`` commands on
    Chassis_Private's external_ids applied by ``transact``."""

    def __init__(self) -> None:
        self.connected = True
        self.remote = "unix:/fake/sb.sock"
        self.chassis = {name: SimpleNamespace(name=name) for name in (HERE, THERE)}
        self.datapaths = {
            net: SimpleNamespace(external_ids={"name": f"neutron-{net}", "name2": "n"})
            for net in (NET, OTHER)}
        self.tables: dict[str, SimpleNamespace] = {
            "Port_Binding": SimpleNamespace(rows={}),
            "SB_Global": SimpleNamespace(rows={1: SimpleNamespace(nb_cfg=3)}),
            "Chassis_Private": SimpleNamespace(rows={2: SimpleNamespace(
                uuid=2, name=HERE, nb_cfg=3, external_ids={})}),
        }
        self.api = SimpleNamespace(tables=self.tables, db_set=lambda *args: args)
        self.written: list[dict[str, str]] = []

    def bind(self, binding: Binding) -> None:
        self.tables["Port_Binding"].rows[binding.logical_port] = SimpleNamespace(
            logical_port=binding.logical_port, type=binding.type,
            datapath=self.datapaths[binding.network_id or NET],
            chassis=[self.chassis[binding.chassis]] if binding.chassis else [],
            additional_chassis=[self.chassis[name] for name in binding.additional_chassis],
            # as OVSDB orders a set: "unknown" after the MAC's value
            mac=[" ".join(binding.addresses), "unknown"] if binding.addresses else [],
            external_ids=dict(binding.external_ids))

    def unbind(self, logical_port: str) -> None:
        del self.tables["Port_Binding"].rows[logical_port]

    def read(self, work: Any) -> Any:
        return work(self.api)

    def transact(self, commands: list[Any], what: str) -> list[Any]:
        for table, record, (column, values) in commands:
            assert (table, column) == ("Chassis_Private", "external_ids")
            row = self.tables[table].rows[record]
            row.external_ids = {**row.external_ids, **values}
            self.written.append(values)
        return []


class FakeHost:
    """The host's metadata datapaths: which networks are served, with which port."""

    def __init__(self) -> None:
        self.serving: dict[str, MetadataPort] = {}
        self.broken: set[str] = set()
        #: network -> the pid of its proxy (none here: a dead one, the monitor hears)
        self.proxies: dict[str, int] = {}

    def present(self) -> set[str]:
        return set(self.serving)

    def provision(self, port: MetadataPort) -> None:
        if port.network_id in self.broken:
            raise OSError("no more veths today")
        self.serving[port.network_id] = port

    def teardown(self, network_id: str) -> None:
        self.serving.pop(network_id, None)

    def proxy_pid(self, network_id: str) -> int | None:
        return self.proxies.get(network_id)


@pytest.fixture
def agent(tmp_path: Path) -> tuple[OvnMetadataAgent, FakeSouthbound, FakeHost]:
    conf = config.load([])
    conf.register((AGENT_OPTIONS, *OPTIONS))
    conf.DEFAULT.state_path = str(tmp_path)
    made = OvnMetadataAgent(conf, Bus(get_transport("memory://ovn-metadata-unit")))
    sb, host = FakeSouthbound(), FakeHost()
    made.attach(HERE, sb, host)
    return made, sb, host


def sync(agent: OvnMetadataAgent, *dirty: Any) -> None:
    asyncio.run(agent.sync(not dirty, set(dirty)))


# --- the agent against the fakes ------------------------------------------------------------

def test_an_instance_bound_here_then_gone_leaves_the_host_as_it_was(agent):
    agent, sb, host = agent
    sb.bind(metadata_binding())
    sync(agent)
    assert host.serving == {}  # the network's metadata port alone: no instance here
    sb.bind(vif("a"))
    sync(agent, ("network", NET))
    assert host.serving[NET].logical_port == f"md-{NET[:4]}"
    sb.bind(vif("b", OTHER, THERE))
    sync(agent, ("network", OTHER))
    assert set(host.serving) == {NET}  # the other network's instance is elsewhere
    sb.unbind("a")
    sync(agent, ("network", NET))
    assert host.serving == {}


def test_a_full_sync_removes_what_no_network_needs_and_restores_what_went(agent):
    agent, sb, host = agent
    sb.bind(metadata_binding())
    sb.bind(vif("a"))
    stale = MetadataPort(OTHER, "md", "fa:16:3e:00:00:09", ("10.1.0.2/24",))
    host.serving[OTHER] = stale  # left by a network deleted while the agent was down
    sync(agent)
    assert set(host.serving) == {NET}
    host.serving.clear()  # someone removed the namespace
    sync(agent)
    assert set(host.serving) == {NET}


def test_one_network_failing_does_not_stop_the_others(agent):
    agent, sb, host = agent
    for network in (NET, OTHER):
        sb.bind(metadata_binding(network))
        sb.bind(vif(f"a-{network[:4]}", network))
    host.broken.add(OTHER)
    with pytest.raises(NotConverged):
        sync(agent)
    assert set(host.serving) == {NET}


def test_unreachable_southbound_is_a_quiet_retry(agent):
    agent, sb, host = agent
    sb.connected = False
    with pytest.raises(NotConverged) as caught:
        sync(agent)
    assert caught.value.level < 20  # below INFO: the database's client says it already


def test_liveness_follows_nb_cfg_and_keeps_the_agent_id(agent):
    agent, sb, _ = agent
    sync(agent, LIVENESS)
    private = sb.tables["Chassis_Private"].rows[2]
    assert private.external_ids == {names.METADATA_SB_CFG: "3",
                                    names.METADATA_ID: agent_id(HERE)}
    sync(agent, LIVENESS)
    assert len(sb.written) == 1  # caught up: nothing written
    sb.tables["SB_Global"].rows[1].nb_cfg = 4
    sync(agent, LIVENESS)
    assert private.external_ids[names.METADATA_SB_CFG] == "4"
    assert sb.written[-1] == {names.METADATA_SB_CFG: "4"}


def test_no_chassis_row_yet_no_liveness(agent):
    agent, sb, _ = agent
    sb.tables["Chassis_Private"].rows.clear()
    sync(agent, LIVENESS)
    assert sb.written == []


def test_the_handler_finds_the_instance_in_the_southbound(agent):
    agent, sb, _ = agent
    sb.bind(metadata_binding())
    sb.bind(vif("a", ip="10.0.0.5", device="vm-1"))
    sb.bind(vif("b", OTHER, THERE, ip="10.0.0.5", device="vm-9"))
    found = asyncio.run(agent.handler.finder.find("10.0.0.5", NET, None))
    assert (found["device_id"], found["project_id"]) == ("vm-1", "p1")
    assert asyncio.run(agent.handler.finder.find("10.0.0.8", NET, None)) is None
    # routers have no proxies of this agent: no port is found for one
    assert asyncio.run(agent.handler.finder.find("10.0.0.5", None, "r1")) is None


def test_row_changes_mark_their_network_dirty_from_the_database_thread(agent):
    agent, sb, _ = agent
    sb.bind(vif("a"))
    row = sb.tables["Port_Binding"].rows["a"]

    async def hear() -> set[Any]:
        agent.loop = asyncio.get_running_loop()
        agent._dirty.clear()
        thread = threading.Thread(target=agent._on_change, args=("update", "Port_Binding",
                                                                 row, None))
        thread.start()
        thread.join()
        other = threading.Thread(target=agent._on_change, args=(
            "update", "Chassis_Private", SimpleNamespace(name=HERE), None))
        other.start()
        other.join()
        await asyncio.sleep(0)
        return set(agent._dirty)

    assert asyncio.run(hear()) == {("network", NET), LIVENESS}


def test_read_bindings_reads_the_rows_as_the_idl_shows_them():
    sb = FakeSouthbound()
    sb.bind(vif("a"))
    sb.bind(metadata_binding(OTHER))
    assert {b.logical_port: b.network_id for b in read_bindings(sb.api)} == {
        "a": NET, f"md-{OTHER[:4]}": OTHER}
    assert [b.logical_port for b in read_bindings(sb.api, NET)] == ["a"]
    assert read_bindings(sb.api, NET)[0] == vif("a")


def test_the_command_starts_without_a_warning():
    done = subprocess.run([sys.executable, "-m", "neutrino.agents.ovn_metadata", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "[ovn]" in done.stdout and "[ovs]" in done.stdout


def test_a_network_whose_proxy_is_not_running_is_provisioned_again(agent):
    agent, sb, host = agent
    sb.bind(metadata_binding())
    sb.bind(vif("a"))

    async def provision() -> set[Any]:
        await agent.sync(True, set())
        await asyncio.sleep(0)  # the process monitor tells at once
        return set(agent._dirty)

    assert asyncio.run(provision()) == {("network", NET)}
