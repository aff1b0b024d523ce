"""Open vSwitch on emulated hosts (the userspace datapath), with no agent yet:
``tests.ovs.OvsHost`` per host namespace, and instances plugged into br-int as
``neutrino-instance`` does it on an OVS host (its bridge's NORMAL action
switches between them).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from neutrino.cmd.instance import Ovs, instance_namespace, make_instance, tap_name, unplug
from neutrino.linux.ovs import OpenFlow, Ovsdb
from tests.dataplane import Sandbox, pings, run, sandbox, wait_until
from tests.ovs import OvsError, OvsHost, alive, ovs_host, skip_unless_ovs

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent


@pytest.fixture
def box() -> Iterator[Sandbox]:
    skip_unless_ovs("ping", "socat", "ss")
    with sandbox() as box:
        yield box


def links(namespace: str) -> set[str]:
    return {line.split()[0].split("@")[0]
            for line in run("ip", "-br", "link", namespace=namespace).stdout.splitlines()}


def instance(box: Sandbox, host: str, ovs: Ovs, cidr: str) -> dict[str, str]:
    """An instance on ``host``'s bridge with ``cidr`` on its eth0: the port it stands for."""
    port = {"id": str(uuid.uuid4()), "device_id": str(uuid.uuid4()),
            "mac_address": "fa:16:3e:" + os.urandom(3).hex(":")}
    box.adopt(instance_namespace(port["id"]))
    make_instance(port, None, host, ovs=ovs)
    run("ip", "addr", "add", cidr, "dev", "eth0", namespace=instance_namespace(port["id"]))
    return port


def tcp_carries(server_ns: str, address: str, client_ns: str, payload: bytes) -> bytes:
    """What a TCP server at ``address`` in ``server_ns`` received from a client
    in ``client_ns`` sending ``payload`` (into a file: a pipe nobody reads
    while the client sends would stall the connection once it is full)."""
    with tempfile.TemporaryFile() as received:
        server = subprocess.Popen(["ip", "netns", "exec", server_ns, "socat", "-u",
                                   f"TCP-LISTEN:5001,bind={address}", "STDOUT"],
                                  stdin=subprocess.DEVNULL, stdout=received,
                                  stderr=subprocess.DEVNULL)
        try:
            wait_until(lambda: ":5001 " in run("ss", "-ltn", namespace=server_ns).stdout, 5,
                       "the TCP server")
            sent = subprocess.run(["ip", "netns", "exec", client_ns, "socat", "-u", "STDIN",
                                   f"TCP:{address}:5001,connect-timeout=5"], input=payload,
                                  capture_output=True, timeout=20)
            assert sent.returncode == 0, sent.stderr
            server.wait(timeout=10)
        finally:
            server.kill()
            server.wait()
        received.seek(0)
        return received.read()


def test_two_hosts_each_run_their_own_br_int(box: Sandbox, tmp_path: Path):
    h1, h2 = box.namespace("h1"), box.namespace("h2")
    with ovs_host(h1, tmp_path / "h1") as ovs1, ovs_host(h2, tmp_path / "h2") as ovs2:
        assert ovs1.rundir != ovs2.rundir and ovs1.db != ovs2.db
        for host, namespace in ((ovs1, h1), (ovs2, h2)):
            assert {"ovs-netdev", "br-int"} <= links(namespace)
            assert host.get("bridge", "br-int", "datapath_type") == "netdev"
            assert host.check_interface("br-int") == 65534
            assert "actions=NORMAL" in host.ofctl("dump-flows", "br-int")
            assert "br-int" in host.appctl("dpif/show")
            # what an agent started with ``env`` sees: its bridge by name
            shown = subprocess.run(["ovs-ofctl", "show", "br-int"], capture_output=True,
                                   text=True, env={**os.environ, **host.env})
            assert shown.returncode == 0, shown.stderr
        # each its own database: a port on one is not on the other
        run("ip", "link", "add", "pv1", "type", "veth", "peer", "name", "pv1p", namespace=h1)
        run("ip", "link", "set", "pv1", "up", namespace=h1)
        ovs1.vsctl("add-port", "br-int", "pv1")
        assert ovs1.check_interface("pv1") > 0
        assert ovs1.vsctl("list-ports", "br-int") == "pv1"
        assert ovs2.vsctl("list-ports", "br-int") == ""
        # a port OVS cannot open is an error, though ovs-vsctl exits 0
        ovs2.vsctl("add-port", "br-int", "nosuchdev")
        with pytest.raises(OvsError, match="nosuchdev"):
            ovs2.check_interface("nosuchdev")


