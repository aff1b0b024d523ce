"""The metadata path without root: signing, finding the instance, the agent's
answers (against a fake Nova on the loopback) and the proxy's forwarding
(to a fake agent on a UNIX socket)."""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from neutrino.linux import dnsmasq, metadata_proxy
from neutrino.metadata import http
from neutrino.metadata.handler import (
    InstanceFinder,
    MetadataHandler,
    Nova,
    nova_headers,
    sign,
)
from neutrino.metadata.proxy import Proxy, forwarded
from neutrino.plugins.ml2.metadata_rpc import query_of

NET, ROUTER = "net-1", "router-1"
PORT = {"id": "p1", "network_id": NET, "device_id": "inst-1", "project_id": "proj-1",
        "tenant_id": "proj-1", "fixed_ips": [{"subnet_id": "s1", "ip_address": "10.0.0.5"}]}


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 10))


# --- signing and headers ----------------------------------------------------------------


def test_the_signature_is_hmac_sha256_of_the_instance_id_keyed_with_the_secret():
    assert sign("inst-1", "secret") == (
        "c8db3fe0ee6a24afcf7e404db67d2a88461947560b539077483c8a8d2d1a0683")
    assert sign("inst-1", "other") != sign("inst-1", "secret")


def test_nova_is_told_the_instance_its_project_the_source_and_the_signature():
    assert dict(nova_headers(PORT, "10.0.0.5", "secret")) == {
        "X-Forwarded-For": "10.0.0.5", "X-Instance-ID": "inst-1", "X-Tenant-ID": "proj-1",
        "X-Instance-ID-Signature": sign("inst-1", "secret")}


# --- finding the instance ---------------------------------------------------------------


class FakeServer:
    """``get_ports`` over a list of ports, recording the filters asked."""

    def __init__(self, ports: list[dict[str, Any]]):
        self.ports = ports
        self.asked: list[dict[str, Any]] = []

    async def get_ports(self, filters: dict[str, Any]) -> list[dict[str, Any]]:
        self.asked.append(filters)
        found = []
        for port in self.ports:
            if any(key in filters and port[key] not in filters[key]
                   for key in ("network_id", "device_id", "device_owner")):
                continue
            wanted = filters.get("fixed_ips", {}).get("ip_address")
            if wanted and not {ip["ip_address"] for ip in port["fixed_ips"]} & set(wanted):
                continue
            found.append(port)
        return found


ROUTER_PORT = {"id": "r1", "network_id": NET, "device_id": ROUTER,
               "device_owner": "network:router_interface", "project_id": "proj-1",
               "fixed_ips": [{"subnet_id": "s1", "ip_address": "10.0.0.1"}]}
GATEWAY_PORT = {**ROUTER_PORT, "id": "r2", "network_id": "ext",
                "device_owner": "network:router_gateway"}


def finder_for(*ports: dict[str, Any]) -> tuple[InstanceFinder, FakeServer]:
    server = FakeServer([{"device_owner": "compute:nova", **p} for p in ports])
    return InstanceFinder(server.get_ports), server


def test_an_instance_is_found_by_its_address_on_the_network():
    finder, server = finder_for(PORT)
    assert run(finder.find("10.0.0.5", NET, None))["id"] == "p1"
    assert server.asked == [{"network_id": [NET], "fixed_ips": {"ip_address": ["10.0.0.5"]}}]
    assert run(finder.find("10.0.0.5", "other-net", None)) is None
    assert run(finder.find("10.0.0.9", NET, None)) is None


def test_behind_a_router_it_is_looked_for_on_the_routers_internal_networks():
    other = {**PORT, "id": "p2", "network_id": "ext"}  # same address, on the gateway's network
    finder, server = finder_for(PORT, other, ROUTER_PORT, GATEWAY_PORT)
    assert run(finder.find("10.0.0.5", None, ROUTER))["id"] == "p1"
    assert server.asked[-1]["network_id"] == [NET]
    finder, _ = finder_for(PORT)  # a router without interfaces: nothing to find
    assert run(finder.find("10.0.0.5", None, ROUTER)) is None


def test_an_address_shared_by_two_ports_finds_none():
    finder, _ = finder_for(PORT, {**PORT, "id": "p2", "device_id": "inst-2"})
    assert run(finder.find("10.0.0.5", NET, None)) is None


