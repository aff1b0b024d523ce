"""strongSwan's files from the VPN contract's data (through the vpnaas
extension's ``tunnels``), and what swanctl says
(real ``swanctl --list-sas --pretty`` output, captured from two charons)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from neutrino.agents.extensions.vpn import tunnels
from neutrino.linux import strongswan
from neutrino.rpc.contracts.vpn import SiteConnectionSyncData, VpnServiceSyncData

DATA = Path(__file__).parent / "data"
CONN = "aaaaaaaa-1111-4111-8111-111111111111"
SERVICE = "bbbbbbbb-2222-4222-8222-222222222222"


def connection(**changes: object) -> SiteConnectionSyncData:
    conn: SiteConnectionSyncData = {
        "id": CONN, "status": "PENDING_CREATE", "admin_state_up": True,
        "peer_address": "172.24.4.20", "peer_id": "172.24.4.20", "local_id": "",
        "psk": 'se"cret\n{x}', "initiator": "bi-directional", "mtu": 1500,
        "dpd": {"action": "hold", "interval": 30, "timeout": 120},
        "local_cidrs": ["10.1.0.0/24"], "peer_cidrs": ["10.2.0.0/24", "10.3.0.1/24"],
        "ikepolicy": {"auth_algorithm": "sha256", "encryption_algorithm": "aes-128",
                      "ike_version": "v2", "lifetime_value": 3600, "pfs": "group14",
                      "phase1_negotiation_mode": "main"},
        "ipsecpolicy": {"transform_protocol": "esp", "auth_algorithm": "sha1",
                        "encryption_algorithm": "aes-256", "encapsulation_mode": "tunnel",
                        "lifetime_value": 1800, "pfs": "group5"}}
    conn.update(changes)  # type: ignore[typeddict-item]
    return conn


def service(*conns: SiteConnectionSyncData, **changes: object) -> VpnServiceSyncData:
    found: VpnServiceSyncData = {"id": SERVICE, "status": "PENDING_CREATE",
                                 "admin_state_up": True, "router_id": "r1",
                                 "external_ip": "172.24.4.10",
                                 "ipsec_site_connections": list(conns)}
    found.update(changes)  # type: ignore[typeddict-item]
    return found


def conf_of(*services: VpnServiceSyncData, mode: strongswan.Mode = "kernel"
            ) -> dict[str, object]:
    return strongswan.parse_sections(strongswan.swanctl_conf(tunnels(services), mode))


def test_a_connection_and_its_child():
    parsed = conf_of(service(connection()))
    conn = parsed["connections"][CONN]  # type: ignore[index]
    assert {k: conn[k] for k in ("version", "local_addrs", "remote_addrs", "proposals",
                                 "rekey_time", "dpd_delay", "encap")} == {
        "version": "2", "local_addrs": '"172.24.4.10"', "remote_addrs": '"172.24.4.20"',
        "proposals": "aes128-sha256-modp2048", "rekey_time": "3600s", "dpd_delay": "30s",
        "encap": "no"}
    assert "dpd_timeout" not in conn  # IKEv2: retransmissions decide
    assert conn["local"] == {"auth": "psk", "id": '"172.24.4.10"'}  # no local_id: the gateway
    assert conn["remote"] == {"auth": "psk", "id": '"172.24.4.20"'}
    child = conn["children"][CONN]
    assert child == {"local_ts": "10.1.0.0/24", "remote_ts": "10.2.0.0/24,10.3.0.0/24",
                     "esp_proposals": "aes256-sha1-modp1536", "mode": "tunnel",
                     "rekey_time": "1800s", "start_action": "start", "dpd_action": "trap"}


def test_the_psk_whatever_it_holds_is_base64():
    secret = conf_of(service(connection(local_id="@left")))["secrets"][f"ike-{CONN}"]  # type: ignore[index]
    assert secret["id-local"] == '"@left"' and secret["id-remote"] == '"172.24.4.20"'
    assert base64.b64decode(secret["secret"].removeprefix("0s")) == b'se"cret\n{x}'


@pytest.mark.parametrize("ike,ipsec,proposals,child", [
    ({"encryption_algorithm": "aes-256-gcm-16", "auth_algorithm": "sha384", "pfs": "group20"},
     {"encryption_algorithm": "aes-128-gcm-16", "pfs": "group19"},
     "aes256gcm16-prfsha384-ecp384", {"esp_proposals": "aes128gcm16-ecp256"}),
    ({"encryption_algorithm": "3des", "auth_algorithm": "aes-xcbc", "pfs": "group2"},
     {"transform_protocol": "ah", "auth_algorithm": "sha512", "pfs": "group16"},
     "3des-aesxcbc-modp1024", {"ah_proposals": "sha512-modp4096"}),
    ({"encryption_algorithm": "aes-192-ctr", "auth_algorithm": "sha512", "pfs": "group15"},
     {"transform_protocol": "ah-esp", "encryption_algorithm": "aes-128-ctr"},
     "aes192ctr-sha512-modp3072",
     {"esp_proposals": "aes128ctr-sha1-modp1536", "ah_proposals": "sha1-modp1536"}),
])
def test_proposals_from_neutron_policy_values(ike, ipsec, proposals, child):
    base = connection()
    conn = conf_of(service(connection(ikepolicy={**base["ikepolicy"], **ike},
                                      ipsecpolicy={**base["ipsecpolicy"], **ipsec})))
    found = conn["connections"][CONN]  # type: ignore[index]
    assert found["proposals"] == proposals
    assert {k: v for k, v in found["children"][CONN].items() if k.endswith("_proposals")} == child


def test_ikev1_aggressive_dpd_timeout_and_response_only():
    base = connection()
    conn = conf_of(service(connection(
        initiator="response-only", dpd={"action": "restart", "interval": 10, "timeout": 40},
        ikepolicy={**base["ikepolicy"], "ike_version": "v1",
                   "phase1_negotiation_mode": "aggressive"})))["connections"][CONN]  # type: ignore[index]
    assert (conn["version"], conn["aggressive"], conn["dpd_delay"], conn["dpd_timeout"]) == (
        "1", "yes", "10s", "40s")
    assert conn["children"][CONN]["start_action"] == "none"
    assert conn["children"][CONN]["dpd_action"] == "restart"


def test_dpd_disabled_means_no_dpd():
    conn = conf_of(service(connection(dpd={"action": "disabled", "interval": 30,
                                           "timeout": 120})))["connections"][CONN]  # type: ignore[index]
    assert "dpd_delay" not in conn and "dpd_action" not in conn["children"][CONN]


def test_libipsec_forces_udp_encapsulation():
    conn = conf_of(service(connection()), mode="libipsec")["connections"][CONN]  # type: ignore[index]
    assert conn["encap"] == "yes"


def test_what_is_down_is_not_loaded():
    other = connection(id="cccccccc-3333-4333-8333-333333333333", admin_state_up=False)
    parsed = conf_of(service(connection(), other),
                     service(connection(id="dddddddd-4444-4444-8444-444444444444"),
                             id="s2", admin_state_up=False),
                     service(connection(id="eeeeeeee-5555-4555-8555-555555555555"),
                             id="s3", external_ip=None))
    assert list(parsed["connections"]) == [CONN]  # type: ignore[call-overload]
    assert list(parsed["secrets"]) == [f"ike-{CONN}"]  # type: ignore[call-overload]
    assert strongswan.swanctl_conf([], "kernel").count("{") == 2  # empty: all unloaded


def test_an_id_that_would_break_the_file_is_refused():
    with pytest.raises(ValueError):
        strongswan.swanctl_conf(tunnels([service(connection(peer_id='a"b'))]), "kernel")


def test_charon_settings_are_its_own():
    kernel = strongswan.strongswan_conf("/s/r/ipsec", "/s/r/ipsec/charon.vici", "kernel")
    libipsec = strongswan.strongswan_conf("/s/r/ipsec", "/s/r/ipsec/charon.vici", "libipsec")
    parsed = strongswan.parse_sections(libipsec)
    charon = parsed["charon-systemd"]
    assert charon["load"].split()[:2] == ["kernel-libipsec", "random"]  # type: ignore[index]
    assert "kernel-netlink" in charon["load"].split()  # type: ignore[index]
    assert "kernel-libipsec" not in kernel
    assert "unix:///s/r/ipsec/charon.vici" in libipsec
    assert "include" not in libipsec  # nothing of /etc


def test_long_directories_get_a_short_socket():
    assert strongswan.socket_path("/var/lib/n/l3/r") == "/var/lib/n/l3/r/charon.vici"
    long = strongswan.socket_path("/tmp/" + "x" * 120)
    assert long.startswith(strongswan.SHORT_SOCKETS) and len(long) < 100
    assert long == strongswan.socket_path("/tmp/" + "x" * 120)


def test_established_sas():
    text = (DATA / "swanctl-list-sas-established.txt").read_text()
    assert strongswan.parse_sas(text) == {"c1": True}


def test_connecting_is_not_established():
    text = (DATA / "swanctl-list-sas-connecting.txt").read_text()
    assert strongswan.parse_sas(text) == {"c1": False}
    assert strongswan.parse_sas("list-sas reply {\n}\n") == {}


def test_an_ike_sa_without_its_child_is_not_established():
    text = (DATA / "swanctl-list-sas-established.txt").read_text().replace(
        "state = INSTALLED", "state = REKEYING")
    assert strongswan.parse_sas(text) == {"c1": False}


def test_load_failures_name_the_connection_and_why():
    output = ("loading connection 'c1' failed: invalid value for: proposals, config discarded\n"
              "loaded 0 of 1 connections, 1 failed to load, 0 unloaded\n")
    assert strongswan.parse_load_failures(output) == {
        "c1": "invalid value for: proposals, config discarded"}