def test_instances_on_br_int_talk_and_unplug_removes_them(box: Sandbox, tmp_path: Path):
    host = box.namespace("h1")
    with ovs_host(host, tmp_path / "h1") as ovs_host_:
        ovs = Ovs(ovs_host_.db)
        vm1 = instance(box, host, ovs, "10.0.0.1/24")
        vm2 = instance(box, host, ovs, "10.0.0.2/24")
        ns1, ns2 = instance_namespace(vm1["id"]), instance_namespace(vm2["id"])
        for port in (vm1, vm2):
            tap = tap_name(port["id"])
            assert ovs_host_.get("interface", tap, "external_ids") == {
                "iface-id": port["id"], "attached-mac": port["mac_address"],
                "iface-status": "active", "vm-uuid": port["device_id"]}
            assert ovs_host_.check_interface(tap) > 0
        assert sorted(ovs_host_.vsctl("list-ports", "br-int").split()) == sorted(
            tap_name(port["id"]) for port in (vm1, vm2))

        assert pings(ns1, "10.0.0.2", wait=2) and pings(ns2, "10.0.0.1", wait=2)
        payload = os.urandom(1 << 20)  # many full-sized segments, checksummed by the kernel
        received = tcp_carries(ns2, "10.0.0.2", ns1, payload)
        assert hashlib.sha256(received).digest() == hashlib.sha256(payload).digest()
        assert tcp_carries(ns1, "10.0.0.1", ns2, b"back\n") == b"back\n"

        # unplug: as a function, and as the command (no API: --keep-binding)
        unplug(None, vm1["id"], host, ovs)
        done = subprocess.run([str(BIN / "neutrino-instance"), "unplug", vm2["id"],
                               "--keep-binding", "--host-netns", host,
                               "--ovs-db", ovs_host_.db], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stderr
        assert ovs_host_.vsctl("list-ports", "br-int") == ""
        assert not {tap_name(vm1["id"]), tap_name(vm2["id"])} & links(host)
        assert not {ns1, ns2} & set(run("ip", "netns", "list").stdout.split())
        unplug(None, vm1["id"], host, ovs)  # twice: harmless


def test_stop_leaves_no_process(box: Sandbox, tmp_path: Path):
    host = box.namespace("h1")
    ovs = OvsHost.start(host, tmp_path)
    try:
        ovs.add_bridge("br-int")
        ovs.restart_vswitchd()  # the pid to stop is the new one
        pids = dict(ovs.pids)
        assert all(map(alive, pids.values()))
    finally:
        ovs.stop()
    assert not any(map(alive, pids.values()))
    assert not ovs.rundir.exists()
    assert "ovs-netdev" not in links(host)  # exit --cleanup: the datapath's taps gone
    assert run("ip", "netns", "pids", host).stdout.split() == []
    ovs.stop()  # twice: harmless


def test_stop_kills_daemons_that_do_not_answer(box: Sandbox, tmp_path: Path):
    host = box.namespace("h1")
    ovs = OvsHost.start(host, tmp_path)
    try:
        pids = dict(ovs.pids)
        for daemon in pids:  # ovs-appctl ... exit cannot reach them: SIGTERM does
            ovs.ctl(daemon).unlink()
    finally:
        ovs.stop()
    assert not any(map(alive, pids.values()))


def test_update_sends_only_the_change_and_leaves_the_rest(box: Sandbox, tmp_path: Path):
    """``OpenFlow.update`` turns the table it was told of into the new one: added,
    changed (actions or cookie) and removed flows; the others keep their age."""
    ovs = OvsHost.start(box.namespace("h1"), tmp_path)
    try:
        ovs.add_bridge("br-x", "fail_mode=secure")
        flows = OpenFlow("br-x", {**os.environ, **ovs.env})
        old = [f"cookie={n:#x},table=0,priority=10,ip,nw_dst=10.0.0.{n},actions=NORMAL"
               for n in range(1, 6)]
        flows.replace(old)
        time.sleep(1.1)  # so that a flow written again is younger
        new = [old[0],  # kept
               old[1].replace("actions=NORMAL", "actions=drop"),  # changed actions
               old[2].replace("cookie=0x3", "cookie=0x33"),  # changed cookie
               "table=1,priority=5,arp,actions=NORMAL"]  # added; 4 and 5 removed
        assert flows.update(old, new) == 5
        dumped = flows.dump()
        assert len(dumped) == 4, dumped
        by_address = {line.split("nw_dst=")[1].split()[0]: line
                      for line in dumped if "nw_dst=" in line}
        assert set(by_address) == {"10.0.0.1", "10.0.0.2", "10.0.0.3"}
        assert "actions=drop" in by_address["10.0.0.2"]
        assert "cookie=0x33" in by_address["10.0.0.3"]
        assert any("table=1" in line and "arp" in line for line in dumped)
        ages = {line.split("nw_dst=")[1].split()[0]: float(line.split("duration=")[1]
                                                           .split("s")[0])
                for line in ovs.ofctl("dump-flows", "br-x").splitlines() if "nw_dst=" in line}
        assert ages["10.0.0.1"] >= 1.0 and ages["10.0.0.2"] < 1.0, ages
        assert flows.update(new, new) == 0
    finally:
        ovs.stop()


def test_ensure_writes_only_what_is_missing(box: Sandbox, tmp_path: Path):
    """A full sync ensures every bridge and patch: when they are there already,
    no transaction is made (each would wait for ovs-vswitchd to reconfigure)."""
    ovs = OvsHost.start(box.namespace("h1"), tmp_path)
    db = Ovsdb(ovs.db)
    try:
        def generation() -> int:
            return ovs.get("Open_vSwitch", ".", "next_cfg")

        def ensure_all() -> None:
            for bridge in ("br-a", "br-b"):
                db.ensure_bridge(bridge, "netdev")
            db.ensure_patch("br-a", "patch-b", "patch-a")
            db.ensure_patch("br-b", "patch-a", "patch-b")
            db.ensure_port("br-a", "p1", tag=5, type="internal")

        ensure_all()
        written = generation()
        ensure_all()
        assert generation() == written
        assert ovs.get("Port", "p1", "tag") == 5
        db.ensure_port("br-a", "p1", tag=6, type="internal")  # a change is written
        assert generation() > written and ovs.get("Port", "p1", "tag") == 6
    finally:
        db.close()
        ovs.stop()


def test_two_databases_in_one_process_stay_apart(box: Sandbox, tmp_path: Path):
    """ovsdbapp keeps one connection per API class; each Ovsdb has its own, so a
    second database is not reached through the first, closed or not."""
    first = OvsHost.start(box.namespace("h1"), tmp_path / "h1")
    second = OvsHost.start(box.namespace("h2"), tmp_path / "h2")
    try:
        db1 = Ovsdb(first.db)
        db1.ensure_bridge("br-one", "netdev")
        db1.close()
        first.stop()
        db2 = Ovsdb(second.db)
        try:
            db2.ensure_bridge("br-two", "netdev")
            assert db2.bridges() == ["br-two"]
            assert second.vsctl("list-br").split() == ["br-two"]
        finally:
            db2.close()
    finally:
        second.stop()
        first.stop()


def test_a_port_removed_between_read_and_write_is_passed_over(box: Sandbox, tmp_path: Path):
    """The OVS agent tags ports it has just read; one that another agent (a
    DHCP or L3 agent's interface driver) deletes before the transaction is as
    good as done: the others are tagged, no error (no full resync follows)."""
    ovs = OvsHost.start(box.namespace("h1"), tmp_path)
    db = Ovsdb(ovs.db)
    try:
        db.ensure_bridge("br-int", "netdev")
        for name in ("tapgoes", "tapstays"):
            db.ensure_port("br-int", name, type="internal")
        read = db.port_tags()
        db.delete_port("tapgoes", "br-int")  # between the agent's read and its write
        db.port_tags = lambda: read  # the agent's read, as it was
        db.set_tags({"tapgoes": (7, {"net_uuid": "n"}), "tapstays": (7, {"net_uuid": "n"})})
        assert ovs.get("Port", "tapstays", "tag") == 7
        db.delete_port("tapgoes", "br-int")  # removing what is gone: quiet
    finally:
        db.close()
        ovs.stop()
