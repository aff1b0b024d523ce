"""``neutrino-metadata-agent``: answers the metadata proxies of its host.

It listens on ``metadata_proxy_socket`` (a UNIX socket the host's proxies
connect to, in whatever namespace they run), finds each request's instance
by asking the server (``get_ports`` in the ``metadata`` namespace of
``q-plugin``) and forwards it to Nova (``neutrino.metadata.handler``). It
reports its state like every agent; it serves no RPC of its own and has no
host state to reconcile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
from typing import Any

from neutrino.agents.base import Agent
from neutrino.agents.cmd import main as run_agent
from neutrino.config import Config, Opt, OptGroup, int_range, parse_host
from neutrino.linux import host_check
from neutrino.linux.metadata_proxy import SOCKET_OPTION, socket_path
from neutrino.metadata.handler import InstanceFinder, MetadataHandler, Nova
from neutrino.rpc.bus import Bus
from neutrino.rpc.contracts.metadata import MetadataPluginApi

LOG = logging.getLogger(__name__)

#: seconds a port lookup may take: the instance waits meanwhile
LOOKUP_TIMEOUT = 20


def parse_protocol(text: str) -> str:
    value = text.strip().lower()
    if value == "https":
        raise ValueError("https to Nova's metadata API is not supported yet; use http")
    if value != "http":
        raise ValueError("must be http")
    return value


OPTIONS = (OptGroup("DEFAULT", [
    Opt("nova_metadata_host", parse_host, "127.0.0.1", "Nova's metadata API: its address."),
    Opt("nova_metadata_port", int_range(1, 65535), 8775, "Nova's metadata API: its port."),
    Opt("nova_metadata_protocol", parse_protocol, "http",
        "Nova's metadata API: its protocol (http only, for now)."),
    Opt("metadata_proxy_shared_secret", str, "",
        "The secret Nova checks X-Instance-ID-Signature with (Nova's "
        "[neutron] metadata_proxy_shared_secret)."),
    Opt("metadata_workers", int_range(0), 1,
        "Processes answering metadata requests (one, for now: more are ignored)."),
    SOCKET_OPTION,
]),)


class MetadataAgent(Agent):
    agent_type = "Metadata agent"
    binary = "neutrino-metadata-agent"
    option_groups = OPTIONS

    def __init__(self, conf: Config, bus: Bus):
        super().__init__(conf, bus)
        self._plugin = MetadataPluginApi.on(bus)
        default = conf.DEFAULT
        self.socket_path = socket_path(conf)
        self.handler = MetadataHandler(
            InstanceFinder(self._get_ports),
            Nova(host=default.nova_metadata_host, port=default.nova_metadata_port,
                 secret=default.metadata_proxy_shared_secret))
        if default.metadata_workers > 1:
            LOG.warning("metadata_workers = %d: one process serves, for now",
                        default.metadata_workers)

    def host_needs(self) -> host_check.Needs:
        needs = host_check.Needs()
        option = ("metadata_proxy_socket" if self.conf.DEFAULT.metadata_proxy_socket
                  else "state_path")
        needs.directories.append((os.path.dirname(self.socket_path),
                                  self.conf.source("DEFAULT", option)))
        return needs

    def configurations(self) -> dict[str, Any]:
        default = self.conf.DEFAULT
        return {"metadata_proxy_socket": self.socket_path,
                "nova_metadata_host": default.nova_metadata_host,
                "nova_metadata_port": default.nova_metadata_port,
                "log_agent_heartbeats": False}

    async def _get_ports(self, filters: dict[str, Any]) -> list[dict[str, Any]]:
        return await self._plugin.get_ports(self.context, filters=filters,
                                       timeout=LOOKUP_TIMEOUT)

    def background(self) -> list[Any]:
        return [self._listen]

    async def _listen(self) -> None:
        """Serve the socket until cancelled (a stale socket file is replaced;
        proxies of any user may connect, as Neutron's ``all`` mode allows)."""
        os.makedirs(os.path.dirname(self.socket_path), exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISSOCK(os.stat(self.socket_path).st_mode):
                os.unlink(self.socket_path)
        server = await asyncio.start_unix_server(self.handler.handle, path=self.socket_path)
        os.chmod(self.socket_path, 0o666)
        LOG.info("answering metadata proxies on %s, for Nova at %s", self.socket_path,
                 self.handler.nova.authority)
        try:
            async with server:
                await server.serve_forever()
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.socket_path)


def main() -> None:
    run_agent(MetadataAgent)
