"""How the Open vSwitch agent enforces a port's QoS (``qos_drivers.Wanted``),
on its integration bridge: blocking work, run in the agent's host thread.

What the instance receives is shaped by a ``linux-htb`` QoS on its port (tc
on the port's device, which ovs-vswitchd writes to, whatever the datapath);
what it sends passes OpenFlow meters (a rate in kbit/s, one in packets/s),
then has its DSCP set, in flows of br-int's table 0 that resubmit to it with
the stage reached in ``reg2``. The userspace datapath has meters;
``ingress_policing_rate`` needs the kernel's police action, which this kind of
host may lack, so it is not used. Meter ids are hashed from the port, so an
agent restarted finds its meters where it left them.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from neutrino.agents.extensions.qos_drivers import Port, Wanted
from neutrino.linux.ovs import OpenFlow, Ovsdb, cookie_of
from neutrino.linux.qos_tc import Limit

#: br-int's register that counts the QoS stages a packet has passed
STAGE = "reg2"
#: above every other flow of table 0 (the firewall's classify table)
PRIORITY = 200
METER_IDS = 0xFFFFFF


@dataclass
class OvsDriver:
    """The Open vSwitch agent's, on its integration bridge."""

    db: Callable[[], Ovsdb]
    openflow: OpenFlow
    #: port id -> its flows in br-int
    port_flows: dict[str, list[str]] = field(default_factory=dict)
    #: (port id, unit) -> meter id
    meter_ids: dict[tuple[str, str], int] = field(default_factory=dict)
    _meters: dict[int, tuple[str, int, int]] | None = None  # on the switch (None: unknown)

    def apply(self, port: Port, wanted: Wanted, known: Wanted | None = None) -> None:
        """``known`` is not needed: the switch's state is read from memory (the
        IDL's replica, the meters as last read)."""
        self._shape(port, wanted.ingress)
        meters = []
        for unit, rate in (("kbps", wanted.egress), ("pktps", wanted.egress_pps)):
            if rate is None:
                self._drop_meter(port.port_id, unit)
                continue
            if isinstance(rate, Limit):
                spec = (rate.kbps, rate.burst_bytes * 8 // 1000)
            else:
                spec = rate
            meters.append(self._meter(port.port_id, unit, *spec))
        self.port_flows[port.port_id] = stage_flows(port, meters, wanted.dscp)
        if not self.port_flows[port.port_id]:
            del self.port_flows[port.port_id]

    def remove(self, port: Port) -> None:
        self.db().shape_port(port.device, None)
        for unit in ("kbps", "pktps"):
            self._drop_meter(port.port_id, unit)
        self.port_flows.pop(port.port_id, None)

    def keep_only(self, ports: Iterable[Port]) -> None:
        here = {port.port_id for port in ports}
        devices = {port.device for port in ports}
        db = self.db()
        for device in set(db.shaped_ports()) - devices:
            db.shape_port(device, None)
        self.port_flows = {p: flows for p, flows in self.port_flows.items() if p in here}
        self.meter_ids = {key: m for key, m in self.meter_ids.items() if key[0] in here}
        self._meters = self.openflow.meters()
        for meter_id in set(self._meters) - set(self.meter_ids.values()):
            self.openflow.delete_meter(meter_id)
            del self._meters[meter_id]

    def forget_switch(self) -> None:
        """A full sync: the switch may have restarted, its meters are read again."""
        self._meters = None

    def flows(self) -> list[str]:
        return [flow for port_id in sorted(self.port_flows) for flow in self.port_flows[port_id]]

    def _shape(self, port: Port, limit: Limit | None) -> None:
        db = self.db()
        wanted = None if limit is None else (limit.kbps * 1000, limit.burst_bytes * 8)
        if db.shaped_ports().get(port.device) != wanted:
            db.shape_port(port.device, *(wanted or (None,)))

    def _switch_meters(self) -> dict[int, tuple[str, int, int]]:
        if self._meters is None:
            self._meters = self.openflow.meters()
        return self._meters

    def _meter(self, port_id: str, unit: str, rate: int, burst: int) -> int:
        present = self._switch_meters()
        meter_id = self.meter_ids.get((port_id, unit))
        if meter_id is None:
            meter_id = free_meter_id(f"{port_id}/{unit}", set(self.meter_ids.values()))
            self.meter_ids[(port_id, unit)] = meter_id
        spec = (unit, rate, burst)
        if present.get(meter_id) != spec:
            self.openflow.set_meter(meter_id, unit, rate, burst, new=meter_id not in present)
            present[meter_id] = spec
        return meter_id

    def _drop_meter(self, port_id: str, unit: str) -> None:
        meter_id = self.meter_ids.pop((port_id, unit), None)
        present = self._switch_meters()
        if meter_id is not None and meter_id in present:
            self.openflow.delete_meter(meter_id)
            del present[meter_id]


def free_meter_id(key: str, taken: set[int]) -> int:
    """A meter id for ``key``, the same on every run where it is free."""
    meter_id = zlib.crc32(key.encode()) % METER_IDS + 1
    while meter_id in taken:
        meter_id = meter_id % METER_IDS + 1
    return meter_id


def stage_flows(port: Port, meters: list[int], dscp: int | None) -> list[str]:
    """br-int's flows for what ``port`` sends: each meter, then the DSCP mark,
    one stage each (``reg2`` counts them), every stage back to table 0, where
    the packet goes on as it would have without QoS once no stage matches."""
    cookie = f"cookie={cookie_of(port.port_id):#x}"
    at = f"{cookie},table=0,priority={PRIORITY},in_port={port.ofport}"
    flows = []
    for stage, meter_id in enumerate(meters):
        flows.append(f"{at},{STAGE}={stage},actions=meter:{meter_id},"
                     f"set_field:{stage + 1}->{STAGE},resubmit(,0)")
    if dscp is not None:
        stage = len(meters)
        flows += [f"{at},{STAGE}={stage},{proto},actions=mod_nw_tos:{dscp << 2},"
                  f"set_field:{stage + 1}->{STAGE},resubmit(,0)" for proto in ("ip", "ipv6")]
    return flows
