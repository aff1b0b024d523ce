"""Trunks on the Linux bridge agent: refused, in the trunk's status.

Neutron's Linux bridge trunk driver carries each subport on a VLAN
sub-interface of the parent's tap (``tap.101`` in the subport's network's
bridge). This host's kernel has no 8021q module, so there is no such device
to make, and no other way in a plain Linux bridge to split the tap's VLANs;
rather than wire the parent alone and leave the subports silently dead, the
agent says so: one error line per trunk, and the trunk in ERROR (through the
trunk RPC's status report, as the OVS agent reports its own). The parent
itself is wired as any port, untagged.

The check runs beside the sync, not in it: a server without the ``trunk``
plugin answers nothing, and the ports' wiring must not wait for that (the
question then times out, is logged at debug level, and is asked again for
the next ports).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Any

from neutrino.rpc.contracts import trunk as contract
from neutrino.rpc.contracts.trunk import TrunkPluginApi
from neutrino.rpc.errors import RpcError

LOG = logging.getLogger(__name__)
#: seconds to wait for the trunk plugin's answer
TIMEOUT = 10.0
REASON = ("this Linux bridge host cannot carry subports (they need VLAN sub-interfaces "
          "of the parent's tap, and the kernel has no 8021q module); use an Open vSwitch host")


class TrunksRefused:
    """Asks whether the ports wired here are trunk parents; if so, ERROR."""

    def __init__(self, api: TrunkPluginApi, context: dict[str, Any],
                 wired: Callable[[], Iterable[str]]):
        """``wired``: the ids of the ports the agent has wired."""
        self._api = api
        self._context = context
        self._wired = wired
        self._told: set[str] = set()  # trunks reported in ERROR
        self._tasks: set[asyncio.Task[None]] = set()

    def check(self, port_ids: Iterable[str]) -> None:
        """Look at these ports beside the sync."""
        wanted = sorted(set(port_ids))
        if wanted:
            task = asyncio.get_running_loop().create_task(self._check(wanted))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _check(self, port_ids: list[str]) -> None:
        try:
            found = await self._api.get_trunk_details(self._context, port_ids, timeout=TIMEOUT)
            for parent_id, details in sorted(found.items()):
                trunk_id = details["trunk_id"]
                if trunk_id in self._told and details["status"] == contract.ERROR:
                    continue
                LOG.error("trunk %s (parent port %s) is in ERROR: %s", trunk_id, parent_id,
                          REASON)
                await self._api.update_trunk_status(self._context, trunk_id, contract.ERROR)
                self._told.add(trunk_id)
        except RpcError as error:  # no trunk plugin, say: nothing to refuse
            LOG.debug("no answer about trunks of ports %s: %s", ", ".join(port_ids), error)
        except Exception:
            LOG.exception("checking ports %s for trunks failed", ", ".join(port_ids))

    def changed(self, trunk_id: str, port_id: str) -> None:
        """A trunk was made or changed: if its parent is wired here, look again."""
        if port_id in set(self._wired()):
            self._told.discard(trunk_id)
            self.check([port_id])


class TrunkNotifications:
    """What a Linux bridge agent serves on ``TRUNK_UPDATE``."""

    rpc_version = contract.NOTIFICATION_VERSION

    def __init__(self, trunks: TrunksRefused):
        self._trunks = trunks

    async def trunk_changed(self, context: dict, trunk_id: str, port_id: str = "",
                            **kwargs: Any) -> None:
        self._trunks.changed(trunk_id, port_id)
