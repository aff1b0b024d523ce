"""VPNaaS on the L3 agent's routers (Neutron's ``vpnaas`` L3 agent extension,
``[agent] extensions = port_forwarding,vpnaas``): IPsec site-to-site
connections by strongSwan, one charon per router that has VPN services.

The server sends each router's services with its sync data (``_vpnservices``,
``neutrino.rpc.contracts.vpn``) and tells the agent of changes
(``routers_updated``). So:

- ``router_spec`` (pure) adds the tunnels' NAT exemptions to the router's
  chains: (local CIDR, peer CIDR) traffic is not SNATed;
- ``handle_router`` makes the router's charon have exactly its connections
  (``neutrino.linux.strongswan.Charon``: started if needed, only changes
  loaded); no services left: charon stopped;
- every ``[vpnagent] status_interval`` seconds, and after each
  ``handle_router``, charon's view is read (an SA established: ACTIVE, else
  DOWN) and what differs from what the server was last told (or shows) is
  reported (``update_status`` on ``ipsec_driver``).

Administratively down connections and services are not loaded (DOWN). A
connection charon refuses is ERROR, its reason in the log, and the router
is synced again after ``RETRY_AFTER`` seconds; a charon that does not start
makes its router's services ERROR, likewise retried. A charon that dies is
seen at once (``ProcessMonitor``): its router is synced again, which starts
it again.

IPsec is done by the kernel (XFRM) or by charon itself (``kernel-libipsec``,
where the kernel has no ESP): ``[strongswan] ipsec_mode``, ``auto`` by
default: decided, and logged in one line, when the agent checks its host.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import logging
import os
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, Protocol

from neutrino.agents.extensions.api import AgentHandles, L3AgentExtension
from neutrino.agents.process_monitor import ProcessMonitor
from neutrino.config import Config, Opt, OptGroup, choice, int_range, parse_list
from neutrino.linux import host_check, router, strongswan
from neutrino.linux.host_check import Needs
from neutrino.rpc.contracts.vpn import (
    VPN_SERVICES,
    ConnectionStatus,
    ServiceStatus,
    SiteConnectionSyncData,
    Status,
    VpnPluginApi,
    VpnServiceSyncData,
)

LOG = logging.getLogger(__name__)
RETRY_AFTER = 5.0
IPSEC_DIR = "ipsec"

#: Neutron's strongSwan device drivers, and ours, all meaning the one we have
STRONGSWAN_DRIVERS = (
    "strongswan",
    "neutron_vpnaas.services.vpn.device_drivers.strongswan_ipsec.StrongSwanDriver",
    "neutrino.agents.extensions.vpn.StrongSwanDriver")


def parse_device_drivers(text: str) -> list[str]:
    drivers = parse_list(text)
    if not drivers:
        raise ValueError("must name a driver: strongswan")
    for driver in drivers:
        if driver not in STRONGSWAN_DRIVERS:
            raise ValueError(f"{driver}: only strongSwan is supported (strongswan, or "
                             f"Neutron's {STRONGSWAN_DRIVERS[1]})")
    return ["strongswan"]


OPTIONS = (OptGroup("vpnagent", [
    Opt("vpn_device_driver", parse_device_drivers, ["strongswan"],
        "The IPsec device driver: strongswan (Neutron's class path "
        "neutron_vpnaas.services.vpn.device_drivers.strongswan_ipsec.StrongSwanDriver "
        "means the same); one charon per router with VPN services."),
    Opt("status_interval", int_range(1), 10,
        "Seconds between readings of the IPsec connections' states; what changed is "
        "reported to the server (Neutron's default is 60)."),
]), OptGroup("strongswan", [
    Opt("ipsec_mode", choice("auto", "kernel", "libipsec"), "auto",
        "Who encrypts: kernel (XFRM, needs ESP in the kernel), libipsec (charon "
        "itself, its kernel-libipsec plugin over a TUN device; ESP in UDP only) or "
        "auto (kernel if it can do ESP, else libipsec)."),
]))


class CharonLike(Protocol):
    """What the extension asks of a router's charon (``strongswan.Charon``)."""

    def converge(self, tunnels: Sequence[strongswan.Tunnel]) -> strongswan.LoadResult: ...
    def established(self) -> dict[str, bool]: ...
    def pid(self) -> int | None: ...
    def stop(self, remove: bool = True, wait: float = 5.0) -> None: ...


