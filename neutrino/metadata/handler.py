"""The metadata agent's work on one request from a proxy: find the instance,
ask Nova on its behalf, give the answer back.

The instance is the one port with the request's source address
(``X-Forwarded-For``) on the proxy's network (``X-Neutron-Network-ID``) or on
one of the router's internal networks (``X-Neutron-Router-ID``); the server
is asked through ``get_ports`` (injected: the bus in the agent, a fake in
tests). No such port, or several: 404. Nova is told the port's device (the
instance) and project, signed with the secret it shares with us, and its
answer is mapped as Neutron maps it: 200 passed on; 400, 403, 404 and 409
kept; anything else a 500, logged with what went wrong.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from neutrino.linux.dnsmasq import ROUTER_INTERFACE_OWNERS
from neutrino.linux.metadata_proxy import NETWORK_HEADER, ROUTER_HEADER
from neutrino.metadata import http

LOG = logging.getLogger(__name__)

#: a ``get_ports(filters)`` call to the server
GetPorts = Callable[[dict[str, Any]], Awaitable[list[dict[str, Any]]]]
#: Nova's answers passed on with their own status; others are a 500
KEPT_STATUSES = (400, 403, 404, 409)
#: seconds a request to Nova may take, connecting included
NOVA_TIMEOUT = 30.0
UNKNOWN_ERROR = "An unknown error has occurred. Please try your request again."


def sign(instance_id: str, secret: str) -> str:
    """``X-Instance-ID-Signature``: HMAC-SHA256 of the instance id, hex, keyed
    with ``metadata_proxy_shared_secret``; Nova computes the same to trust us."""
    return hmac.new(secret.encode(), instance_id.encode(), hashlib.sha256).hexdigest()


def nova_headers(port: dict[str, Any], forwarded_for: str, secret: str) -> list[tuple[str, str]]:
    """What Nova is told about the request's instance (and nothing the
    instance sent: Nova must believe only us)."""
    instance_id = port["device_id"]
    project = port.get("project_id") or port.get("tenant_id") or ""
    return [("X-Forwarded-For", forwarded_for), ("X-Instance-ID", instance_id),
            ("X-Tenant-ID", project), ("X-Instance-ID-Signature", sign(instance_id, secret))]


class InstanceFinder:
    """Which port a request came from, by asking the server."""

    def __init__(self, get_ports: GetPorts):
        self._get_ports = get_ports

    async def router_networks(self, router_id: str) -> list[str]:
        """The networks of the router's internal interfaces (not its gateway's)."""
        ports = await self._get_ports({"device_id": [router_id],
                                       "device_owner": list(ROUTER_INTERFACE_OWNERS)})
        return sorted({port["network_id"] for port in ports})

    async def find(self, address: str, network_id: str | None, router_id: str | None
                   ) -> dict[str, Any] | None:
        """The one port with ``address`` on the network, or on the router's
        networks; None if there is none, or several (which one asked is then
        unknown: better no answer than another instance's)."""
        if network_id:
            networks = [network_id]
        elif router_id:
            networks = await self.router_networks(router_id)
        else:
            raise ValueError(f"neither {NETWORK_HEADER} nor {ROUTER_HEADER} given")
        if not networks:
            return None
        ports = await self._get_ports({"network_id": networks,
                                       "fixed_ips": {"ip_address": [address]}})
        if len(ports) > 1:
            LOG.warning("%s is the address of %d ports on %s: no metadata for it", address,
                        len(ports), ", ".join(networks))
        return ports[0] if len(ports) == 1 else None


@dataclass(frozen=True)
class Nova:
    """Nova's metadata API (``nova_metadata_*``) and the secret it shares."""

    host: str = "127.0.0.1"
    port: int = 8775
    secret: str = ""
    timeout: float = NOVA_TIMEOUT

    @property
    def authority(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


async def ask_nova(nova: Nova, method: str, target: str, headers: list[tuple[str, str]],
                   body: bytes) -> http.Message:
    """One request to Nova and its whole answer, within ``nova.timeout``."""
    async def exchange() -> http.Message:
        reader, writer = await asyncio.open_connection(nova.host, nova.port)
        try:
            writer.write(http.encode_request(method, target,
                                             [("Host", nova.authority), *headers], body))
            await writer.drain()
            return await http.read_response(reader)
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    return await asyncio.wait_for(exchange(), nova.timeout)


class MetadataHandler:
    """Answers the proxies' requests (one per connection on the agent's socket)."""

    def __init__(self, finder: InstanceFinder, nova: Nova):
        self.finder = finder
        self.nova = nova

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                request = await asyncio.wait_for(http.read_request(reader), 30)
            except http.HttpError as error:
                writer.write(http.error_response(error.status, error.reason))
            except TimeoutError:
                writer.write(http.error_response(408))
            else:
                if request is not None:
                    writer.write(await self.answer(request))
            await writer.drain()
        except (ConnectionError, OSError) as error:
            LOG.debug("a proxy's connection was lost: %s", error)
        finally:
            writer.close()

    async def answer(self, request: http.Message) -> bytes:
        """The response to ``request``; never raises."""
        method, target, _ = request.start
        address = request.header("X-Forwarded-For")
        network_id, router_id = request.header(NETWORK_HEADER), request.header(ROUTER_HEADER)
        if not address or not (network_id or router_id):
            LOG.warning("%s %s without X-Forwarded-For and a network or router: not from "
                        "a metadata proxy?", method, target)
            return http.error_response(400, "Not a request from a metadata proxy.")
        where = f"network {network_id}" if network_id else f"router {router_id}"
        try:
            port = await self.finder.find(address, network_id, router_id)
        except Exception as error:  # the server, or the bus, failed us: say so, and why
            LOG.error("%s %s from %s on %s: looking up its port failed: %s", method, target,
                      address, where, error or type(error).__name__)
            return http.error_response(500, UNKNOWN_ERROR)
        if port is None:
            LOG.info("%s %s from %s on %s: no port has that address there", method, target,
                     address, where)
            return http.error_response(404)
        try:
            return await self._proxy(request, port, address)
        except Exception:  # a bug of ours: the instance gets a 500, the log the trace
            LOG.exception("%s %s from %s on %s failed", method, target, address, where)
            return http.error_response(500, UNKNOWN_ERROR)

    async def _proxy(self, request: http.Message, port: dict[str, Any], address: str) -> bytes:
        method, target, _ = request.start
        headers = nova_headers(port, address, self.nova.secret)
        try:
            answer = await ask_nova(self.nova, method, target, headers, request.body)
        except (OSError, TimeoutError, http.HttpError) as error:
            LOG.error("%s %s for instance %s: Nova's metadata API at %s failed: %s", method,
                      target, port["device_id"], self.nova.authority,
                      error or type(error).__name__)
            return http.error_response(500, UNKNOWN_ERROR)
        status = answer.status
        if status == 200:
            return http.encode_response(200, answer.body, answer.header("Content-Type")
                                        or "text/plain")
        if status == 403:
            LOG.warning("Nova refused the request for instance %s (403): does "
                        "metadata_proxy_shared_secret match Nova's?", port["device_id"])
        if status in KEPT_STATUSES:
            return http.error_response(status)
        if status == 500:
            LOG.warning("Nova's metadata API had an internal error for %s %s", method, target)
            return http.error_response(500, "Remote metadata server experienced an "
                                            "internal server error.")
        LOG.error("%s %s for instance %s: unexpected answer %d from Nova", method, target,
                  port["device_id"], status)
        return http.error_response(500, UNKNOWN_ERROR)
