"""``neutrino-all-in-one``: the server and this host's L2, DHCP, L3 and metadata
agents in one process, on the in-process bus (root; for a laptop or a lab).

It reads the same files as ``neutrino-server`` and the agents (one set of
files: ``[linux_bridge]``, ``[vxlan]``, ``[securitygroup]``, ``[agent]`` ...
beside the server's sections). The agents run on the server's event loop and
are started and stopped with it; with ``transport_url = rabbit://...`` agents
on other hosts can join too. ``--background`` runs it detached and returns
once it serves, ``--stop`` ends that one (neutrino/cmd/background.py).
"""

from __future__ import annotations

import asyncio
import sys

from neutrino import cli, config
from neutrino.agents.base import AGENT_OPTIONS, Agent
from neutrino.agents.dhcp import DhcpAgent
from neutrino.agents.l3 import L3Agent
from neutrino.agents.linuxbridge import LinuxBridgeAgent
from neutrino.agents.metadata import MetadataAgent
from neutrino.cmd import background
from neutrino.cmd.server import (
    StartupError,
    api_sockets,
    build_app,
    check,
    pass_logging_options,
    set_up_database,
    uvicorn_options,
)
from neutrino.cmd.startup import serve
from neutrino.linux.errors import HostError
from neutrino.rpc.bus import Bus
from neutrino.rpc.transport import get_transport

PROGRAM = "neutrino-all-in-one"
AGENTS: tuple[type[Agent], ...] = (LinuxBridgeAgent, DhcpAgent, L3Agent, MetadataAgent)


class AgentsService:
    """Runs agents beside the API, as one of its background services."""

    def __init__(self, agents: list[Agent]):
        self.agents = agents
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task] = []

    async def start(self) -> None:
        self._stop.clear()
        self._tasks = [asyncio.create_task(agent.run(self._stop)) for agent in self.agents]

    async def stop(self) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks, return_exceptions=True)


def agent_groups() -> list[config.OptGroup]:
    """The option groups of the agents run here."""
    groups = [AGENT_OPTIONS]
    for agent_class in AGENTS:
        groups += [group for group in agent_class.option_groups if group not in groups]
    return groups


def make_agents(conf: config.Config) -> list[Agent]:
    """The agents, each checked against the host (``HostError``, one line)."""
    conf.register(agent_groups())
    agents = [agent_class(conf, Bus(get_transport(conf.DEFAULT.transport_url),
                                    timeout=conf.DEFAULT.rpc_response_timeout))
              for agent_class in AGENTS]
    for agent in agents:
        agent.check_host()
    return agents


def main(argv: list[str] | None = None) -> None:
    parser = cli.parser(PROGRAM, cli.describe(__doc__))
    parser.add_argument("--background", action="store_true",
                        help="run detached (output to $state_path/all-in-one.log); return "
                             "once the API answers and this host's agents are alive")
    parser.add_argument("--stop", action="store_true",
                        help="stop the one started with --background (same --config-file), "
                             "and wait until it is gone")
    args = parser.parse_args(argv)
    pass_logging_options(PROGRAM, args)
    if args.stop:
        background.stop_from_files(PROGRAM, args.config_file)
        return
    try:
        # every check before any work: the agents' groups are read with the
        # server's, their hosts' needs and the port are checked before the
        # database is set up and before any agent syncs
        conf = check(args.config_file, agent_groups())
        if conf.DEFAULT.api_workers != 1 or conf.DEFAULT.rpc_workers:
            raise StartupError("the all-in-one mode runs in one process: api_workers = 1 "
                               "and rpc_workers = 0")
        agents = make_agents(conf)
        sockets = api_sockets(conf)
        set_up_database(conf)
    except (StartupError, config.ConfigError, HostError, ValueError) as error:
        print(f"neutrino-all-in-one: {error}", file=sys.stderr)
        sys.exit(2)
    if args.background:
        background.serve_in_background(PROGRAM, conf, len(agents))
    app = build_app(conf)
    app.background.append(AgentsService(agents))
    serve(app, sockets, **uvicorn_options(conf))