# --- pure --------------------------------------------------------------------------------

def services_of(data: Mapping[str, Any]) -> list[VpnServiceSyncData]:
    return list(data.get(VPN_SERVICES) or ())


def loaded_connections(services: Sequence[VpnServiceSyncData]
                       ) -> list[tuple[VpnServiceSyncData, SiteConnectionSyncData]]:
    """The connections charon is to have: those up, of services up, with an
    address to leave from."""
    return [(service, conn) for service in services
            if service["admin_state_up"] and service["external_ip"]
            for conn in service["ipsec_site_connections"] if conn["admin_state_up"]]


def tunnels(services: Sequence[VpnServiceSyncData]) -> list[strongswan.Tunnel]:
    """Pure: what the router's charon is to load, from its services."""
    found = []
    for service, conn in loaded_connections(services):
        ike, ipsec, dpd = conn["ikepolicy"], conn["ipsecpolicy"], conn["dpd"]
        found.append(strongswan.Tunnel(
            id=conn["id"], local_address=service["external_ip"] or "",
            peer_address=conn["peer_address"], local_id=conn["local_id"],
            peer_id=conn["peer_id"], psk=conn["psk"],
            local_cidrs=tuple(conn["local_cidrs"]), peer_cidrs=tuple(conn["peer_cidrs"]),
            ike=strongswan.Policy(ike["encryption_algorithm"], ike["auth_algorithm"],
                                  ike["pfs"], ike["lifetime_value"]),
            ipsec=strongswan.Policy(ipsec["encryption_algorithm"], ipsec["auth_algorithm"],
                                    ipsec["pfs"], ipsec["lifetime_value"],
                                    ipsec["transform_protocol"], ipsec["encapsulation_mode"]),
            ike_version=ike["ike_version"],
            aggressive=ike["phase1_negotiation_mode"] == "aggressive",
            initiator=conn["initiator"], dpd_action=dpd["action"],
            dpd_interval=dpd["interval"], dpd_timeout=dpd["timeout"]))
    return found


