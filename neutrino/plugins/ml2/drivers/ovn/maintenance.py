"""The ``ovn`` driver's periodic work, in the server processes that run the
periodic tasks: drift repair, and the chassis shown as agents.

Chassis as agents, as Neutron shows them: each chassis of the Southbound
database is an ``OVN Controller agent`` (``OVN Controller Gateway agent``
where it offers itself as a gateway, ``ovn-cms-options=enable-chassis-as-gw``),
and, where ``neutrino-ovn-metadata-agent`` runs beside it, an ``OVN Metadata
agent``. Liveness comes from ``nb_cfg``: every tick the server bumps
``NB_Global.nb_cfg``; ovn-northd carries it to the Southbound database, and
each ovn-controller copies it into its ``Chassis_Private`` row once it has
processed it (the metadata agent into that row's external_ids). A chassis that
has caught up with the previous tick's value is alive: its agent row gets a
heartbeat, so ``/v2.0/agents``, liveness and binding work as for any agent.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from neutrino.ovn import names
from neutrino.ovn.ovsdb import SB_API, OvnDatabase, OvnUnavailable, OvnUnavailableError
from neutrino.plugins.ml2.drivers.ovn.sync import NorthboundSync, full_replica

if TYPE_CHECKING:
    from neutrino.plugins.ml2.drivers.ovn.driver import OvnMechanismDriver

LOG = logging.getLogger(__name__)
#: seconds between drift checks (Neutron's maintenance worker: 300)
REPAIR_INTERVAL = 300.0
#: the first check, soon after start: what a stopped server missed
FIRST_REPAIR_AFTER = 5.0
SB_TABLES = ("SB_Global", "Chassis", "Chassis_Private", "Encap")


class Maintenance:
    def __init__(self, driver: OvnMechanismDriver):
        self.driver = driver
        self.down_time = driver.conf.DEFAULT.agent_down_time
        self.sb: OvnDatabase | None = None
        self._next_repair = time.monotonic() + FIRST_REPAIR_AFTER
        self._was_connected = False
        self._asked_nb_cfg: int | None = None
        self._asked_sb_cfg: int | None = None

    def tasks(self) -> list[tuple[float, Callable[[], None]]]:
        heartbeat = min(max(self.down_time / 4, 1.0), 15.0)
        return [(1.0, self.repair_when_due), (heartbeat, self.chassis_heartbeat)]

    # --- drift -----------------------------------------------------------------------

    def soon(self) -> None:
        """A write this process could not make: check for drift shortly (a
        process that runs no periodic task leaves its missed writes to the
        next regular check of one that does, or to OVN's reconnection)."""
        self._next_repair = min(self._next_repair, time.monotonic() + FIRST_REPAIR_AFTER)

    def repair_when_due(self) -> None:
        connected = self.driver.nb.connected
        if connected and not self._was_connected:  # back: what was missed meanwhile
            self.soon()
        self._was_connected = connected
        if time.monotonic() < self._next_repair or not connected:
            return
        self._next_repair = time.monotonic() + REPAIR_INTERVAL
        try:
            with full_replica(self.driver) as replica:
                sync = NorthboundSync(self.driver, replica)
                drifts = sync.find()
            if drifts:
                LOG.warning("OVN Northbound database out of step with neutrino's: %s",
                            "; ".join(map(str, drifts[:20])))
                LOG.info("repaired %d of %d", sync.repair(drifts), len(drifts))
            else:
                self.driver.ensure_drop_group()
        except (OvnUnavailable, OvnUnavailableError) as error:
            LOG.warning("drift check and repair cut short: %s", error)
            self.soon()

    # --- chassis -----------------------------------------------------------------------

    def _southbound(self) -> OvnDatabase:
        if self.sb is None:
            options = self.driver.options
            self.sb = OvnDatabase(options.ovn_sb_connection, "OVN_Southbound", SB_API,
                                  tables=SB_TABLES, timeout=options.ovsdb_connection_timeout)
            self.sb.start()
        return self.sb

    def chassis_heartbeat(self) -> None:
        sb, nb = self._southbound(), self.driver.nb
        if not sb.connected or not nb.connected:
            return
        try:
            seen = sb.read(self._caught_up)
            self._bump(sb)
        except OvnUnavailable as error:
            LOG.warning("chassis heartbeat skipped: %s", error)
            return
        assert self.driver.plugin is not None
        reports = self.driver.plugin.env.hooks.agent_reports
        if seen and reports is not None:
            reports.record(seen)

    def _caught_up(self, api: Any) -> list[dict[str, Any]]:
        """The agents' states of the chassis that processed the last tick's nb_cfg
        (none at the first tick: a chassis that died keeps its rows)."""
        private = {row.name: row for row in api.tables["Chassis_Private"].rows.values()}
        states = []
        for chassis in api.tables["Chassis"].rows.values():
            row = private.get(chassis.name)
            if row is None:
                continue
            options = chassis.other_config.get("ovn-cms-options", "")
            mappings = dict(item.split(":", 1) for item in
                            chassis.other_config.get("ovn-bridge-mappings", "").split(",")
                            if ":" in item)
            if self._asked_nb_cfg is not None and row.nb_cfg >= self._asked_nb_cfg:
                states.append({
                    "agent_type": (names.GATEWAY_AGENT if "enable-chassis-as-gw" in options
                                   else names.CONTROLLER_AGENT),
                    "binary": "ovn-controller", "topic": "N/A", "host": chassis.hostname,
                    "configurations": {
                        "chassis_name": chassis.name, "bridge_mappings": mappings,
                        "tunnel_types": sorted({encap.type for encap in chassis.encaps}),
                        "datapath_type": chassis.other_config.get("datapath-type", ""),
                        "ovn-cms-options": options}})
            metadata_cfg = row.external_ids.get(names.METADATA_SB_CFG)
            if metadata_cfg is not None and self._asked_sb_cfg is not None \
                    and int(metadata_cfg) >= self._asked_sb_cfg:
                states.append({
                    "agent_type": names.METADATA_AGENT,
                    "binary": "neutrino-ovn-metadata-agent", "topic": "N/A",
                    "host": chassis.hostname,
                    "configurations": {"chassis_name": chassis.name}})
        return states

    def _bump(self, sb: OvnDatabase) -> None:
        """Ask every chassis to show it is alive by the next tick."""
        asked = self.driver.nb.bump_nb_cfg()
        if asked is None:
            return
        self._asked_nb_cfg = asked
        # the metadata agents answer the Southbound's value, which northd sets
        self._asked_sb_cfg = sb.read(lambda api: next(
            (row.nb_cfg for row in api.tables["SB_Global"].rows.values()), None))

    def stop(self) -> None:
        if self.sb is not None:
            self.sb.stop()
