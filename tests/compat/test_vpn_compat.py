"""The neutronclient OSC plugin's ``openstack vpn ...`` commands and
openstacksdk's VPN calls against neutrino."""

from __future__ import annotations

import openstack
import pytest

from tests.compat.cli import run_scenario
from tests.compat.conftest import write_clouds_yaml
from tests.harness import create_database, start_server


@pytest.fixture(scope="module")
def vpn_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("compat-vpn")
    url, drop = create_database("sqlite", tmp)
    srv = start_server(tmp, url, auth="noauth", extra="service_plugins = router,vpnaas\n")
    yield srv
    srv.stop()
    drop()


def test_openstack_cli_vpn(vpn_server, tmp_path):
    clouds = write_clouds_yaml(tmp_path, vpn_server.url)
    session = run_scenario([
        ("ext", "network create public --external -f json"),
        ("ext-subnet", "subnet create public-v4 --network public "
                       "--subnet-range 172.31.0.0/24 -f json"),
        ("net", "network create private -f json"),
        ("subnet", "subnet create private-v4 --network private "
                   "--subnet-range 10.80.0.0/24 -f json"),
        ("router", "router create r -f json"),
        ("gateway", "router set r --external-gateway public"),
        ("iface", "router add subnet r private-v4"),
        ("ike", "vpn ike policy create ike --ike-version v2 --pfs group14 "
                "--encryption-algorithm aes-256 --auth-algorithm sha256 -f json"),
        # (the client's --lifetime and --dpd fail in the client itself, before
        # sending: "'list' object has no attribute 'items'"; the sdk sends both)
        ("ike-set", "vpn ike policy set ike --description renewed --pfs group15"),
        ("ike-show", "vpn ike policy show ike -f json"),
        ("ike-list", "vpn ike policy list -f json"),
        ("ipsec", "vpn ipsec policy create ipsec --transform-protocol esp -f json"),
        ("ipsec-set", "vpn ipsec policy set ipsec --pfs group2"),
        ("ipsec-show", "vpn ipsec policy show ipsec -f json"),
        ("service", "vpn service create vs --router r --subnet private-v4 -f json"),
        ("service-list", "vpn service list -f json"),
        ("conn", "vpn ipsec site connection create c --vpnservice vs --ikepolicy ike "
                 "--ipsecpolicy ipsec --peer-address 172.31.0.50 --peer-id 172.31.0.50 "
                 "--psk secret --peer-cidr 192.168.80.0/24 --mtu 1400 -f json"),
        ("conn-show", "vpn ipsec site connection show c -f json"),
        ("conn-list", "vpn ipsec site connection list -f json"),
        ("service2", "vpn service create vs2 --router r -f json"),
        ("local", "vpn endpoint group create local --type subnet --value private-v4 -f json"),
        ("peers", "vpn endpoint group create peers --type cidr --value 192.168.81.0/24 "
                  "--value 192.168.82.0/24 -f json"),
        ("epg-set", "vpn endpoint group set peers --description far"),
        ("epg-list", "vpn endpoint group list -f json"),
        ("conn2", "vpn ipsec site connection create c2 --vpnservice vs2 --ikepolicy ike "
                  "--ipsecpolicy ipsec --peer-address 172.31.0.51 --peer-id peer2 "
                  "--psk secret2 --local-endpoint-group local "
                  "--peer-endpoint-group peers -f json"),
        ("in-use", "vpn ike policy delete ike"),
        ("del-conns", "vpn ipsec site connection delete c c2"),
        ("del-epgs", "vpn endpoint group delete local peers"),
        ("del-services", "vpn service delete vs vs2"),
        ("del-policies", "vpn ike policy delete ike"),
        ("del-ipsec", "vpn ipsec policy delete ipsec"),
        ("after", "vpn service list -f json"),
    ], clouds, tmp_path)
    ike = session.json("ike")
    assert (ike["IKE Version"], ike["Perfect Forward Secrecy (PFS)"]) == ("v2", "group14")
    session.quiet("ike-set")
    shown = session.json("ike-show")
    assert (shown["Description"], shown["Perfect Forward Secrecy (PFS)"]) == (
        "renewed", "group15"), shown
    assert "ike" in {row["Name"] for row in session.json("ike-list")}
    session.quiet("ipsec-set")
    assert session.json("ipsec-show")["Perfect Forward Secrecy (PFS)"] == "group2"
    service = session.json("service")
    assert service["Status"] == "PENDING_CREATE", service
    assert service["Subnet"] == session.json("subnet")["id"]
    assert "vs" in {row["Name"] for row in session.json("service-list")}
    assert session.json("conn")["Name"] == "c"
    conn = session.json("conn-show")
    assert conn["Peer CIDRs"] in (["192.168.80.0/24"], "192.168.80.0/24"), conn
    assert conn["MTU"] == 1400, conn
    assert conn["Status"] == "PENDING_CREATE"
    assert "c" in {row["Name"] for row in session.json("conn-list")}
    local, peers = session.json("local"), session.json("peers")
    assert local["Type"] == "subnet" and peers["Type"] == "cidr"
    session.quiet("epg-set")
    assert {"local", "peers"} <= {row["Name"] for row in session.json("epg-list")}
    conn2 = session.json("conn2")
    assert conn2["Local Endpoint Group ID"] == local["ID"], conn2
    assert "IKEPolicyInUse" in session.text("in-use") or "in use" in session.text("in-use")
    for key in ("del-conns", "del-epgs", "del-services", "del-policies", "del-ipsec"):
        session.quiet(key)
    assert session.json("after") == []


