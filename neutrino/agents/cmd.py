"""Running an agent as a command: configuration, logging, start-up checks (one
line and a non-zero exit for the first that fails), the loop, SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import sys

from neutrino import cli, config, log
from neutrino.agents.base import AGENT_OPTIONS, Agent
from neutrino.agents.commands import agent_commands
from neutrino.linux.errors import HostError
from neutrino.rpc.bus import Bus
from neutrino.rpc.errors import TransportError
from neutrino.rpc.transport import TransportURLError, get_transport


def main(agent_class: type[Agent], argv: list[str] | None = None) -> None:
    args = cli.parser(agent_class.binary, cli.describe(sys.modules[agent_class.__module__].__doc__),
                      _sections(agent_class)).parse_args(argv)
    try:
        conf = config.load(args.config_file)
        conf.register((AGENT_OPTIONS, *agent_class.option_groups))
        # an agent without the bus gets one that goes nowhere (the base wants one)
        transport = get_transport(conf.DEFAULT.transport_url if agent_class.uses_bus
                                  else f"memory://{agent_class.binary}")
    except (config.ConfigError, TransportURLError) as error:
        print(f"{agent_class.binary}: {error}", file=sys.stderr)
        sys.exit(2)
    try:
        log.setup(conf, agent_class.binary, cli.logging_overrides(args))
    except config.ConfigError as error:
        print(f"{agent_class.binary}: {error}", file=sys.stderr)
        sys.exit(2)
    conf.warn_unknown(agent_commands)  # every group the agent reads is registered by now
    try:
        agent = agent_class(conf, Bus(transport, timeout=conf.DEFAULT.rpc_response_timeout))
        agent.check_host()  # tools, devices, directories: before it reports alive
        agent.connect()
    except (ValueError, HostError) as error:  # ValueError: options at odds with another
        print(f"{agent_class.binary}: {error}", file=sys.stderr)
        sys.exit(2)
    try:
        if agent_class.uses_bus:
            asyncio.run(transport.probe())  # the broker, once: not a reconnecting loop
    except TransportError as error:
        print(f"{agent_class.binary}: {error}, set by {conf.source('DEFAULT', 'transport_url')}",
              file=sys.stderr)
        sys.exit(2)
    asyncio.run(_serve(agent))


def _sections(agent_class: type[Agent]) -> str:
    """What --help says of the agent's configuration: the sections it reads."""
    sections = dict.fromkeys(["DEFAULT", AGENT_OPTIONS.name,
                              *(group.name for group in agent_class.option_groups)])
    sample = agent_class.binary.removeprefix("neutrino-").replace("-", "_") + ".ini"
    return (f"It reads {', '.join(f'[{name}]' for name in sections)} of the config files "
            f"(the project's etc/neutrino.conf and etc/{sample} document them).")


async def _serve(agent: Agent) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await agent.run(stop)
