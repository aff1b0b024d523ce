"""Running an agent as a command: configuration, logging, start-up checks (one
line and a non-zero exit for the first that fails), the loop, SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from neutrino import config
from neutrino.agents.base import AGENT_OPTIONS, Agent
from neutrino.linux.errors import HostError
from neutrino.rpc.bus import Bus
from neutrino.rpc.errors import TransportError
from neutrino.rpc.transport import TransportURLError, get_transport


def main(agent_class: type[Agent], argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog=agent_class.binary)
    parser.add_argument("--config-file", action="append", default=[],
                        help="INI file; repeatable, later files override earlier ones")
    args = parser.parse_args(argv)
    try:
        conf = config.load(args.config_file)
        conf.register((AGENT_OPTIONS, *agent_class.option_groups))
        transport = get_transport(conf.DEFAULT.transport_url)
    except (config.ConfigError, TransportURLError) as error:
        print(f"{agent_class.binary}: {error}", file=sys.stderr)
        sys.exit(2)
    logging.basicConfig(level=logging.DEBUG if conf.DEFAULT.debug else logging.INFO,
                        format="%(asctime)s %(process)d %(levelname)s %(name)s %(message)s")
    conf.warn_unknown()  # every group the agent reads is registered by now
    try:
        agent = agent_class(conf, Bus(transport, timeout=conf.DEFAULT.rpc_response_timeout))
        agent.check_host()  # tools, devices, directories: before it reports alive
    except (ValueError, HostError) as error:  # ValueError: options at odds with another
        print(f"{agent_class.binary}: {error}", file=sys.stderr)
        sys.exit(2)
    try:
        asyncio.run(transport.probe())  # the broker, once: not a reconnecting loop
    except TransportError as error:
        print(f"{agent_class.binary}: {error}, set by {conf.source('DEFAULT', 'transport_url')}",
              file=sys.stderr)
        sys.exit(2)
    asyncio.run(_serve(agent))


async def _serve(agent: Agent) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await agent.run(stop)
