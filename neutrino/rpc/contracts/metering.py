"""What the L3 agents' metering extension tells whoever listens (Neutron's
``l3.meter`` notification, which Neutron's metering agent sends through
oslo.messaging's notifier).

Cast on the shared topic ``notifications`` (one listener takes each message,
as oslo notification listeners share ``notifications.info``), method
``info``, with oslo's arguments: ``publisher_id`` (``metering.<host>``),
``event_type`` (``l3.meter``), ``payload`` (``MeterPayload``). A listener
is an RPC endpoint with an ``info`` method. With nobody listening, the
message is dropped.
"""

from __future__ import annotations

from typing import TypedDict

from neutrino.rpc import topics
from neutrino.rpc.bus import Bus
from neutrino.rpc.client import RpcClient

TOPIC = topics.NOTIFICATIONS
EVENT = "l3.meter"
VERSION = "1.0"


class MeterPayload(TypedDict):
    """One label's traffic since the last report, summed over this host's routers."""

    label_id: str
    tenant_id: str | None
    project_id: str | None
    pkts: int
    bytes: int
    time: int  # seconds the counts cover
    first_update: int  # when this agent first counted the label (epoch seconds)
    last_update: int  # when it last read the counters
    host: str


class MeteringNotifier:
    def __init__(self, bus: Bus, host: str):
        self._client = RpcClient(bus, TOPIC, VERSION)
        self._publisher = f"metering.{host}"

    async def meter(self, payload: MeterPayload) -> None:
        await self._client.cast({"is_admin": True}, "info", publisher_id=self._publisher,
                                event_type=EVENT, payload=dict(payload), metadata={})
