"""Load balancers on this host: a namespace ``qlbaas-<id>`` with the VIP port's
device, and an HAProxy (``neutrino.linux.haproxy``) serving there.

One directory per load balancer under ``state_dir`` holds HAProxy's files;
it is how a load balancer set up here is known again after the agent
restarts (``present``). Every step converges, so ``serve`` is called blindly.
"""

from __future__ import annotations

import logging
import os
import shutil
from typing import Any

from neutrino.linux import interface, ip, process
from neutrino.linux.haproxy import (
    Haproxy,
    LoadBalancerSyncData,
    Stats,
    listener_stats,
    status_report,
)

LOG = logging.getLogger(__name__)
PREFIX = "qlbaas-"
#: the counters that add up (active connections are a level, not a count)
COUNTED = ("bytes_in", "bytes_out", "total_connections", "request_errors")


def namespace_name(lb_id: str) -> str:
    return PREFIX + lb_id


class LbaasDataplane:
    """What the load-balancer agent does on the host, in its threads."""

    def __init__(self, state_dir: str, driver: interface.InterfaceDriver):
        self.state_dir = state_dir
        self.driver = driver
        #: load balancer id -> (HAProxy's pid, its last counters, what earlier
        #: HAProxy processes of it counted)
        self._counted: dict[str, tuple[int | None, dict[str, Stats], dict[str, Stats]]] = {}

    def _haproxy(self, lb_id: str) -> Haproxy:
        return Haproxy(os.path.join(self.state_dir, lb_id), namespace_name(lb_id))

    def present(self) -> set[str]:
        """The load balancers set up here (even partly): those with a directory."""
        try:
            return {name for name in os.listdir(self.state_dir)
                    if os.path.isdir(os.path.join(self.state_dir, name))}
        except FileNotFoundError:
            return set()

    def serve(self, lb: LoadBalancerSyncData) -> None:
        """The namespace, the VIP's device, address and default route, and HAProxy
        running ``lb`` (reloaded if it changed; nothing done if not)."""
        os.makedirs(os.path.join(self.state_dir, lb["id"]), exist_ok=True)  # first: known
        namespace = namespace_name(lb["id"])
        ip.add_namespace(namespace)
        vip = lb["vip"]
        device = self.driver.plug(vip["port_id"], vip["mac_address"], vip["mtu"], namespace)
        self.driver.set_addresses(device, [f"{vip['address']}/{vip['prefixlen']}"], namespace)
        with ip.IpNetns(namespace) as inside:
            inside.set("lo", up=True)
            if vip["gateway_ip"]:
                default = "::/0" if ":" in vip["gateway_ip"] else "0.0.0.0/0"
                inside.replace_route(default, vip["gateway_ip"])
        for other in self.driver.devices(namespace):
            if other != device:  # an earlier VIP port's
                self.driver.unplug(other, namespace)
        self.driver.wait_usable(device, namespace)
        self._haproxy(lb["id"]).apply(lb)

    def observe(self, lb: LoadBalancerSyncData) -> dict[str, Any]:
        """What HAProxy's stats socket says of ``lb``'s objects: the contract's
        ``StatusReport`` (``rpc.contracts.lbaas``) of the tree, applied, with
        its listeners' counters."""
        proxy = self._haproxy(lb["id"])
        rows = proxy.rows(lb)
        report = status_report(lb, rows)
        report["stats"] = self._totals(lb["id"], proxy.pid(), listener_stats(lb, rows))
        return report

    def _totals(self, lb_id: str, pid: int | None, current: dict[str, Stats]
                ) -> dict[str, Stats]:
        """The counters since this dataplane first observed the load balancer: an
        HAProxy counts from its own start, and each reload starts a new one."""
        last_pid, last, earlier = self._counted.get(lb_id, (pid, {}, {}))
        if pid != last_pid:
            for listener_id, counters in last.items():
                done = earlier.setdefault(listener_id, dict.fromkeys(COUNTED, 0))
                for key in COUNTED:
                    done[key] += counters[key]
        self._counted[lb_id] = (pid, current, earlier)
        return {listener_id: {**counters, **{
            key: counters[key] + earlier.get(listener_id, {}).get(key, 0) for key in COUNTED}}
            for listener_id, counters in current.items()}

    def retire(self, lb_id: str) -> None:
        """Take everything of the load balancer away, whatever is left of it."""
        namespace = namespace_name(lb_id)
        self._counted.pop(lb_id, None)
        self._haproxy(lb_id).stop()
        if namespace in ip.namespaces():
            for device in self.driver.devices(namespace):
                self.driver.unplug(device, namespace)
            for pid in ip.namespace_pids(namespace):  # anything else left there
                process.terminate(pid, 2.0)
            ip.delete_namespace(namespace)
        shutil.rmtree(os.path.join(self.state_dir, lb_id), ignore_errors=True)
        LOG.info("load balancer %s: taken down", lb_id)
