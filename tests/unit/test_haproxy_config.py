"""``neutrino.linux.haproxy``'s pure parts: the config it writes for a load
balancer's tree (each one checked by ``haproxy -c`` where HAProxy is
installed), and what it makes of HAProxy's ``show stat``."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from neutrino.linux import haproxy
from neutrino.rpc.contracts.lbaas import (
    HealthMonitorSyncData,
    L7PolicySyncData,
    L7RuleSyncData,
    ListenerSyncData,
    LoadBalancerSyncData,
    MemberSyncData,
    PoolSyncData,
)

HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"
LB, HTTP, TCP = "lb-1", "listener-http", "listener-tcp"
POOL, OTHER = "pool-a", "pool-b"


def member(member_id: str, address: str = "10.0.0.11", **changes: Any) -> MemberSyncData:
    found: MemberSyncData = {"id": member_id, "address": address, "protocol_port": 8080,
                             "weight": 1, "backup": False, "admin_state_up": True,
                             "monitor_address": None, "monitor_port": None}
    return {**found, **changes}  # type: ignore[typeddict-item]


def monitor(kind: str = "HTTP", **changes: Any) -> HealthMonitorSyncData:
    found: HealthMonitorSyncData = {
        "id": "hm-1", "type": kind, "delay": 2, "timeout": 1, "max_retries": 3,
        "max_retries_down": 2, "http_method": "GET", "url_path": "/health",
        "expected_codes": "200", "http_version": None, "domain_name": None,
        "admin_state_up": True}
    return {**found, **changes}  # type: ignore[typeddict-item]


def pool(pool_id: str = POOL, **changes: Any) -> PoolSyncData:
    found: PoolSyncData = {"id": pool_id, "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN",
                           "session_persistence": None, "admin_state_up": True,
                           "members": [member("m-1"), member("m-2", "10.0.0.12")],
                           "healthmonitor": None}
    return {**found, **changes}  # type: ignore[typeddict-item]


def listener(listener_id: str = HTTP, **changes: Any) -> ListenerSyncData:
    found: ListenerSyncData = {
        "id": listener_id, "protocol": "HTTP", "protocol_port": 80, "connection_limit": -1,
        "admin_state_up": True, "default_pool_id": POOL, "timeout_client_data": 50000,
        "timeout_member_connect": 5000, "timeout_member_data": 50000,
        "timeout_tcp_inspect": 0, "insert_headers": {}, "allowed_cidrs": None,
        "l7policies": []}
    return {**found, **changes}  # type: ignore[typeddict-item]


def rule(rule_id: str, kind: str = "PATH", compare: str = "STARTS_WITH", value: str = "/x",
         **changes: Any) -> L7RuleSyncData:
    found: L7RuleSyncData = {"id": rule_id, "type": kind, "compare_type": compare,
                             "key": None, "value": value, "invert": False,
                             "admin_state_up": True}
    return {**found, **changes}  # type: ignore[typeddict-item]


def policy(policy_id: str, action: str, position: int, rules: list[L7RuleSyncData],
           **changes: Any) -> L7PolicySyncData:
    found: L7PolicySyncData = {
        "id": policy_id, "action": action, "position": position, "redirect_url": None,
        "redirect_prefix": None, "redirect_pool_id": None, "redirect_http_code": None,
        "admin_state_up": True, "rules": rules}
    return {**found, **changes}  # type: ignore[typeddict-item]


def tree(listeners: list[ListenerSyncData] | None = None,
         pools: list[PoolSyncData] | None = None, **changes: Any) -> LoadBalancerSyncData:
    found: LoadBalancerSyncData = {
        "id": LB, "revision_number": 3, "admin_state_up": True,
        "provisioning_status": "PENDING_UPDATE",
        "vip": {"port_id": "port-1", "mac_address": "fa:16:3e:00:00:01",
                "address": "192.0.2.10", "prefixlen": 24, "gateway_ip": "192.0.2.1",
                "network_id": "net-1", "mtu": 1500, "host_routes": []},
        "listeners": [listener()] if listeners is None else listeners,
        "pools": [pool()] if pools is None else pools, "flavor": {}}
    return {**found, **changes}  # type: ignore[typeddict-item]


@pytest.fixture
def checked(tmp_path: Path):
    """``render`` of a tree, its text, after ``haproxy -c`` took it (when
    HAProxy is installed: the config is what HAProxy must load)."""
    def render(lb: LoadBalancerSyncData) -> str:
        text = haproxy.render(lb, str(tmp_path / "stats.sock"))
        if os.path.exists(HAPROXY):
            path = tmp_path / "haproxy.cfg"
            path.write_text(text)
            haproxy.check(str(path), HAPROXY)
        return text
    return render


def section(text: str, header: str) -> list[str]:
    """The stripped lines of one section (``frontend x``, ``backend y``)."""
    lines = text.splitlines()
    start = lines.index(header)
    found = []
    for line in lines[start + 1:]:
        if not line.startswith("    "):
            break
        found.append(line.strip())
    return found


def backend(pool_id: str = POOL, listener_id: str = HTTP) -> str:
    return f"backend {pool_id}:{listener_id}"


def test_haproxy_is_installed_or_the_checks_say_so():
    if not os.path.exists(HAPROXY):
        pytest.skip(f"{HAPROXY} is not installed: rendered configs are not checked by "
                    "haproxy -c")
    assert subprocess.run([HAPROXY, "-v"], capture_output=True).returncode == 0


def test_global_and_defaults(checked, tmp_path):
    text = checked(tree())
    glob = section(text, "global")
    assert glob[0] == (f"stats socket '{tmp_path}/stats.sock' mode 600 level admin "
                       "expose-fd listeners")
    assert f"maxconn {haproxy.UNLIMITED}" in glob
    assert "daemon" not in text
    capped = haproxy.render(tree([listener(), listener(TCP, protocol="TCP")]), "/s", 9000)
    assert "maxconn 9000" in section(capped, "global")
    assert {"retries 3", "option redispatch"} <= set(section(text, "defaults"))
    assert not [line for line in glob if line.startswith("nbthread")]


def test_a_flavor_caps_connections_and_sets_threads(checked):
    glob = section(checked(tree(flavor={"maxconn": 300, "nbthread": 2})), "global")
    assert {"maxconn 300", "nbthread 2"} <= set(glob)
    # the listeners' own limits, when lower, still hold
    low = tree([listener(connection_limit=100)], flavor={"maxconn": 300})
    assert "maxconn 100" in section(checked(low), "global")


def test_an_http_listener(checked):
    text = checked(tree([listener(connection_limit=100, timeout_client_data=1234,
                                  timeout_tcp_inspect=500,
                                  insert_headers={"X-Forwarded-For": "true",
                                                  "X-Forwarded-Port": "True",
                                                  "X-Forwarded-Proto": "false"},
                                  allowed_cidrs=["10.1.0.0/16", "192.0.2.7"])]))
    front = section(text, f"frontend {HTTP}")
    assert front[:6] == ["mode http", "bind 192.0.2.10:80", "maxconn 100",
                         "timeout client 1234", "option httplog", "tcp-request inspect-delay 500"]
    assert "acl allowed_cidr src 10.1.0.0/16 192.0.2.7/32" in front
    assert "tcp-request connection reject unless allowed_cidr" in front
    assert "http-request set-header X-Forwarded-For %[src]" in front
    assert "http-request set-header X-Forwarded-Port %[dst_port]" in front
    assert not any("X-Forwarded-Proto" in line for line in front)
    assert front[-1] == f"default_backend {POOL}:{HTTP}"
    assert "maxconn 100" in section(text, "global")


def test_tcp_and_https_listeners_are_tcp(checked):
    https = listener("listener-https", protocol="HTTPS", protocol_port=443,
                     insert_headers={"X-Forwarded-For": "true"},
                     l7policies=[policy("p1", "REJECT", 1, [rule("r1")])])
    text = checked(tree([listener(TCP, protocol="TCP", protocol_port=5432), https],
                        [pool(protocol="TCP", healthmonitor=monitor("TCP"))]))
    for name, port in ((TCP, 5432), ("listener-https", 443)):
        front = section(text, f"frontend {name}")
        assert front[:2] == ["mode tcp", f"bind 192.0.2.10:{port}"]
        assert "option tcplog" in front
        assert not any(line.startswith(("http-request", "acl")) for line in front)
        assert section(text, backend(POOL, name))[0] == "mode tcp"
    assert "inspect-delay" not in text


@pytest.mark.parametrize("algorithm, balance", sorted(haproxy.BALANCE.items()))
def test_each_algorithm(checked, algorithm, balance):
    text = checked(tree(pools=[pool(lb_algorithm=algorithm)]))
    assert f"balance {balance}" in section(text, backend())


def test_member_timeouts_are_the_listeners(checked):
    text = checked(tree([listener(timeout_member_connect=700, timeout_member_data=9000)]))
    assert {"timeout connect 700", "timeout server 9000"} <= set(section(text, backend()))


def test_source_ip_persistence(checked):
    text = checked(tree(pools=[pool(session_persistence={"type": "SOURCE_IP"})]))
    lines = section(text, backend())
    assert "stick on src" in lines
    assert any(line.startswith("stick-table type ipv6") for line in lines)


def test_http_cookie_persistence(checked):
    text = checked(tree(pools=[pool(session_persistence={"type": "HTTP_COOKIE"})]))
    lines = section(text, backend())
    assert "cookie SRV insert indirect nocache" in lines
    assert "server m-1 10.0.0.11:8080 weight 1 cookie m-1" in lines


def test_app_cookie_persistence(checked):
    text = checked(tree(pools=[pool(session_persistence={"type": "APP_COOKIE",
                                                         "cookie_name": "JSESSIONID"})]))
    lines = section(text, backend())
    assert "stick store-response res.cook(JSESSIONID)" in lines
    assert "stick match req.cook(JSESSIONID)" in lines


def test_cookie_persistence_is_left_out_of_tcp(checked):
    text = checked(tree([listener(TCP, protocol="TCP")],
                        [pool(protocol="TCP", session_persistence={"type": "HTTP_COOKIE"})]))
    lines = section(text, backend(POOL, TCP))
    assert not any(line.startswith(("cookie", "stick")) for line in lines)
    assert "server m-1 10.0.0.11:8080 weight 1" in lines


def test_a_cookie_name_that_could_break_the_config_is_refused():
    with pytest.raises(haproxy.HaproxyError, match="cookie"):
        haproxy.render(tree(pools=[pool(session_persistence={
            "type": "APP_COOKIE", "cookie_name": "a) # b"})]), "/s")


def test_an_http_monitor(checked):
    text = checked(tree(pools=[pool(healthmonitor=monitor(
        http_method="HEAD", url_path="/status?full=1", expected_codes="200-204,301",
        http_version=1.1, domain_name="app.example.com"), members=[
            member("m-1", monitor_address="10.0.0.99", monitor_port=9000),
            member("m-2", "10.0.0.12")])]))
    lines = section(text, backend())
    assert lines[4:] == [
        "timeout check 1s",
        "option httpchk",
        "http-check send meth HEAD uri '/status?full=1' ver HTTP/1.1 "
        "hdr Host 'app.example.com'",
        "http-check expect status 200-204,301",
        "server m-1 10.0.0.11:8080 weight 1 check inter 2s fall 2 rise 3 addr 10.0.0.99 "
        "port 9000",
        "server m-2 10.0.0.12:8080 weight 1 check inter 2s fall 2 rise 3"]


def test_an_https_monitor_speaks_tls(checked):
    text = checked(tree([listener(TCP, protocol="TCP")],
                        [pool(protocol="HTTPS", healthmonitor=monitor("HTTPS"))]))
    lines = section(text, backend(POOL, TCP))
    assert "http-check send meth GET uri '/health' ver HTTP/1.0" in lines
    assert lines[-1].endswith("check inter 2s fall 2 rise 3 check-ssl verify none")


@pytest.mark.parametrize("kind", ["TCP", "PING"])
def test_tcp_and_ping_monitors_connect(checked, kind):
    text = checked(tree(pools=[pool(healthmonitor=monitor(kind))]))
    lines = section(text, backend())
    assert "timeout check 1s" in lines
    assert not any("httpchk" in line or "http-check" in line for line in lines)
    assert lines[-1] == "server m-2 10.0.0.12:8080 weight 1 check inter 2s fall 2 rise 3"


def test_tls_hello_monitor(checked):
    text = checked(tree([listener(TCP, protocol="TCP")],
                        [pool(protocol="HTTPS", healthmonitor=monitor("TLS-HELLO"))]))
    assert "option ssl-hello-chk" in section(text, backend(POOL, TCP))


def test_a_disabled_monitor_checks_nothing(checked):
    text = checked(tree(pools=[pool(healthmonitor=monitor(admin_state_up=False))]))
    assert not any("check" in line for line in section(text, backend()))


def test_bad_expected_codes_are_refused():
    with pytest.raises(haproxy.HaproxyError, match="expected codes"):
        haproxy.render(tree(pools=[pool(healthmonitor=monitor(expected_codes="200 OR 1=1"))]),
                       "/s")


def test_members_backup_weight_zero_disabled_and_ipv6(checked):
    members = [member("m-1", weight=0), member("m-2", "10.0.0.12", backup=True),
               member("m-3", "10.0.0.13", admin_state_up=False),
               member("m-6", "2001:db8:0:0::6", weight=256)]
    text = checked(tree(pools=[pool(members=members, protocol="PROXY")]))
    assert section(text, backend())[-4:] == [
        "server m-1 10.0.0.11:8080 weight 0 send-proxy",
        "server m-2 10.0.0.12:8080 weight 1 backup send-proxy",
        "server m-3 10.0.0.13:8080 weight 1 disabled send-proxy",
        "server m-6 2001:db8::6:8080 weight 256 send-proxy"]


def test_an_ipv6_vip(checked):
    lb = tree()
    lb["vip"]["address"] = "2001:db8::10"
    assert "bind 2001:db8::10:80" in section(checked(lb), f"frontend {HTTP}")


def test_a_bad_cidr_is_refused():
    with pytest.raises(haproxy.HaproxyError, match="not a CIDR"):
        haproxy.render(tree([listener(allowed_cidrs=["10.0.0.0/33"])]), "/s")


def test_a_host_name_is_not_an_address():
    with pytest.raises(haproxy.HaproxyError, match="not an IP address"):
        haproxy.render(tree(pools=[pool(members=[member("m-1", "db.example.com")])]), "/s")


def test_a_disabled_pool_has_its_servers_disabled(checked):
    text = checked(tree(pools=[pool(admin_state_up=False, healthmonitor=monitor())]))
    lines = section(text, backend())
    assert all(line.endswith(" disabled") for line in lines if line.startswith("server"))
    assert not any("check" in line for line in lines)


def test_a_shared_pool_has_a_backend_per_listener(checked):
    text = checked(tree([listener(), listener(TCP, protocol="TCP", protocol_port=81,
                                              timeout_member_connect=1)]))
    assert section(text, backend(POOL, HTTP))[0] == "mode http"
    assert section(text, backend(POOL, TCP))[:4] == [
        "mode tcp", "balance roundrobin", "timeout connect 1", "timeout server 50000"]


def test_what_runs_and_what_does_not(checked):
    assert haproxy.should_run(tree())
    assert not haproxy.should_run(tree(admin_state_up=False))
    assert not haproxy.should_run(tree([]))
    off = tree([listener(admin_state_up=False), listener(TCP, protocol="TCP", protocol_port=81)],
               [pool(), pool(OTHER)])
    assert haproxy.should_run(off)
    text = checked(off)
    assert f"frontend {HTTP}" not in text and f"frontend {TCP}" in text
    assert backend(OTHER, TCP) not in text  # no listener uses it
    assert "maxconn 50000" in section(text, "global")


def test_a_listener_without_a_pool(checked):
    text = checked(tree([listener(default_pool_id=None)], []))
    assert not any(line.startswith("default_backend")
                   for line in section(text, f"frontend {HTTP}"))
    assert "backend " not in text


def test_an_unknown_listener_protocol_is_refused():
    with pytest.raises(haproxy.HaproxyError, match="TERMINATED_HTTPS"):
        haproxy.render(tree([listener(protocol="TERMINATED_HTTPS")]), "/s")


# --- L7 ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kind, compare, key, acl", [
    ("PATH", "EQUAL_TO", None, "path -m str -- '/v'"),
    ("PATH", "STARTS_WITH", None, "path -m beg -- '/v'"),
    ("PATH", "ENDS_WITH", None, "path -m end -- '/v'"),
    ("PATH", "CONTAINS", None, "path -m sub -- '/v'"),
    ("PATH", "REGEX", None, "path -m reg -- '/v'"),
    ("HOST_NAME", "EQUAL_TO", None, "req.hdr(host) -m str -i -- '/v'"),
    ("HOST_NAME", "ENDS_WITH", None, "req.hdr(host) -m end -i -- '/v'"),
    ("HEADER", "CONTAINS", "X-Tenant", "req.hdr(X-Tenant) -m sub -- '/v'"),
    ("COOKIE", "EQUAL_TO", "session", "req.cook(session) -m str -- '/v'"),
    ("FILE_TYPE", "REGEX", None, "path -m reg -- '/v'"),
])
def test_each_rule_type(checked, kind, compare, key, acl):
    rules = [rule("r1", kind, compare, "/v", key=key)]
    text = checked(tree([listener(l7policies=[policy("p1", "REJECT", 1, rules)])]))
    assert f"acl r1 {acl}" in section(text, f"frontend {HTTP}")


def test_a_file_type_is_an_extension(checked):
    rules = [rule("r1", "FILE_TYPE", "EQUAL_TO", "jpg"),
             rule("r2", "FILE_TYPE", "EQUAL_TO", ".png")]
    front = section(checked(tree([listener(l7policies=[policy("p1", "REJECT", 1, rules)])])),
                    f"frontend {HTTP}")
    assert "acl r1 path -m end -- '.jpg'" in front
    assert "acl r2 path -m end -- '.png'" in front


def test_each_action_in_position_order(checked):
    policies = [
        policy("p-pool", "REDIRECT_TO_POOL", 4, [rule("r4")], redirect_pool_id=OTHER),
        policy("p-reject", "REJECT", 1, [rule("r1"), rule("r1b", invert=True)]),
        policy("p-url", "REDIRECT_TO_URL", 2, [rule("r2")],
               redirect_url="https://example.com/a%20b", redirect_http_code=301),
        policy("p-prefix", "REDIRECT_PREFIX", 3, [rule("r3")],
               redirect_prefix="https://example.com"),
    ]
    text = checked(tree([listener(l7policies=policies)], [pool(), pool(OTHER)]))
    front = section(text, f"frontend {HTTP}")
    ranks = [line for line in front if line.startswith("http-request set-var")]
    assert ranks == [
        "http-request set-var(txn.l7policy) int(1) if !{ var(txn.l7policy) -m found } r1 !r1b",
        "http-request set-var(txn.l7policy) int(2) if !{ var(txn.l7policy) -m found } r2",
        "http-request set-var(txn.l7policy) int(3) if !{ var(txn.l7policy) -m found } r3",
        "http-request set-var(txn.l7policy) int(4) if !{ var(txn.l7policy) -m found } r4"]
    assert "http-request deny if { var(txn.l7policy) -m int 1 }" in front
    assert ("http-request redirect location 'https://example.com/a%%20b' code 301 "
            "if { var(txn.l7policy) -m int 2 }") in front
    assert ("http-request redirect prefix 'https://example.com' code 302 "
            "if { var(txn.l7policy) -m int 3 }") in front
    assert front[-2:] == [f"use_backend {OTHER}:{HTTP} if {{ var(txn.l7policy) -m int 4 }}",
                          f"default_backend {POOL}:{HTTP}"]
    assert backend(OTHER, HTTP) in text


def test_policies_that_cannot_match_are_left_out(checked):
    policies = [policy("p-off", "REJECT", 1, [rule("r1")], admin_state_up=False),
                policy("p-no-rules", "REJECT", 2, []),
                policy("p-rules-off", "REJECT", 3, [rule("r3", admin_state_up=False)]),
                policy("p-no-pool", "REDIRECT_TO_POOL", 4, [rule("r4")],
                       redirect_pool_id="gone"),
                policy("p-on", "REJECT", 5, [rule("r5"), rule("r5b", admin_state_up=False)])]
    front = section(checked(tree([listener(l7policies=policies)])), f"frontend {HTTP}")
    assert [line for line in front if line.startswith("acl")] == [
        "acl r5 path -m beg -- '/x'"]
    assert "http-request deny if { var(txn.l7policy) -m int 1 }" in front


@pytest.mark.parametrize("value, word", [
    ("a b", "'a b'"),
    ("it's", "'it'\\''s'"),
    ('say "hi" # now', "'say \"hi\" # now'"),
    ("$HOME ${PATH}", "'$HOME ${PATH}'"),
    ("back\\slash", "'back\\slash'"),
    ("line\nbreak\r", "'line'\\x0a'break'\\x0d"),
    ("-i", "'-i'"),
    ("", "''"),
])
def test_nasty_values_stay_one_word(checked, value, word):
    assert haproxy.quote(value) == word
    rules = [rule("r1", "HEADER", "EQUAL_TO", value, key="X-Nasty")]
    front = section(checked(tree([listener(l7policies=[policy("p1", "REJECT", 1, rules)])])),
                    f"frontend {HTTP}")
    assert f"acl r1 req.hdr(X-Nasty) -m str -- {word}" in front


def test_a_nasty_redirect_url(checked):
    policies = [policy("p1", "REDIRECT_TO_URL", 1, [rule("r1")],
                       redirect_url="http://x/%[src] it's")]
    front = section(checked(tree([listener(l7policies=policies)])), f"frontend {HTTP}")
    assert ("http-request redirect location 'http://x/%%[src] it'\\''s' code 302 "
            "if { var(txn.l7policy) -m int 1 }") in front


def test_a_header_name_that_could_break_the_config_is_refused():
    rules = [rule("r1", "HEADER", "EQUAL_TO", "v", key="X) || true")]
    with pytest.raises(haproxy.HaproxyError, match="header"):
        haproxy.render(tree([listener(l7policies=[policy("p1", "REJECT", 1, rules)])]), "/s")


def test_an_id_that_could_break_the_config_is_refused():
    with pytest.raises(haproxy.HaproxyError, match="member id"):
        haproxy.render(tree(pools=[pool(members=[member("m 1\nlisten x")])]), "/s")


def test_check_names_what_haproxy_complained_of(tmp_path):
    if not os.path.exists(HAPROXY):
        pytest.skip(f"{HAPROXY} is not installed")
    path = tmp_path / "bad.cfg"
    path.write_text("global\n    no-such-keyword here\n")
    with pytest.raises(haproxy.HaproxyError, match="no-such-keyword"):
        haproxy.check(str(path), HAPROXY)


def test_a_long_directory_puts_the_socket_elsewhere():
    assert haproxy.socket_path("/var/lib/neutrino/lbaas/x") == \
        "/var/lib/neutrino/lbaas/x/stats.sock"
    long = "/tmp/" + "d" * 120
    path = haproxy.socket_path(long)
    assert path.startswith(haproxy.SHORT_SOCKETS + "/") and len(path) < 100
    assert haproxy.socket_path(long) == path


# --- show stat --------------------------------------------------------------------------------

HEADER = ("# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,dreq,dresp,ereq,econ,"
          "eresp,wretr,wredis,status,weight,act,bck,chkfail,chkdown,lastchg,downtime,"
          "qlimit,pid,iid,sid,throttle,lbtot,tracked,type,rate,rate_lim,rate_max,"
          "check_status,check_code,check_duration,hrsp_1xx,")


def stat_row(pxname: str, svname: str, status: str, scur: int = 0, stot: int = 0,
             bin_: int = 0, bout: int = 0, ereq: str = "") -> str:
    return (f"{pxname},{svname},,,{scur},1,50000,{stot},{bin_},{bout},0,0,{ereq},0,0,0,0,"
            f"{status},1,1,0,0,0,5,0,,1,2,0,,0,,0,0,0,2,L7OK,200,1,0,")


def sample(*rows: str) -> list[dict[str, str]]:
    return haproxy.parse_stat("\n".join([HEADER, *rows]) + "\n")


def shared_tree() -> LoadBalancerSyncData:
    members = [member("m-1"), member("m-2", "10.0.0.12"), member("m-3", "10.0.0.13"),
               member("m-4", "10.0.0.14", admin_state_up=False)]
    return tree([listener(), listener(TCP, protocol="TCP", protocol_port=81),
                 listener("listener-off", admin_state_up=False, protocol_port=82)],
                [pool(members=members, healthmonitor=monitor()),
                 pool(OTHER, members=[member("m-9")]), pool("pool-off", admin_state_up=False,
                                                           members=[member("m-8")])])


def statuses(report: Any) -> dict[str, str]:
    found = {"loadbalancer": report["loadbalancer"]}
    for kind in ("listeners", "pools", "members"):
        found.update({item["id"]: item["operating_status"] for item in report[kind]})
    return found


def test_parse_stat():
    rows = sample(stat_row(HTTP, "FRONTEND", "OPEN", 3, 40, 1000, 2000, "2"))
    assert rows[0]["pxname"] == HTTP and rows[0]["status"] == "OPEN"
    assert rows[0]["hrsp_1xx"] == "0"
    assert haproxy.parse_stat("") == []


@pytest.mark.parametrize("status, operating", [
    ("UP", "ONLINE"), ("UP 1/2", "ONLINE"), ("DOWN", "ERROR"), ("DOWN 1/3", "ERROR"),
    ("no check", "NO_MONITOR"), ("MAINT", "OFFLINE"), ("MAINT (via x/y)", "OFFLINE"),
    ("DRAIN", "ONLINE"), ("NOLB", "ONLINE")])
def test_server_status(status, operating):
    assert haproxy.server_status(status) == operating


def test_all_up():
    rows = sample(stat_row(HTTP, "FRONTEND", "OPEN"), stat_row(TCP, "FRONTEND", "OPEN"),
                  *(stat_row(f"{POOL}:{name}", server, "UP")
                    for name in (HTTP, TCP) for server in ("m-1", "m-2", "m-3")),
                  stat_row(f"{POOL}:{HTTP}", "m-4", "MAINT"),
                  stat_row(f"{POOL}:{HTTP}", "BACKEND", "UP"),
                  stat_row(f"{POOL}:{TCP}", "BACKEND", "UP"))
    report = haproxy.status_report(shared_tree(), rows)
    assert report["loadbalancer_id"] == LB and report["revision_number"] == 3
    assert report["applied"] and report["error"] == ""
    assert statuses(report) == {
        "loadbalancer": "ONLINE", HTTP: "ONLINE", TCP: "ONLINE", "listener-off": "OFFLINE",
        POOL: "ONLINE", "m-1": "ONLINE", "m-2": "ONLINE", "m-3": "ONLINE", "m-4": "OFFLINE",
        OTHER: "OFFLINE", "m-9": "OFFLINE", "pool-off": "OFFLINE", "m-8": "OFFLINE"}


def test_a_member_down_in_either_backend_degrades():
    rows = sample(stat_row(HTTP, "FRONTEND", "OPEN"), stat_row(TCP, "FRONTEND", "OPEN"),
                  stat_row(f"{POOL}:{HTTP}", "m-1", "UP"),
                  stat_row(f"{POOL}:{TCP}", "m-1", "DOWN"),
                  stat_row(f"{POOL}:{HTTP}", "m-2", "DRAIN"),
                  stat_row(f"{POOL}:{HTTP}", "m-3", "UP"),
                  stat_row(f"{POOL}:{HTTP}", "BACKEND", "UP"),
                  stat_row(f"{POOL}:{TCP}", "BACKEND", "UP"))
    found = statuses(haproxy.status_report(shared_tree(), rows))
    assert (found["m-1"], found["m-2"], found[POOL], found["loadbalancer"]) == (
        "ERROR", "ONLINE", "DEGRADED", "DEGRADED")


def test_all_members_down_is_an_error():
    rows = sample(stat_row(HTTP, "FRONTEND", "OPEN"),
                  *(stat_row(f"{POOL}:{HTTP}", server, "DOWN") for server in ("m-1", "m-2", "m-3")),
                  stat_row(f"{POOL}:{HTTP}", "BACKEND", "DOWN"))
    found = statuses(haproxy.status_report(shared_tree(), rows))
    assert (found[POOL], found["loadbalancer"], found[TCP]) == ("ERROR", "DEGRADED", "ERROR")


def test_no_monitor_and_an_empty_pool():
    lb = tree([listener(), listener(TCP, protocol="TCP", default_pool_id=OTHER)],
              [pool(), pool(OTHER, members=[])])
    rows = sample(stat_row(HTTP, "FRONTEND", "OPEN"), stat_row(TCP, "FRONTEND", "OPEN"),
                  stat_row(f"{POOL}:{HTTP}", "m-1", "no check"),
                  stat_row(f"{POOL}:{HTTP}", "m-2", "no check"),
                  stat_row(f"{POOL}:{HTTP}", "BACKEND", "UP"),
                  stat_row(f"{OTHER}:{TCP}", "BACKEND", "DOWN"))
    found = statuses(haproxy.status_report(lb, rows))
    assert found == {"loadbalancer": "ONLINE", HTTP: "ONLINE", TCP: "ONLINE",
                     POOL: "ONLINE", "m-1": "NO_MONITOR", "m-2": "NO_MONITOR",
                     OTHER: "ONLINE"}


def test_a_disabled_load_balancer_is_offline():
    found = statuses(haproxy.status_report(tree(admin_state_up=False), []))
    assert set(found.values()) == {"OFFLINE"}


def test_a_full_listener_is_degraded():
    rows = sample(stat_row(HTTP, "FRONTEND", "FULL"))
    assert statuses(haproxy.status_report(tree(), rows))[HTTP] == "DEGRADED"


def test_listener_stats():
    rows = sample(stat_row(HTTP, "FRONTEND", "OPEN", 3, 40, 1000, 2000, "2"),
                  stat_row(f"{POOL}:{HTTP}", "BACKEND", "UP", 9, 90, 5, 5))
    stats = haproxy.listener_stats(tree([listener(), listener(TCP, protocol="TCP")]), rows)
    assert stats == {
        HTTP: {"bytes_in": 1000, "bytes_out": 2000, "active_connections": 3,
               "total_connections": 40, "request_errors": 2},
        TCP: {"bytes_in": 0, "bytes_out": 0, "active_connections": 0,
              "total_connections": 0, "request_errors": 0}}