def test_the_rpc_filters_become_the_apis_port_query():
    query = query_of({"network_id": [NET], "fixed_ips": {"ip_address": ["10.0.0.5"]}})
    assert query.filters == {"network_id": [NET], "fixed_ips": ["ip_address=10.0.0.5"]}
    assert query_of({"device_id": ROUTER}).filters == {"device_id": [ROUTER]}
    for bad in ({"name": ["x"]}, {"fixed_ips": ["ip_address=1"]}, "x", {"network_id": [1]}):
        with pytest.raises(ValueError):
            query_of(bad)


# --- the agent's answers, against a fake Nova -------------------------------------------


async def fake_nova(status: int, body: bytes = b"", delay: float = 0.0
                    ) -> tuple[asyncio.Server, int, list[http.Message]]:
    seen: list[http.Message] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await http.read_request(reader))
        await asyncio.sleep(delay)
        writer.write(http.encode_response(status, body, "text/plain"))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1], seen


def proxied(target: str = "/latest/meta-data/instance-id", source: str = "10.0.0.5",
            **headers: str) -> http.Message:
    given = {"X-Forwarded-For": source, "X-Neutron-Network-ID": NET, **headers}
    return http.Message(("GET", target, "HTTP/1.1"), [(k, v) for k, v in given.items() if v])


async def answer_with(status: int, request: http.Message, body: bytes = b"",
                      delay: float = 0.0, timeout: float = 5.0
                      ) -> tuple[int, bytes, list[http.Message]]:
    server, port, seen = await fake_nova(status, body, delay)
    async with server:
        finder, _ = finder_for(PORT)
        handler = MetadataHandler(finder, Nova("127.0.0.1", port, "secret", timeout))
        raw = await handler.answer(request)
    reader = asyncio.StreamReader()
    reader.feed_data(raw)
    reader.feed_eof()
    response = await http.read_response(reader)
    return response.status, response.body, seen


def test_the_agent_forwards_to_nova_with_the_instances_signed_headers():
    status, body, [seen] = run(answer_with(200, proxied("/latest/meta-data/x?a=1"), b"inst-1"))
    assert (status, body) == (200, b"inst-1")
    assert seen.start[:2] == ("GET", "/latest/meta-data/x?a=1")
    assert seen.header("X-Instance-ID") == "inst-1"
    assert seen.header("X-Tenant-ID") == "proj-1"
    assert seen.header("X-Forwarded-For") == "10.0.0.5"
    assert seen.header("X-Instance-ID-Signature") == sign("inst-1", "secret")
    assert seen.header("X-Neutron-Network-ID") is None


def test_an_unknown_source_gets_404_and_nova_is_not_asked():
    status, _, seen = run(answer_with(200, proxied(source="10.0.0.99")))
    assert status == 404 and seen == []


def test_novas_errors_are_mapped_as_neutron_maps_them():
    for nova_status, expected in ((403, 403), (404, 404), (409, 409), (500, 500), (302, 500)):
        assert run(answer_with(nova_status, proxied()))[0] == expected


def test_a_slow_or_absent_nova_is_a_500_not_a_hang():
    assert run(answer_with(200, proxied(), delay=2, timeout=0.2))[0] == 500

    async def absent() -> bytes:
        finder, _ = finder_for(PORT)
        server, port, _ = await fake_nova(200)
        server.close()
        await server.wait_closed()
        return await MetadataHandler(finder, Nova("127.0.0.1", port)).answer(proxied())
    assert run(absent()).startswith(b"HTTP/1.1 500 ")


def test_a_failed_lookup_is_a_500_and_a_request_not_from_a_proxy_a_400():
    async def broken(filters: dict[str, Any]) -> list[dict[str, Any]]:
        raise TimeoutError

    handler = MetadataHandler(InstanceFinder(broken), Nova())
    assert run(handler.answer(proxied())).startswith(b"HTTP/1.1 500 ")
    assert run(handler.answer(proxied(**{"X-Neutron-Network-ID": ""}))).startswith(
        b"HTTP/1.1 400 ")


# --- the proxy, against a fake agent ----------------------------------------------------


def test_the_proxy_replaces_what_the_instance_says_about_itself():
    request = http.Message(("POST", "/openstack/password", "HTTP/1.1"), [
        ("Host", "169.254.169.254"), ("X-Forwarded-For", "10.9.9.9"),
        ("X-Neutron-Router-ID", "evil"), ("X-Instance-ID", "evil"), ("Connection", "keep-alive"),
        ("Content-Length", "3")], b"abc")
    raw = forwarded(request, "10.0.0.5", ("X-Neutron-Network-ID", NET))
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /openstack/password HTTP/1.1"
    assert sorted(lines[1:]) == sorted([
        "Host: 169.254.169.254", "X-Forwarded-For: 10.0.0.5", f"X-Neutron-Network-ID: {NET}",
        "Content-Length: 3", "Connection: close"])
    assert body == b"abc"


