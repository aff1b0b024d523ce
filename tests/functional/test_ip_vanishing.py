"""``IpNetns`` on a real namespace, with a device removed between the read
that found it and the write: removals are quiet, other writes raise
``NoSuchDevice`` (the kernel's ENODEV, or no such name), nothing else.
What ``tests/fakes/host.py`` plays for the agents' unit tests."""

from __future__ import annotations

import pytest

from neutrino.linux.ip import IpNetns, NoSuchDevice
from tests.dataplane import run, sandbox, skip_unless_root


@pytest.fixture
def inside():
    skip_unless_root("ip")
    with sandbox() as box:
        ns = box.namespace("vanish")
        run("ip", "link", "add", "br0", "type", "bridge", namespace=ns)
        with IpNetns(ns) as ip:
            yield ip


def stale(ip: IpNetns, name: str, monkeypatch) -> None:
    """``name`` deleted, while ``ip`` still finds it by its old index (as a
    read a moment before the removal did)."""
    index = ip.index(name)
    assert index is not None
    ip.delete(name)
    monkeypatch.setattr(ip, "index", lambda wanted: index if wanted == name else
                        IpNetns.index(ip, wanted))


def test_removing_what_is_gone_is_quiet(inside, monkeypatch):
    run("ip", "link", "add", "tapx", "type", "veth", "peer", "name", "tapy",
        namespace=inside.namespace)
    inside.set("tapx", master="br0")
    stale(inside, "tapx", monkeypatch)
    inside.unplug("tapx")  # ENODEV from the kernel
    inside.delete("tapx")
    inside.fdb_delete("tapx", "00:00:00:00:00:00", "192.0.2.9")
    inside.unplug("never-was")  # no such name


def test_writing_to_what_is_gone_raises_no_such_device(inside, monkeypatch):
    run("ip", "link", "add", "vxlan-7", "type", "vxlan", "id", "7", "dstport", "4789",
        namespace=inside.namespace)
    stale(inside, "vxlan-7", monkeypatch)
    for write in (lambda: inside.set("vxlan-7", up=True),
                  lambda: inside.set("vxlan-7", master="br0"),
                  lambda: inside.fdb_add("vxlan-7", "00:00:00:00:00:00", "192.0.2.9"),
                  lambda: inside.set_addresses("vxlan-7", ["10.9.0.1/24"], have=[]),
                  lambda: inside.set("never-was", up=True)):
        with pytest.raises(NoSuchDevice):
            write()