def test_openstacksdk_vpn_calls(vpn_server):
    conn = openstack.connection.Connection(auth_type="none",
                                           network_endpoint_override=vpn_server.url)
    try:
        net = conn.network
        ext = net.create_network(name="sdk-public", is_router_external=True)
        net.create_subnet(network_id=ext.id, cidr="172.32.0.0/24", ip_version=4)
        private = net.create_network(name="sdk-private")
        subnet = net.create_subnet(network_id=private.id, cidr="10.81.0.0/24", ip_version=4)
        router = net.create_router(name="sdk-r", external_gateway_info={"network_id": ext.id})
        net.add_interface_to_router(router, subnet_id=subnet.id)

        ike = net.create_vpn_ike_policy(name="sdk-ike", ike_version="v2")
        assert net.get_vpn_ike_policy(ike.id).ike_version == "v2"
        net.update_vpn_ike_policy(ike, description="d", lifetime={"value": 7200})
        found = net.find_vpn_ike_policy("sdk-ike")
        assert (found.description, found.lifetime) == (
            "d", {"units": "seconds", "value": 7200})
        ipsec = net.create_vpn_ipsec_policy(name="sdk-ipsec", pfs="group14")
        assert net.get_vpn_ipsec_policy(ipsec.id).pfs == "group14"
        service = net.create_vpn_service(name="sdk-vs", router_id=router.id)
        assert net.get_vpn_service(service.id).status == "PENDING_CREATE"
        local = net.create_vpn_endpoint_group(name="sdk-local", type="subnet",
                                              endpoints=[subnet.id])
        peer = net.create_vpn_endpoint_group(name="sdk-peer", type="cidr",
                                             endpoints=["192.168.90.0/24"])
        assert net.get_vpn_endpoint_group(peer.id).endpoints == ["192.168.90.0/24"]
        site = net.create_vpn_ipsec_site_connection(
            name="sdk-c", vpnservice_id=service.id, ikepolicy_id=ike.id,
            ipsecpolicy_id=ipsec.id, peer_address="172.32.0.9", peer_id="172.32.0.9",
            psk="pw", local_ep_group_id=local.id, peer_ep_group_id=peer.id,
            dpd={"action": "restart", "interval": 10, "timeout": 50})
        shown = net.get_vpn_ipsec_site_connection(site.id)
        assert shown.peer_ep_group_id == peer.id
        assert shown.dpd == {"action": "restart", "interval": 10, "timeout": 50}
        assert "sdk-c" in {c.name for c in net.vpn_ipsec_site_connections()}
        assert "sdk-vs" in {s.name for s in net.vpn_services()}
        assert {"sdk-local", "sdk-peer"} <= {g.name for g in net.vpn_endpoint_groups()}
        assert "sdk-ike" in {p.name for p in net.vpn_ike_policies()}
        assert "sdk-ipsec" in {p.name for p in net.vpn_ipsec_policies()}
        net.delete_vpn_ipsec_site_connection(site)
        for group in (local, peer):
            net.delete_vpn_endpoint_group(group)
        net.delete_vpn_service(service)
        net.delete_vpn_ike_policy(ike)
        net.delete_vpn_ipsec_policy(ipsec)
        assert net.find_vpn_ike_policy("sdk-ike") is None
    finally:
        conn.close()
