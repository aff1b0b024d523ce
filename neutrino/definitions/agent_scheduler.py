"""dhcp_agent_scheduler and l3_agent_scheduler: which agents host which networks
and routers, and an admin's say in it.

``/v2.0/agents/{id}/dhcp-networks`` (list, add with ``{"network_id": ...}``,
remove), ``/v2.0/networks/{id}/dhcp-agents`` (list); the same for L3 agents
with ``l3-routers`` and ``l3-agents``. These are not ordinary resources:
their bodies are bare and their lists are of networks, routers and agents,
so ``neutrino/api/agent_scheduler.py`` serves them.
"""

from neutrino import exceptions as exc
from neutrino.definitions.base import Extension


class InvalidDHCPAgent(exc.BadRequest):
    message = "Agent %(id)s is not a valid DHCP Agent or has been disabled"


class NetworkHostedByDHCPAgent(exc.Conflict):
    message = "The network %(network_id)s has been already hosted by the DHCP Agent " \
              "%(agent_id)s."


class NetworkNotHostedByDhcpAgent(exc.Conflict):
    message = "The network %(network_id)s is not hosted by the DHCP agent %(agent_id)s."


class InvalidL3Agent(exc.BadRequest):
    message = "Agent %(id)s is not a L3 Agent or has been disabled"


class RouterHostedByL3Agent(exc.Conflict):
    message = "The router %(router_id)s has been already hosted by the L3 Agent " \
              "%(agent_id)s."


class RouterNotHostedByL3Agent(exc.Conflict):
    message = "The router %(router_id)s is not hosted by L3 agent %(agent_id)s."


DHCP_EXTENSION = Extension(
    alias="dhcp_agent_scheduler",
    name="DHCP Agent Scheduler",
    description="Schedule networks among dhcp agents",
    updated="2013-02-07T10:00:00-00:00",
    required=("agent",),
)

L3_EXTENSION = Extension(
    alias="l3_agent_scheduler",
    name="L3 Agent Scheduler",
    description="Schedule routers among l3 agents",
    updated="2013-02-07T10:00:00-00:00",
    required=("agent", "router"),
)

EXTENSIONS = (DHCP_EXTENSION, L3_EXTENSION)
