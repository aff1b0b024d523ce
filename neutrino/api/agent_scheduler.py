"""The agent scheduler URLs: which agents host which networks and routers.

``/v2.0/agents/{id}/dhcp-networks`` and ``/v2.0/agents/{id}/l3-routers`` list
what an agent hosts, add to it (``POST {"network_id": ...}``, answered
``201 null`` as Neutron does) and remove from it (``DELETE .../{network_id}``);
``/v2.0/networks/{id}/dhcp-agents`` and ``/v2.0/routers/{id}/l3-agents`` list
the agents hosting one. All admin only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from neutrino import exceptions as exc
from neutrino.api.controller import method_not_allowed
from neutrino.api.policy import Policy
from neutrino.api.request import JSON_NULL, Request, Response
from neutrino.definitions import validators as v


@dataclass(frozen=True)
class Hosted:
    """One of the four URLs: ``<parent>/{id}/<name>``."""

    parent: str  # the parent collection
    name: str  # the sub-collection in the URL
    collection: str  # the key of the list in the answer
    list_method: str
    # (the body key naming what to add, the add method, the remove method)
    writes: tuple[str, str, str] | None = None

    @property
    def member(self) -> str:
        return self.name[:-1]  # the policy names one: create_dhcp-network


URLS = {
    "dhcp_agent_scheduler": (
        Hosted("agents", "dhcp-networks", "networks", "list_networks_on_dhcp_agent",
               ("network_id", "add_network_to_dhcp_agent", "remove_network_from_dhcp_agent")),
        Hosted("networks", "dhcp-agents", "agents", "list_dhcp_agents_hosting_network"),
    ),
    "l3_agent_scheduler": (
        Hosted("agents", "l3-routers", "routers", "list_routers_on_l3_agent",
               ("router_id", "add_router_to_l3_agent", "remove_router_from_l3_agent")),
        Hosted("routers", "l3-agents", "agents", "list_l3_agents_hosting_router"),
    ),
}


class AgentSchedulerController:
    """Serves the URLs of the scheduler extensions the loaded plugins claim."""

    def __init__(self, owners: dict[str, Any], policy: Policy):
        self.policy = policy
        self.routes: dict[tuple[str, str], tuple[Hosted, Any]] = {}
        for alias, urls in URLS.items():
            if alias in owners:
                for url in urls:
                    self.routes[(url.parent, url.name)] = (url, owners[alias])

    def serves(self, parent: str, name: str) -> bool:
        return (parent, name) in self.routes

    def _authorize(self, req: Request, rule: str) -> None:
        if not self.policy.allows(rule, req.context, {}):
            raise exc.PolicyNotAuthorized(action=rule)

    def dispatch(self, req: Request, parent: str, parent_id: str, name: str,
                 rest: list[str]) -> Response:
        url, plugin = self.routes[(parent, name)]
        ctx = req.context
        if not rest and req.method == "GET":
            self._authorize(req, f"get_{url.name}")
            fields = req.fields()
            items = getattr(plugin, url.list_method)(ctx, parent_id)
            if fields:
                items = [{k: item[k] for k in fields if k in item} for item in items]
            return Response(200, {url.collection: items})
        if url.writes is None:
            raise method_not_allowed()
        key, add, remove = url.writes
        if not rest and req.method == "POST":
            self._authorize(req, f"create_{url.member}")
            body = req.json()
            item_id = body.get(key)
            if not isinstance(item_id, str) or v.uuid(item_id):
                raise exc.HTTPBadRequest(msg=f"Invalid input: '{key}' must be given as "
                                             "a UUID")
            getattr(plugin, add)(ctx, parent_id, item_id)
            return Response(201, JSON_NULL)
        if len(rest) == 1 and req.method == "DELETE":
            self._authorize(req, f"delete_{url.member}")
            getattr(plugin, remove)(ctx, parent_id, rest[0])
            return Response(204)
        if len(rest) > 1:
            raise exc.HTTPNotFound()
        raise method_not_allowed()
