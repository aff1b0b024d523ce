"""NDP proxies on the L3 agent's routers (Neutron's ``ndp_proxy`` L3 agent
extension, ``[agent] extensions = ndp_proxy``).

The server sends each router's ``enable_ndp_proxy`` and proxies with its sync
data (``_ndp_proxies``) and tells the router's agent when they change
(``routers_updated``), so this extension needs no calls of its own. Once a
router is set up, its namespace is made to publish the proxied addresses on
its gateway and to let in, from the gateway, only those of the internal
IPv6 subnets in the gateway's address scope (``neutrino.linux.ndp_proxy``,
which reads the namespace back and changes only what differs). A router
without ``enable_ndp_proxy`` or without a gateway is left with none of it.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable, Mapping
from typing import Any

from neutrino.agents.extensions.api import AgentHandles, L3AgentExtension
from neutrino.config import Config
from neutrino.linux import host_check, interface, ndp_proxy, router
from neutrino.rpc.contracts.l3 import INTERFACES

LOG = logging.getLogger(__name__)
NDP_PROXIES = "_ndp_proxies"


def wanted(data: Mapping[str, Any]) -> ndp_proxy.Spec:
    """Pure: the router's NDP proxies from its sync data."""
    gw_port = data.get("gw_port")
    if not gw_port or not data.get("enable_ndp_proxy"):
        return ndp_proxy.Spec()
    scope = (gw_port.get("address_scopes") or {}).get("6")
    cidrs = tuple(subnet["cidr"] for port in data.get(INTERFACES, ())
                  if scope is not None and (port.get("address_scopes") or {}).get("6") == scope
                  for subnet in port.get("subnets", ())
                  if ipaddress.ip_network(subnet["cidr"]).version == 6)
    return ndp_proxy.Spec(
        gateway=interface.device_name(gw_port["id"], router.EXTERNAL),
        addresses=tuple(proxy["ip_address"] for proxy in data.get(NDP_PROXIES, ())),
        cidrs=cidrs)


class NdpProxyExtension(L3AgentExtension):
    def __init__(self, proxies: Callable[[str], ndp_proxy.NdpProxies] = ndp_proxy.NdpProxies):
        """``proxies``: a router namespace's ``NdpProxies`` (tests give a fake host's)."""
        self._make = proxies

    def host_needs(self, conf: Config, needs: host_check.Needs) -> None:
        needs.tool(conf.setting("agent", "extensions"), host_check.IP, host_check.SYSCTL,
                   *host_check.IP6TABLES)

    def initialize(self, handles: AgentHandles) -> None:
        self._handles = handles

    async def handle_router(self, data: Mapping[str, Any]) -> None:
        router_id = data["id"]
        host = self._make(router.namespace_name(router_id))
        for change in await self._handles.run(host.apply, wanted(data)):
            LOG.info("router %s: NDP proxy: %s", router_id, change)