Agent = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def through_proxy(agent: Agent | None, raw_request: bytes, answer_timeout: float = 5.0
                        ) -> bytes:
    """What a client sending ``raw_request`` to a proxy gets back."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "agent.sock")
        agent_server = await asyncio.start_unix_server(agent, path) if agent else None
        proxy = Proxy(path, ("X-Neutron-Network-ID", NET), answer_timeout=answer_timeout)
        server = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
        async with server:
            reader, writer = await asyncio.open_connection(
                "127.0.0.1", server.sockets[0].getsockname()[1])
            writer.write(raw_request)
            await writer.drain()
            got = await reader.read()
            writer.close()
        if agent_server:
            agent_server.close()
        return got


def test_the_proxy_passes_the_request_on_and_streams_the_answer_back():
    seen: list[http.Message] = []

    async def agent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await http.read_request(reader))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(0.1)  # the answer comes in two parts: both reach the client
        writer.write(b"inst-1")
        await writer.drain()
        writer.close()

    got = run(through_proxy(agent, b"GET /latest/meta-data/instance-id HTTP/1.1\r\n"
                                   b"Host: 169.254.169.254\r\nX-Forwarded-For: 1.2.3.4\r\n\r\n"))
    assert got.startswith(b"HTTP/1.1 200 OK\r\n") and got.endswith(b"\r\n\r\ninst-1")
    [request] = seen
    assert request.start == ("GET", "/latest/meta-data/instance-id", "HTTP/1.1")
    assert request.header("X-Forwarded-For") == "127.0.0.1"
    assert request.header("X-Neutron-Network-ID") == NET


def test_the_proxy_answers_502_without_an_agent_504_when_it_is_silent_400_to_garbage():
    request = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    assert run(through_proxy(None, request)).startswith(b"HTTP/1.1 502 ")

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(5)

    assert run(through_proxy(silent, request, answer_timeout=0.2)).startswith(b"HTTP/1.1 504 ")
    assert run(through_proxy(silent, b"NONSENSE\r\n\r\n")).startswith(b"HTTP/1.1 400 ")


def test_chunked_bodies_are_read_whole():
    async def read() -> http.Message:
        reader = asyncio.StreamReader()
        reader.feed_data(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                         b"3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n")
        reader.feed_eof()
        return await http.read_response(reader)
    assert run(read()).body == b"abcde"


# --- where the DHCP namespace serves it, and the router's rule --------------------------


def dhcp_network(router_holds_gateway: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    dhcp = {"id": "d1", "mac_address": "fa:16:3e:00:00:02", "device_owner": "network:dhcp",
            "fixed_ips": [{"subnet_id": "s1", "ip_address": "10.0.0.2"}]}
    router = {"id": "r1", "mac_address": "fa:16:3e:00:00:01",
              "device_owner": "network:router_interface",
              "fixed_ips": [{"subnet_id": "s1", "ip_address": "10.0.0.1"}]}
    subnet = {"id": "s1", "cidr": "10.0.0.0/24", "ip_version": 4, "gateway_ip": "10.0.0.1",
              "enable_dhcp": True, "host_routes": [], "dns_nameservers": []}
    ports = [dhcp, router] if router_holds_gateway else [dhcp]
    return {"id": NET, "subnets": [subnet], "ports": ports}, dhcp


def test_an_isolated_subnets_instances_get_a_route_to_metadata_via_the_dhcp_port():
    net, dhcp = dhcp_network(router_holds_gateway=False)
    routes = dnsmasq.metadata_routes(net, dhcp)
    assert routes == {"s1": "10.0.0.2"}
    opts = dnsmasq.opts_file(net, routes).splitlines()
    assert ("tag:subnet-s1,option:classless-static-route,"
            "169.254.169.254/32,10.0.0.2,0.0.0.0/0,10.0.0.1") in opts
    assert "tag:subnet-s1,option:router,10.0.0.1" in opts


def test_a_subnet_whose_gateway_is_a_routers_gets_no_metadata_route():
    net, dhcp = dhcp_network(router_holds_gateway=True)
    assert dnsmasq.metadata_routes(net, dhcp) == {}
    assert "classless" not in dnsmasq.opts_file(net, {})


def test_the_router_redirect_rule_sends_metadata_to_the_proxy_port():
    assert metadata_proxy.redirect_rules("neutrino-l3-PRE") == [
        "-A neutrino-l3-PRE -d 169.254.169.254/32 -i qr-+ -p tcp -m tcp --dport 80 "
        "-j REDIRECT --to-ports 9697"]
