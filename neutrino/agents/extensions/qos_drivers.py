"""What a port's QoS policy asks of the dataplane (``Wanted``), and how the
Linux bridge agent enforces it (``TcDriver``; the Open vSwitch agent's is
``qos_ovs.OvsDriver``): blocking work, run in the agent's host thread.

Directions are the instance's, as the API's: ``egress`` is what the
instance sends, ``ingress`` what it receives.

- Linux bridge (``TcDriver``): the tap's root token bucket limits what the
  instance receives; an IFB device of the port's own limits what it sends
  (``neutrino.linux.qos_tc``); DSCP marks by iptables in the agent's
  namespace (``neutrino.linux.qos_marking``).
- Open vSwitch: see ``qos_ovs``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from neutrino.linux import qos_marking, qos_tc
from neutrino.linux.iptables import namespace_runner
from neutrino.linux.qos_tc import Limit


@dataclass(frozen=True)
class Wanted:
    """What a port's policy asks of the dataplane."""

    egress: Limit | None = None  # what the instance sends, kbit/s
    ingress: Limit | None = None  # what it receives
    egress_pps: tuple[int, int] | None = None  # (packets/s, burst packets) it sends
    dscp: int | None = None  # the mark of what it sends


NOTHING = Wanted()


@dataclass(frozen=True)
class Port:
    """Where a port is on the host: its device, and on Open vSwitch its OpenFlow port."""

    port_id: str
    device: str
    ofport: int | None = None


class TcDriver:
    """The Linux bridge agent's."""

    def __init__(self, tc: qos_tc.Tc | None = None, namespace: str | None = None):
        self.tc = tc or qos_tc.Tc(namespace)
        self._run = namespace_runner(namespace, 30)
        self.marks: dict[str, int] = {}  # tap -> DSCP mark
        self._marked: dict[str, int] | None = None  # as last written (None: unknown)

    def apply(self, port: Port, wanted: Wanted, known: Wanted | None = None) -> None:
        """``known``: what the port is known to have (None: read the host)."""
        if known is None:
            self.tc.shape(port.device, wanted.ingress)
            self.tc.limit_ingress(port.device, wanted.egress)
        else:
            self.tc.shape(port.device, wanted.ingress, known.ingress)
            self.tc.limit_ingress(port.device, wanted.egress, known.egress)
        if wanted.dscp is None:
            self.marks.pop(port.device, None)
        else:
            self.marks[port.device] = wanted.dscp
        self._mark()

    def remove(self, port: Port) -> None:
        """The tap is gone (and its qdiscs with it): its IFB and mark go too."""
        self.tc.remove_ifb(qos_tc.ifb_name(port.device))
        self.marks.pop(port.device, None)
        self._mark()

    def keep_only(self, ports: Iterable[Port]) -> None:
        """After a full sync: nothing of ports not here stays; the marks are read again."""
        devices = {port.device for port in ports}
        for ifb in self.tc.ifbs() - {qos_tc.ifb_name(device) for device in devices}:
            self.tc.remove_ifb(ifb)
        self.marks = {tap: mark for tap, mark in self.marks.items() if tap in devices}
        self._marked = None
        self._mark()

    def _mark(self) -> None:
        if self._marked != self.marks:
            qos_marking.apply(self._run, self.marks)
            self._marked = dict(self.marks)

    def forget_switch(self) -> None:
        return None

    def flows(self) -> list[str]:
        return []


def wanted_of(rules: Iterable[Mapping[str, Any]]) -> Wanted:
    """What the rules of a policy ask the dataplane. Minimums are guarantees
    that Neutron gives by scheduling (placement), which neutrino has not: they
    are not enforced here; nor is a packet rate limit on what an instance
    receives."""
    limits: dict[str, Limit] = {}
    pps, dscp = None, None
    for rule in rules:
        kind, direction = rule.get("type"), rule.get("direction", "egress")
        if kind == "bandwidth_limit":
            limits[direction] = Limit(int(rule.get("max_kbps") or 0),
                                      int(rule.get("max_burst_kbps") or 0))
        elif kind == "packet_rate_limit" and direction == "egress":
            pps = (int(rule.get("max_kpps") or 0) * 1000,
                   int(rule.get("max_burst_kpps") or 0) * 1000)
        elif kind == "dscp_marking":
            dscp = int(rule.get("dscp_mark") or 0)
    return Wanted(egress=limits.get("egress"), ingress=limits.get("ingress"),
                  egress_pps=pps, dscp=dscp)
