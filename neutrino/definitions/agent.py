"""agent: the agents that report their state to the server (admin only), and the
extensions refining them (agent-resources-synced, agent_sort_key).

Agents are not created through the API: an agent appears with its first state
report (see ``neutrino/services/agents/rpc.py``). ``alive`` is computed from
``heartbeat_timestamp`` and ``[DEFAULT] agent_down_time``.
"""

from dataclasses import replace

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import Attr, Extension, Resource, attrs

AGENT_TYPE_DHCP = "DHCP agent"
AGENT_TYPE_L3 = "L3 agent"

# The server's answer to a state report (Neutron's AGENT_NEW/ALIVE/REVIVED).
AGENT_NEW = "new"
AGENT_ALIVE = "alive"
AGENT_REVIVED = "revived"  # it had been taken for dead: it should resync


class AgentNotFound(exc.NotFound):
    message = "Agent %(agent_id)s could not be found."


RESOURCE = Resource(
    name="agent",
    collection="agents",
    not_found=AgentNotFound,
    attrs=attrs(
        Attr("id", validate=v.uuid),
        Attr("agent_type"),
        Attr("binary"),
        Attr("topic"),
        Attr("host"),
        Attr("admin_state_up", allow_put=True, convert=v.to_boolean),
        Attr("created_at", filter=False),
        Attr("started_at", filter=False),
        Attr("heartbeat_timestamp", filter=False),
        Attr("alive", convert_filter=v.to_boolean),
        Attr("configurations", filter=False),
        Attr("description", allow_put=True, validate=v.string_or_none(255)),
    ),
)

EXTENSION = Extension(
    alias="agent",
    name="agent",
    description="The agent management extension.",
    updated="2013-02-03T10:00:00-00:00",
    resources=(RESOURCE,),
)

RESOURCES_SYNCED = Extension(
    alias="agent-resources-synced",
    name="Agent's Resource View Synced to Placement",
    description="Stores success/failure of last sync to Placement",
    updated="2018-12-19T00:00:00-00:00",
    attributes={"agents": attrs(Attr("resources_synced", filter=False))},
    required=("agent",),
)

# Every attribute of the agent extension but configurations is a sort key.
SORT_KEY = Extension(
    alias="agent_sort_key",
    name="Agents Sort Key",
    description="Enabling the keyword sort_key for sorting in agents.",
    updated="2013-02-03T10:00:00-00:00",
    attributes={"agents": {name: replace(attr, sort=True)
                           for name, attr in RESOURCE.attrs.items()
                           if name != "configurations"}},
    required=("agent",),
)

EXTENSIONS = (EXTENSION, RESOURCES_SYNCED, SORT_KEY)
