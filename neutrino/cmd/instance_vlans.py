"""A trunk parent's instance for ``neutrino-instance``: one namespace per VLAN.

A guest on a trunk makes a VLAN sub-interface per subport (``eth0.101``).
This machine's kernel has no 8021q module and tc no vlan action, so the
instance splits its VLANs with a small Open vSwitch bridge of the host's
instead, as a guest's kernel would:

    instance's tap (on tbr-<trunk>) <-veth-> vmt-<id> on vmb-<id> (all VLANs)
    vmb-<id>: access port VLAN 0 -> eth0 of inst-<parent id[:11]> (untagged)
              access port VLAN 101 -> eth0 of inst-<subport id[:11]>, ...

Each namespace's eth0 carries its port's MAC (and the parent's network's
MTU), so the subport's traffic leaves the tap tagged with the subport's
segmentation id and arrives untagged in the subport's namespace. The
subports are those of ``trunk_details`` at the plug; the bridge notes them
(``external_ids:neutrino-subports``), so that ``unplug`` removes their
namespaces and the bridge. Device names: ``vmb-``, ``vmt-`` and, for each
namespace's outer end, ``vma-`` with 11 characters of the port id.
"""

from __future__ import annotations

import subprocess
from typing import Any, Protocol

from neutrino.linux.ip import IpNetns, add_namespace, delete_namespace
from neutrino.linux.names import tap_name

NOTE = "neutrino-subports"


class Vsctl(Protocol):
    """``Ovs`` of ``neutrino.cmd.instance``, as used here."""

    @property
    def bridge(self) -> str: ...

    def vsctl(self, *args: str) -> str: ...


def namespace_of(port_id: str) -> str:
    return f"inst-{port_id[:11]}"


def bridge_of(port_id: str) -> str:
    return f"vmb-{port_id[:11]}"


def split(ovs: Vsctl, port: dict[str, Any], mtu: int | None, host_netns: str | None) -> None:
    """The instance of trunk parent ``port``: its tap (left for the caller to put
    on the trunk bridge) behind a VLAN-splitting bridge, a namespace per VLAN."""
    port_id, bridge = port["id"], bridge_of(port["id"])
    trunk_end = f"vmt-{port_id[:11]}"
    subports = port["trunk_details"]["sub_ports"]
    with IpNetns(host_netns) as outside:
        outside.add_veth(tap_name(port_id), trunk_end)
        for name in (tap_name(port_id), trunk_end):
            outside.set(name, mtu=mtu, up=True)
    datapath = ovs.vsctl("get", "Bridge", ovs.bridge, "datapath_type").strip('"')
    ovs.vsctl("--may-exist", "add-br", bridge, "--", "set", "Bridge", bridge,
              f"datapath_type={datapath or 'system'}",
              f"external_ids:{NOTE}={','.join(s['port_id'] for s in subports) or '-'}",
              "--", "--may-exist", "add-port", bridge, trunk_end)
    members = [(port_id, port["mac_address"], 0)] + [
        (s["port_id"], s["mac_address"], s["segmentation_id"]) for s in subports]
    for member_id, mac, tag in members:
        _vlan_namespace(ovs, bridge, member_id, mac, tag, mtu, host_netns)


def _vlan_namespace(ovs: Vsctl, bridge: str, port_id: str, mac: str, tag: int,
                    mtu: int | None, host_netns: str | None) -> None:
    namespace, outer, inner = namespace_of(port_id), f"vma-{port_id[:11]}", f"i{port_id[:11]}"
    add_namespace(namespace)
    with IpNetns(host_netns) as outside:
        outside.add_veth(outer, inner, peer_namespace=namespace)
        outside.set(outer, mtu=mtu, up=True)
    with IpNetns(namespace) as inside:
        if inside.exists(inner):
            inside.rename(inner, "eth0")
        inside.set("eth0", mac=mac, mtu=mtu, up=True)
        inside.set("lo", up=True)
    # full checksums: the userspace datapath passes a partial one on as it is
    subprocess.run(["ip", "netns", "exec", namespace, "ethtool", "-K", "eth0", "tx", "off"],
                   capture_output=True, check=True, timeout=30)
    ovs.vsctl("--may-exist", "add-port", bridge, outer, "--", "set", "Port", outer,
              f"tag={tag}")


def unsplit(ovs: Vsctl, port_id: str) -> None:
    """The subports' namespaces and the splitting bridge of the parent's
    instance, if it has one (the parent's namespace and tap are the caller's)."""
    bridge = bridge_of(port_id)
    if bridge not in ovs.vsctl("list-br").split():
        return
    noted = ovs.vsctl("--if-exists", "get", "Bridge", bridge, f"external_ids:{NOTE}")
    for subport_id in noted.strip('"').split(","):
        if subport_id and subport_id != "-":
            delete_namespace(namespace_of(subport_id))
    ovs.vsctl("--if-exists", "del-br", bridge)