def exemptions(data: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The router's (local CIDR, peer CIDR) pairs of loaded IPv4 tunnels."""
    found = set()
    for _, conn in loaded_connections(services_of(data)):
        for local in conn["local_cidrs"]:
            for peer in conn["peer_cidrs"]:
                source = ipaddress.ip_network(local, strict=False)
                destination = ipaddress.ip_network(peer, strict=False)
                if source.version == destination.version == 4:
                    found.add((str(source), str(destination)))
    return tuple(sorted(found))


def statuses(services: Sequence[VpnServiceSyncData], established: Mapping[str, bool] | None,
             failed: Mapping[str, str]) -> dict[str, tuple[Status, dict[str, Status]]]:
    """Service id -> (its status, connection id -> status). ``established``:
    charon's view (None: charon is not running, so its services are ERROR)."""
    found: dict[str, tuple[Status, dict[str, Status]]] = {}
    for service in services:
        conns: dict[str, Status] = {}
        up = service["admin_state_up"] and bool(service["external_ip"])
        for conn in service["ipsec_site_connections"]:
            status: Status
            if not (up and conn["admin_state_up"]):
                status = "DOWN"
            elif established is None or conn["id"] in failed:
                status = "ERROR"
            else:
                status = "ACTIVE" if established.get(conn["id"]) else "DOWN"
            conns[conn["id"]] = status
        service_status: Status = ("DOWN" if not up else
                                  "ERROR" if established is None else "ACTIVE")
        found[service["id"]] = (service_status, conns)
    return found


Known = dict[str, tuple[str, dict[str, str]]]


def server_view(services: Sequence[VpnServiceSyncData]) -> Known:
    """What the server shows, from the sync data."""
    return {s["id"]: (s["status"], {c["id"]: c["status"] for c in s["ipsec_site_connections"]})
            for s in services}


def changes(known: Known, now: Mapping[str, tuple[Status, dict[str, Status]]]
            ) -> list[ServiceStatus]:
    """The services (whole, with all their connections) where ``now``
    differs from ``known``; ``updated_pending_status`` where the server had
    it PENDING_*."""
    found: list[ServiceStatus] = []
    for service_id, (status, conns) in sorted(now.items()):
        before_status, before_conns = known.get(service_id, ("", {}))
        if status == before_status and conns == before_conns:
            continue
        found.append(ServiceStatus(
            id=service_id, status=status,
            updated_pending_status=before_status.startswith("PENDING"),
            ipsec_site_connections={
                conn_id: ConnectionStatus(
                    status=conn_status,
                    updated_pending_status=before_conns.get(conn_id, "").startswith("PENDING"))
                for conn_id, conn_status in sorted(conns.items())}))
    return found


# --- the extension -----------------------------------------------------------------------

class VpnExtension(L3AgentExtension):
    def __init__(self, charons: Callable[[str, str], CharonLike] | None = None):
        """``charons(namespace, directory)``: a router's charon (tests give a
        fake host's; by default strongSwan's, in the mode the host can do)."""
        self._make_charon = charons
        self.mode: strongswan.Mode | None = None

    # --- start ---------------------------------------------------------------------------

    def host_needs(self, conf: Config, needs: Needs) -> None:
        why = conf.setting("agent", "extensions")
        needs.tool(why, host_check.CHARON, host_check.SWANCTL, host_check.IP)
        if self._make_charon is None:
            needs.checks.append(lambda: self._decide_mode(conf))

    def _decide_mode(self, conf: Config) -> strongswan.Mode:
        wanted = conf.group("strongswan").ipsec_mode
        self.mode = strongswan.resolve_mode(wanted, conf.setting("strongswan", "ipsec_mode"))
        LOG.info("vpnaas: IPsec by %s ([strongswan] ipsec_mode = %s%s)",
                 "the kernel (XFRM)" if self.mode == "kernel"
                 else "charon in userspace, its kernel-libipsec plugin", wanted,
                 ": the kernel cannot do ESP" if wanted == "auto" and self.mode == "libipsec"
                 else "")
        return self.mode

    def initialize(self, handles: AgentHandles) -> None:
        self.handles = handles
        self.interval = handles.conf.group("vpnagent").status_interval
        self.plugin = VpnPluginApi.on(handles.bus)
        self.state_dir = os.path.abspath(os.path.join(handles.conf.DEFAULT.state_path, "l3"))
        if self._make_charon is None:
            mode = self.mode or self._decide_mode(handles.conf)
            self._make_charon = lambda namespace, directory: strongswan.Charon(
                namespace, directory, mode)
        self.charons: dict[str, CharonLike] = {}
        #: router id -> its services as last synced
        self.services: dict[str, list[VpnServiceSyncData]] = {}
        #: router id -> connection id -> why charon refused it
        self.failed: dict[str, dict[str, str]] = {}
        #: router id -> what the server has been told (or shows)
        self.known: dict[str, Known] = {}
        self.monitor = ProcessMonitor(self._charon_ended)
        self.retry_after = RETRY_AFTER

    # --- the routers -----------------------------------------------------------------------

    def router_spec(self, data: Mapping[str, Any], spec: router.Router) -> router.Router:
        if spec.nat.gateway is None:
            return spec
        added = exemptions(data)
        if not added:
            return spec
        return dataclasses.replace(spec, nat=dataclasses.replace(
            spec.nat, exempt=spec.nat.exempt + added))

    async def handle_router(self, data: Mapping[str, Any]) -> None:
        router_id = data["id"]
        services = services_of(data)
        if not services:
            await self._stop(router_id)
            return
        self.services[router_id] = services
        self.known[router_id] = server_view(services)
        charon = self.charons.get(router_id)
        if charon is None:
            charon = self.charons[router_id] = self._charon(router_id)
        self.monitor.forget(router_id)  # what converging restarts is no death
        try:
            result = await self.handles.run(charon.converge, tunnels(services))
        except Exception as error:
            LOG.error("router %s: strongSwan not running: %s", router_id, error)
            self.failed[router_id] = {}
            await self._report(router_id, None)
            self._retry(router_id)
            return
        self.monitor.watch(router_id, {"charon": await self.handles.run(charon.pid)})
        self.failed[router_id] = result.failed
        for conn_id, why in sorted(result.failed.items()):
            LOG.error("router %s: IPsec site connection %s not loaded: %s",
                      router_id, conn_id, why)
        if result.failed:
            self._retry(router_id)
        elif result.loaded:
            LOG.info("router %s: IPsec connections loaded: %s", router_id, ", ".join(
                sorted(c["id"] for _, c in loaded_connections(services))) or "none")
        await self.read(router_id)

    def _charon(self, router_id: str) -> CharonLike:
        assert self._make_charon is not None
        return self._make_charon(router.namespace_name(router_id),
                                 os.path.join(self.state_dir, router_id, IPSEC_DIR))

    def _retry(self, router_id: str) -> None:
        asyncio.get_running_loop().call_later(
            self.retry_after, self.handles.mark_dirty, ("router", router_id))

    def _charon_ended(self, router_id: str, name: str) -> None:
        if router_id not in self.charons:
            return  # stopped on purpose
        # (a router being retired loses its charon with its namespace: the
        # sync this asks for finds it gone, and stops nothing more)
        LOG.warning("router %s: its charon ended; starting it again", router_id)
        self.handles.mark_dirty(("router", router_id))

    async def delete_router(self, router_id: str) -> None:
        await self._stop(router_id)

    async def _stop(self, router_id: str) -> None:
        self.monitor.forget(router_id)
        charon = self.charons.pop(router_id, None)
        if charon is None and os.path.isdir(os.path.join(self.state_dir, router_id, IPSEC_DIR)):
            charon = self._charon(router_id)  # started before the agent restarted
        if charon is not None:
            LOG.info("router %s: no VPN service left, stopping its charon", router_id)
            await self.handles.run(charon.stop)
        self.services.pop(router_id, None)
        self.failed.pop(router_id, None)
        self.known.pop(router_id, None)

    # --- statuses ----------------------------------------------------------------------------

    def background(self) -> Sequence[Callable[[], Coroutine[Any, Any, None]]]:
        return [self._status_loop]

    async def _status_loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            for router_id in sorted(self.charons):
                try:
                    await self.read(router_id)
                except Exception as error:  # the server away: told on the next change
                    LOG.warning("router %s: IPsec statuses not reported: %s", router_id, error)

    async def read(self, router_id: str) -> None:
        """Read the router's charon's view; report what changed."""
        charon = self.charons.get(router_id)
        if charon is None:
            return
        try:
            established: dict[str, bool] | None = await self.handles.run(charon.established)
        except Exception as error:
            LOG.warning("router %s: IPsec states not read: %s", router_id, error)
            established = None
            if await self.handles.run(charon.pid) is None:  # the monitor's safety net
                self._charon_ended(router_id, "charon")
        await self._report(router_id, established)

    async def _report(self, router_id: str, established: Mapping[str, bool] | None) -> None:
        services = self.services.get(router_id, [])
        now = statuses(services, established, self.failed.get(router_id, {}))
        known = self.known.setdefault(router_id, {})
        found = changes(known, now)
        if not found:
            return
        await self.plugin.update_status(dict(self.handles.context), status=found)
        for status in found:
            known[status["id"]] = (status["status"], {
                conn_id: conn["status"]
                for conn_id, conn in status["ipsec_site_connections"].items()})
