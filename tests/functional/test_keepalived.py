"""keepalived (``neutrino.linux.keepalived``) electing one of two router
namespaces that share an HA link and an external wire: one holds the
router's address, the external host reaches it; the master's host dies
(keepalived killed, its links down) and the other takes the address over;
the first comes back and does not take it back (nopreempt). Root and
keepalived; everything in namespaces the test makes and removes."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from neutrino.linux import keepalived
from neutrino.linux.ip import IpNetns
from tests.dataplane import Sandbox, pings, run, sandbox, skip_unless_root, wait_until

pytestmark = pytest.mark.slow

ADDRESS, UPSTREAM = "203.0.113.10", "203.0.113.1"
MAC = "fa:16:3e:00:00:10"  # one gateway port: the same MAC on every host


def router_host(box: Sandbox, wires: str, name: str, ha_ip: str) -> str:
    """A router namespace with ``ha0`` on the HA link and ``qg0`` on the wire."""
    ns = box.namespace(name)
    for device, bridge in (("ha0", "br-ha"), ("qg0", "br-ext")):
        outside = f"{device}-{name}"[:15]
        run("ip", "link", "add", device, "type", "veth", "peer", "name", outside, namespace=ns)
        run("ip", "link", "set", outside, "netns", wires, namespace=ns)
        run("ip", "link", "set", outside, "master", bridge, "up", namespace=wires)
        run("sysctl", "-qw", f"net.ipv6.conf.{device}.disable_ipv6=1", namespace=ns)
        run("ip", "link", "set", device, "up", namespace=ns)
    run("ip", "link", "set", "qg0", "address", MAC, namespace=ns)
    run("ip", "addr", "add", f"{ha_ip}/18", "dev", "ha0", namespace=ns)
    return ns


def instance(router_id: str) -> keepalived.Instance:
    return keepalived.Instance(router_id=router_id, interface="ha0", vr_id=7, advert_int=1,
                               auth=("PASS", "secret"),
                               addresses=((f"{ADDRESS}/24", "qg0"),))


def holders(namespaces: list[str]) -> list[str]:
    found = []
    for ns in namespaces:
        with IpNetns(ns) as inside:
            if keepalived.state(inside.addresses("ha0"), instance("r")) == keepalived.ACTIVE:
                found.append(ns)
    return found


@pytest.fixture
def lab(tmp_path: Path):
    skip_unless_root("ip", "ping", "keepalived")
    with sandbox() as box:
        wires = box.namespace("wires")
        for bridge in ("br-ha", "br-ext"):
            run("ip", "link", "add", bridge, "type", "bridge", namespace=wires)
            run("ip", "link", "set", bridge, "up", namespace=wires)
        ext = box.namespace("ext")
        run("ip", "link", "add", "eth0", "type", "veth", "peer", "name", "ext0", namespace=ext)
        run("ip", "link", "set", "ext0", "netns", wires, namespace=ext)
        run("ip", "link", "set", "ext0", "master", "br-ext", "up", namespace=wires)
        run("ip", "addr", "add", f"{UPSTREAM}/24", "dev", "eth0", namespace=ext)
        run("ip", "link", "set", "eth0", "up", namespace=ext)
        routers = [router_host(box, wires, f"r{i}", f"169.254.192.{i}") for i in (1, 2)]
        dirs = [tmp_path / ns for ns in routers]
        try:
            yield box, ext, routers, dirs
        finally:
            for directory in dirs:
                keepalived.stop(str(directory))


def test_one_master_takes_over_when_the_other_dies(lab):
    _, ext, routers, dirs = lab
    for ns, directory in zip(routers, dirs, strict=True):
        keepalived.converge(ns, str(directory), instance("r"))
    master = wait_until(lambda: holders(routers), 15, "a master")
    assert len(master) == 1, master
    assert pings(ext, ADDRESS)
    # the same configuration again: left alone
    pid = keepalived.keepalived_pid(str(dirs[0]))
    assert keepalived.converge(routers[0], str(dirs[0]), instance("r")) == pid

    # the master's host dies: its keepalived killed, its links down
    dead = routers.index(master[0])
    other = routers[1 - dead]
    killed = time.monotonic()
    pids = [(dirs[dead] / name).read_text().strip()
            for name in (keepalived.VRRP_PID, keepalived.PID)]  # no goodbye advert
    run("kill", "-9", *pids)
    for device in ("ha0", "qg0"):
        run("ip", "link", "set", device, "down", namespace=master[0])
    wait_until(lambda: holders([other]) == [other], 15, "the other to take over")
    wait_until(lambda: pings(ext, ADDRESS, wait=0.5), 10, "the address reachable again")
    print(f"failover in {time.monotonic() - killed:.1f} s (advert_int 1)")

    # the host comes back: the new master keeps the address
    for device in ("ha0", "qg0"):
        run("ip", "link", "set", device, "up", namespace=master[0])
    with IpNetns(master[0]) as inside:  # what the dead master held went with it
        inside.set_addresses("qg0", [])
    keepalived.stop(str(dirs[dead]))
    keepalived.converge(master[0], str(dirs[dead]), instance("r"))
    time.sleep(4)  # longer than the master-down interval (3 adverts and a skew)
    assert holders(routers) == [other]
    assert pings(ext, ADDRESS)

    # only the master's parent process killed: its VRRP child runs on, and a
    # keepalived started again at once stops it first (else it would leave)
    parent = int((dirs[1 - dead] / keepalived.PID).read_text())
    run("kill", "-9", str(parent))
    wait_until(lambda: keepalived.keepalived_pid(str(dirs[1 - dead])) is None, 5,
               "the parent gone")  # SIGKILL is delivered, not waited for
    restarted = keepalived.converge(other, str(dirs[1 - dead]), instance("r"))
    assert restarted != parent and keepalived.keepalived_pid(str(dirs[1 - dead])) == restarted
    wait_until(lambda: len(holders(routers)) == 1 and pings(ext, ADDRESS, wait=0.5), 15,
               "one master again")


def test_configuration(tmp_path: Path):
    text = keepalived.render(keepalived.Instance(
        router_id="0123", interface="ha-abc", vr_id=3, auth=("AH", "pw"),
        addresses=(("203.0.113.5/24", "qg-x"), ("10.0.0.1/24", "qr-y")),
        routes=(("0.0.0.0/0", "203.0.113.1", "qg-x"),)))
    assert "    virtual_ipaddress {\n        169.254.0.3/24 dev ha-abc\n    }" in text
    assert "        10.0.0.1/24 dev qr-y\n" in text
    assert "        0.0.0.0/0 via 203.0.113.1 dev qg-x\n" in text
    assert "auth_type AH" in text and "nopreempt" in text and "state BACKUP" in text
