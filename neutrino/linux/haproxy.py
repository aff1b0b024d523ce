"""HAProxy for the ``haproxy`` load-balancer provider: one per load balancer.

The agent hands over a load balancer's whole tree (``LoadBalancerSyncData``);
``render`` (pure) turns it into an ``haproxy.cfg``, ``Haproxy`` runs that in
the load balancer's namespace (``qlbaas-<id>``, made by the caller with the
VIP port in it) and reads HAProxy's stats socket back into the contract's
operating statuses and statistics (``status_report``, ``listener_stats``:
pure, on ``parse_stat`` of ``show stat``).

What runs: nothing for a disabled load balancer (it carries no traffic) or
one without an enabled listener (HAProxy will not start with nothing to
listen on); such a tree stops its HAProxy. Otherwise one ``frontend`` per
enabled listener and one ``backend`` per (pool, listener) pair the listener
uses, as its default pool or by an L7 policy, named ``<pool id>:<listener
id>``: the backend's timeouts are the listener's and HAProxy wants an HTTP
frontend's backends to be HTTP too, so a pool shared by listeners of
different protocols or timeouts needs one backend for each (its members are
health-checked by each). The backend's mode is therefore its listener's
(HTTP -> http; TCP and HTTPS, passed through, -> tcp); cookie persistence
needs http and is left out of tcp backends. A disabled pool's or member's
servers are ``disabled`` (HAProxy answers 503 for a pool with none).

L7 policies (HTTP listeners only) are tried in ``position`` order and the
first that matches wins, as the API says: each enabled policy with enabled
rules sets a transaction variable to its rank if none is set yet and all its
rules (ANDed, ``invert`` negating) match; the actions then test that
variable. (HAProxy runs every ``http-request`` rule before any
``use_backend``, so writing the actions in position order alone would let a
REJECT at position 2 beat a REDIRECT_TO_POOL at position 1.) A policy with no
enabled rule never matches. User values are written strongly quoted
(``quote``); a value HAProxy would read as log-format (redirect targets, the
monitor's Host header) has its ``%`` doubled.

Health monitors: HTTP and HTTPS send ``http_method url_path`` (HTTPS over
TLS, unverified) and expect ``expected_codes`` (HAProxy's ``status`` takes
"200", "200-204" and "200,202" as they are); TCP and PING connect only
(HAProxy has no ICMP check: PING is a TCP connect to the member's port);
TLS-HELLO sends an SSLv3/TLS hello.

Processes: HAProxy runs daemonised (``-D``) in the namespace, its pid in a
pid file, so it outlives the agent (even one killed with SIGKILL) and a
restarted agent finds it again by pid file and command line. A changed
config is checked (``haproxy -c``) before anything is touched, then loaded
by a new HAProxy that takes the listening sockets over from the running
one through its stats socket (``-x``, ``expose-fd listeners``: no
connection refused meanwhile) and tells it to finish its connections and go
(``-sf``). This is HAProxy's own seamless reload, and unlike a master-worker
reload (SIGUSR2) it is synchronous: a new config HAProxy cannot load (a bind
that fails, say) is refused with HAProxy's own words while the old process
keeps serving. (A master-worker master that fails a reload only says so on
its next one, and its stderr is /dev/null once daemonised.) The price: the
pid changes at each reload, and an old process may linger while its
connections drain (``stop`` ends those too). HAProxy's global ``maxconn`` is
kept within what the file descriptor limit it inherits allows
(``host_maxconn``): asked for more, HAProxy refuses to start. ``running``
lists the load balancers of a state directory with an HAProxy serving, for
an agent to stop those it no longer has.
"""

from __future__ import annotations

import csv
import ipaddress
import logging
import os
import re
import resource
import socket
import subprocess
import time
from collections.abc import Iterable, Mapping
from typing import Any, Literal, TypeAlias

from neutrino.linux import process
from neutrino.linux.errors import HostError

# The shapes of ``rpc.contracts.lbaas`` (the host seam imports nothing of the
# bus): the tree is read here as mappings, the statuses made as plain dicts.
Tree: TypeAlias = Mapping[str, Any]
LoadBalancerSyncData: TypeAlias = Tree
ListenerSyncData: TypeAlias = Tree
PoolSyncData: TypeAlias = Tree
MemberSyncData: TypeAlias = Tree
HealthMonitorSyncData: TypeAlias = Tree
L7PolicySyncData: TypeAlias = Tree
L7RuleSyncData: TypeAlias = Tree
StatusReport: TypeAlias = dict[str, Any]
ObjectStatus: TypeAlias = dict[str, Any]
Stats: TypeAlias = dict[str, int]
OperatingStatus: TypeAlias = str

LOG = logging.getLogger(__name__)

HAPROXY = "haproxy"
CONFIG, PID, SOCKET = "haproxy.cfg", "haproxy.pid", "stats.sock"
#: sun_path is 108 bytes: a longer socket path goes under here, by a hash
SHORT_SOCKETS = "/run/neutrino-lbaas"
#: a listener's connection limit when the API says -1 (unlimited)
UNLIMITED = 50000
#: file descriptors kept for listeners, health checks and HAProxy's own sockets
FD_RESERVE = 1000
#: the transaction variable holding the rank of the L7 policy that matched
L7_VARIABLE = "txn.l7policy"

BALANCE = {"ROUND_ROBIN": "roundrobin", "LEAST_CONNECTIONS": "leastconn",
           "SOURCE_IP": "source"}
#: an L7 rule's compare type -> HAProxy's pattern matching method
MATCH = {"EQUAL_TO": "str", "STARTS_WITH": "beg", "ENDS_WITH": "end", "CONTAINS": "sub",
         "REGEX": "reg"}
#: what HAProxy (and Octavia) call the listener protocols, as HAProxy modes
MODE = {"HTTP": "http", "HTTPS": "tcp", "TCP": "tcp"}
#: identifiers written bare (proxy, server and ACL names): UUIDs and the like
#: (no colon: a backend is named ``<pool id>:<listener id>``)
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
#: header and cookie names written bare inside a sample fetch's parentheses
_TOKEN = re.compile(r"^[A-Za-z0-9_.!*+^|~-]+$")
_METHOD = re.compile(r"^[A-Z]+$")
_CODES = re.compile(r"^[1-5][0-9]{2}(-[1-5][0-9]{2})?(,[1-5][0-9]{2}(-[1-5][0-9]{2})?)*$")

Outcome = Literal["started", "reloaded", "unchanged", "stopped"]


class HaproxyError(HostError):
    """HAProxy refused a config, or a tree cannot be written as one; the
    message names what HAProxy complained of, or the object and its value."""


# --- the config -----------------------------------------------------------------------------

def quote(value: str) -> str:
    """``value`` as one config word that HAProxy reads back unchanged: strongly
    quoted (nothing is interpreted inside single quotes), with the characters
    single quotes cannot hold (``'``, control characters) escaped outside them."""
    if "\0" in value:
        raise HaproxyError(f"{value!r}: HAProxy cannot take a NUL character")
    parts: list[str] = []
    run: list[str] = []
    for char in value:
        if char == "'" or (ord(char) < 0x20 and char != "\t") or char == "\x7f":
            if run:
                parts.append("'" + "".join(run) + "'")
                run = []
            parts.append("\\'" if char == "'" else f"\\x{ord(char):02x}")
        else:
            run.append(char)
    if run or not parts:
        parts.append("'" + "".join(run) + "'")
    return "".join(parts)


def _log_format(value: str) -> str:
    """A literal in a log-format argument (where ``%`` starts a variable)."""
    return quote(value.replace("%", "%%"))


def _name(value: str, what: str) -> str:
    if not _NAME.match(value):
        raise HaproxyError(f"{what} {value!r} cannot name anything in haproxy.cfg")
    return value


def _token(value: str | None, what: str) -> str:
    if not value or not _TOKEN.match(value):
        raise HaproxyError(f"{what} {value!r} is not a name HAProxy can look up")
    return value


def _address(value: str, what: str) -> str:
    """An IP address (never a host name: HAProxy would resolve it at start)."""
    try:
        return ipaddress.ip_address(value).compressed
    except ValueError:
        raise HaproxyError(f"{what} {value!r} is not an IP address") from None


def _network(value: str, what: str) -> str:
    try:
        return str(ipaddress.ip_network(value, strict=False))
    except ValueError:
        raise HaproxyError(f"{what} {value!r} is not a CIDR") from None


def _endpoint(address: str, port: int, what: str) -> str:
    """``address:port``; IPv6 too: HAProxy takes the port after the last colon."""
    if not 0 < port < 65536:
        raise HaproxyError(f"{what} port {port} is out of range")
    return f"{_address(address, what)}:{port}"


def backend_name(pool_id: str, listener_id: str) -> str:
    return f"{_name(pool_id, 'pool id')}:{_name(listener_id, 'listener id')}"


def should_run(lb: LoadBalancerSyncData) -> bool:
    """Whether the tree wants an HAProxy: an enabled load balancer with an
    enabled listener."""
    return lb["admin_state_up"] and any(listener["admin_state_up"]
                                        for listener in lb["listeners"])


def _limit(listener: ListenerSyncData) -> int:
    limit = listener["connection_limit"]
    return UNLIMITED if limit is None or limit < 0 else limit


def _mode(listener: ListenerSyncData) -> str:
    try:
        return MODE[listener["protocol"]]
    except KeyError:
        raise HaproxyError(f"listener {listener['id']}: protocol {listener['protocol']} "
                           "is not one the haproxy provider serves") from None


def _enabled_policies(listener: ListenerSyncData,
                      pools: dict[str, PoolSyncData]) -> list[L7PolicySyncData]:
    """The policies that can match, in the order they are tried."""
    if _mode(listener) != "http":
        return []
    found = []
    for policy in sorted(listener["l7policies"], key=lambda p: (p["position"], p["id"])):
        if not policy["admin_state_up"]:
            continue
        if not any(rule["admin_state_up"] for rule in policy["rules"]):
            continue  # no rule: never matches
        if policy["action"] == "REDIRECT_TO_POOL" and policy["redirect_pool_id"] not in pools:
            continue
        found.append(policy)
    return found


def used_pools(listener: ListenerSyncData, pools: dict[str, PoolSyncData]) -> list[str]:
    """The pools a listener sends to: its default pool, then its L7 ones."""
    default = listener["default_pool_id"]
    used = [default] if default is not None and default in pools else []
    for policy in _enabled_policies(listener, pools):
        pool_id = policy["redirect_pool_id"]
        if policy["action"] == "REDIRECT_TO_POOL" and pool_id and pool_id not in used:
            used.append(pool_id)
    return used


def _acl(rule: L7RuleSyncData) -> str:
    kind, compare = rule["type"], rule["compare_type"]
    if compare not in MATCH:
        raise HaproxyError(f"L7 rule {rule['id']}: compare type {compare} is unknown")
    value, flags = rule["value"], ""
    if kind == "PATH":
        fetch = "path"
    elif kind == "HOST_NAME":
        fetch, flags = "req.hdr(host)", " -i"
    elif kind == "HEADER":
        fetch = f"req.hdr({_token(rule['key'], 'L7 rule ' + rule['id'] + ' header')})"
    elif kind == "COOKIE":
        fetch = f"req.cook({_token(rule['key'], 'L7 rule ' + rule['id'] + ' cookie')})"
    elif kind == "FILE_TYPE":
        # the extension, dot or not, ends the path; a REGEX is matched on the path
        fetch = "path"
        if compare == "EQUAL_TO":
            compare, value = "ENDS_WITH", value if value.startswith(".") else "." + value
    else:
        raise HaproxyError(f"L7 rule {rule['id']}: type {kind} is unknown")
    return (f"    acl {_name(rule['id'], 'L7 rule id')} {fetch} -m {MATCH[compare]}{flags} "
            f"-- {quote(value)}")


def _policy_lines(listener: ListenerSyncData, pools: dict[str, PoolSyncData]) -> list[str]:
    """ACLs, then the first matching policy's rank in ``L7_VARIABLE``, then
    the actions of each rank."""
    policies = _enabled_policies(listener, pools)
    if not policies:
        return []
    lines: list[str] = []
    for policy in policies:
        lines.append(f"    # L7 policy {_name(policy['id'], 'L7 policy id')}: "
                     f"{policy['action']}")
        lines += [_acl(rule) for rule in policy["rules"] if rule["admin_state_up"]]
    for rank, policy in enumerate(policies, 1):
        terms = " ".join(("!" if rule["invert"] else "") + rule["id"]
                         for rule in policy["rules"] if rule["admin_state_up"])
        lines.append(f"    http-request set-var({L7_VARIABLE}) int({rank}) "
                     f"if !{{ var({L7_VARIABLE}) -m found }} {terms}")
    routes: list[str] = []
    for rank, policy in enumerate(policies, 1):
        matched = f"if {{ var({L7_VARIABLE}) -m int {rank} }}"
        code = policy["redirect_http_code"] or 302
        action = policy["action"]
        if action == "REJECT":
            lines.append(f"    http-request deny {matched}")
        elif action == "REDIRECT_TO_URL":
            lines.append(f"    http-request redirect location "
                         f"{_log_format(policy['redirect_url'] or '/')} code {code} {matched}")
        elif action == "REDIRECT_PREFIX":
            lines.append(f"    http-request redirect prefix "
                         f"{_log_format(policy['redirect_prefix'] or '/')} code {code} {matched}")
        elif action == "REDIRECT_TO_POOL":
            pool_id = policy["redirect_pool_id"] or ""
            routes.append(f"    use_backend {backend_name(pool_id, listener['id'])} {matched}")
        else:
            raise HaproxyError(f"L7 policy {policy['id']}: action {action} is unknown")
    return lines + routes


def _frontend(lb: LoadBalancerSyncData, listener: ListenerSyncData,
              pools: dict[str, PoolSyncData]) -> list[str]:
    mode = _mode(listener)
    lines = [f"frontend {_name(listener['id'], 'listener id')}",
             f"    mode {mode}",
             f"    bind {_endpoint(lb['vip']['address'], listener['protocol_port'], 'VIP')}",
             f"    maxconn {_limit(listener)}",
             f"    timeout client {listener['timeout_client_data']}",
             f"    option {'httplog' if mode == 'http' else 'tcplog'}"]
    if listener["timeout_tcp_inspect"] > 0:
        lines.append(f"    tcp-request inspect-delay {listener['timeout_tcp_inspect']}")
    cidrs = [_network(cidr, f"listener {listener['id']} allowed CIDR")
             for cidr in listener["allowed_cidrs"] or []]
    if cidrs:
        for start in range(0, len(cidrs), 16):  # one ACL, its patterns over short lines
            lines.append(f"    acl allowed_cidr src {' '.join(cidrs[start:start + 16])}")
        lines.append("    tcp-request connection reject unless allowed_cidr")
    if mode == "http":
        wanted = {key.lower(): str(value).lower() == "true"
                  for key, value in listener["insert_headers"].items()}
        if wanted.get("x-forwarded-for"):
            lines.append("    http-request set-header X-Forwarded-For %[src]")
        if wanted.get("x-forwarded-port"):
            lines.append("    http-request set-header X-Forwarded-Port %[dst_port]")
        if wanted.get("x-forwarded-proto"):
            lines.append("    http-request set-header X-Forwarded-Proto http")
        lines += _policy_lines(listener, pools)
    if listener["default_pool_id"] in pools:
        lines.append(f"    default_backend "
                     f"{backend_name(listener['default_pool_id'] or '', listener['id'])}")
    return lines


def _monitor_lines(monitor: HealthMonitorSyncData) -> list[str]:
    kind = monitor["type"]
    lines = [f"    timeout check {monitor['timeout']}s"]
    if kind in ("HTTP", "HTTPS"):
        method = monitor["http_method"] or "GET"
        if not _METHOD.match(method):
            raise HaproxyError(f"health monitor {monitor['id']}: method {method!r}")
        version = "HTTP/1.1" if (monitor["http_version"] or 1.0) >= 1.1 else "HTTP/1.0"
        send = (f"    http-check send meth {method} uri {quote(monitor['url_path'] or '/')} "
                f"ver {version}")
        if monitor["domain_name"]:
            send += f" hdr Host {_log_format(monitor['domain_name'])}"
        codes = (monitor["expected_codes"] or "200").replace(" ", "")
        if not _CODES.match(codes):
            raise HaproxyError(f"health monitor {monitor['id']}: expected codes {codes!r}")
        lines += ["    option httpchk", send, f"    http-check expect status {codes}"]
    elif kind == "TLS-HELLO":
        lines.append("    option ssl-hello-chk")
    elif kind not in ("TCP", "PING"):  # PING: a TCP connect (HAProxy has no ICMP check)
        raise HaproxyError(f"health monitor {monitor['id']}: type {kind} is unknown")
    return lines


def _server(member: MemberSyncData, pool: PoolSyncData, checked: bool,
            cookie: bool) -> str:
    what = f"member {member['id']}"
    parts = [f"    server {_name(member['id'], 'member id')}",
             _endpoint(member["address"], member["protocol_port"], what),
             f"weight {member['weight']}"]
    if member["backup"]:
        parts.append("backup")
    if not (member["admin_state_up"] and pool["admin_state_up"]):
        parts.append("disabled")
    if cookie:
        parts.append(f"cookie {member['id']}")
    monitor = pool["healthmonitor"]
    if checked and monitor is not None:
        parts.append(f"check inter {monitor['delay']}s fall {monitor['max_retries_down']} "
                     f"rise {monitor['max_retries']}")
        if member["monitor_address"]:
            parts.append(f"addr {_address(member['monitor_address'], what + ' monitor')}")
        if member["monitor_port"]:
            parts.append(f"port {member['monitor_port']}")
        if monitor["type"] == "HTTPS":
            parts.append("check-ssl verify none")
    if pool["protocol"] == "PROXY":
        parts.append("send-proxy")
    elif pool["protocol"] == "PROXYV2":
        parts.append("send-proxy-v2")
    return " ".join(parts)


def _backend(pool: PoolSyncData, listener: ListenerSyncData) -> list[str]:
    mode = _mode(listener)
    algorithm = BALANCE.get(pool["lb_algorithm"])
    if algorithm is None:
        raise HaproxyError(f"pool {pool['id']}: algorithm {pool['lb_algorithm']} is unknown")
    lines = [f"backend {backend_name(pool['id'], listener['id'])}",
             f"    mode {mode}",
             f"    balance {algorithm}",
             f"    timeout connect {listener['timeout_member_connect']}",
             f"    timeout server {listener['timeout_member_data']}"]
    persistence = pool["session_persistence"] or {}
    kind = persistence.get("type")
    cookie = False
    if kind == "SOURCE_IP":
        lines += ["    stick-table type ipv6 size 100k expire 30m", "    stick on src"]
    elif kind in ("HTTP_COOKIE", "APP_COOKIE") and mode != "http":
        lines.append(f"    # {kind} persistence needs an HTTP listener: none here")
    elif kind == "HTTP_COOKIE":
        lines.append("    cookie SRV insert indirect nocache")
        cookie = True
    elif kind == "APP_COOKIE":
        # learnt from the member's Set-Cookie, matched on the client's Cookie
        name = _token(persistence.get("cookie_name"), f"pool {pool['id']} cookie")
        lines += ["    stick-table type string len 64 size 100k expire 30m",
                  f"    stick store-response res.cook({name})",
                  f"    stick match req.cook({name})"]
    elif kind:
        raise HaproxyError(f"pool {pool['id']}: session persistence {kind} is unknown")
    monitor = pool["healthmonitor"]
    checked = monitor is not None and monitor["admin_state_up"] and pool["admin_state_up"]
    if checked and monitor is not None:
        lines += _monitor_lines(monitor)
    lines += [_server(member, pool, checked, cookie) for member in pool["members"]]
    return lines


def render(lb: LoadBalancerSyncData, stats_socket: str, maxconn: int | None = None) -> str:
    """Pure: the ``haproxy.cfg`` of a load balancer's tree (its enabled
    listeners and the pools they use; see the module's docstring). HAProxy's
    global connection limit is the sum of its listeners', at most ``maxconn``
    (what the host's file descriptor limit allows: ``host_maxconn``) and at
    most its flavor's ``maxconn``; the flavor's ``nbthread`` sets its threads."""
    pools = {pool["id"]: pool for pool in lb["pools"]}
    listeners = [listener for listener in lb["listeners"] if listener["admin_state_up"]]
    flavor = lb.get("flavor") or {}
    total = max(sum(_limit(listener) for listener in listeners), 1)
    for limit in (maxconn, flavor.get("maxconn")):
        if limit is not None:
            total = min(total, limit)
    threads = [f"    nbthread {int(flavor['nbthread'])}"] if "nbthread" in flavor else []
    lines = [f"# written by the neutrino lbaas agent for load balancer "
             f"{_name(lb['id'], 'load balancer id')}",
             "global",
             f"    stats socket {quote(stats_socket)} mode 600 level admin "
             "expose-fd listeners",
             f"    maxconn {total}",
             *threads,
             "",
             "defaults",
             "    retries 3",
             "    option redispatch",
             "    timeout connect 5000",
             "    timeout client 50000",
             "    timeout server 50000",
             "    timeout check 5000"]
    for listener in sorted(listeners, key=lambda item: item["id"]):
        lines += ["", *_frontend(lb, listener, pools)]
    for listener in sorted(listeners, key=lambda item: item["id"]):
        for pool_id in used_pools(listener, pools):
            lines += ["", *_backend(pools[pool_id], listener)]
    return "\n".join(lines) + "\n"


# --- what HAProxy says ------------------------------------------------------------------------

def parse_stat(text: str) -> list[dict[str, str]]:
    """Pure: ``show stat``'s CSV (a ``# pxname,svname,...`` header) as rows."""
    lines = text.strip().splitlines()
    if not lines or not lines[0].startswith("#"):
        return []
    header = [name.strip() for name in lines[0].lstrip("# ").split(",")]
    return [dict(zip(header, row, strict=False)) for row in csv.reader(lines[1:]) if row]


#: the worst of several statuses (a member checked by several backends)
_RANK: dict[OperatingStatus, int] = {"OFFLINE": 0, "NO_MONITOR": 1, "ONLINE": 2,
                                     "DEGRADED": 3, "ERROR": 4}


def _worst(statuses: Iterable[OperatingStatus], default: OperatingStatus) -> OperatingStatus:
    return max(statuses, key=_RANK.__getitem__, default=default)


def server_status(status: str) -> OperatingStatus:
    """A ``server`` row's ``status`` as a member's operating status ("UP 1/2"
    is up but failing checks; "DOWN 1/2" is down but passing them)."""
    if status.startswith("MAINT"):
        return "OFFLINE"
    if status == "no check":
        return "NO_MONITOR"
    if status.startswith("DOWN"):
        return "ERROR"
    return "ONLINE"  # UP, DRAIN (weight 0), NOLB


def _int(row: dict[str, str], key: str) -> int:
    try:
        return int(row.get(key) or 0)
    except ValueError:
        return 0


def status_report(lb: LoadBalancerSyncData, rows: list[dict[str, str]]) -> StatusReport:
    """Pure: the tree's operating statuses from ``show stat`` rows (none when
    no HAProxy runs). Members: UP and DRAIN ONLINE, DOWN ERROR, "no check"
    NO_MONITOR, MAINT or disabled OFFLINE. A pool: ERROR when its backend is
    DOWN or all its enabled members are, DEGRADED when some are, ONLINE
    otherwise (an empty pool too: nothing failed), OFFLINE when disabled or
    no listener uses it. A listener: ONLINE when its frontend is OPEN, OFFLINE
    when disabled, ERROR when HAProxy does not have it. The load balancer:
    DEGRADED when any listener or pool is DEGRADED or ERROR."""
    frontends = {row["pxname"]: row for row in rows if row.get("svname") == "FRONTEND"}
    backends: dict[str, list[dict[str, str]]] = {}
    servers: dict[tuple[str, str], list[str]] = {}
    for row in rows:
        pool_id, _, _ = row.get("pxname", "").partition(":")
        if row.get("svname") == "BACKEND":
            backends.setdefault(pool_id, []).append(row)
        elif row.get("svname") != "FRONTEND":
            servers.setdefault((pool_id, row.get("svname", "")), []).append(
                row.get("status", ""))
    enabled = lb["admin_state_up"]
    listeners: list[ObjectStatus] = []
    for listener in lb["listeners"]:
        status: OperatingStatus = "OFFLINE"
        if enabled and listener["admin_state_up"]:
            shown = frontends.get(listener["id"], {}).get("status")
            status = ("ONLINE" if shown == "OPEN" else "DEGRADED" if shown == "FULL"
                      else "ERROR")
        listeners.append({"id": listener["id"], "operating_status": status})
    pools: list[ObjectStatus] = []
    members: list[ObjectStatus] = []
    for pool in lb["pools"]:
        used = enabled and pool["admin_state_up"] and pool["id"] in backends
        member_statuses: list[OperatingStatus] = []
        for member in pool["members"]:
            seen = servers.get((pool["id"], member["id"]), [])
            state: OperatingStatus = "OFFLINE"
            if used and member["admin_state_up"] and seen:
                state = _worst((server_status(found) for found in seen), "OFFLINE")
                member_statuses.append(state)
            members.append({"id": member["id"], "operating_status": state})
        pool_status: OperatingStatus = "OFFLINE"
        if used:
            down = any(row.get("status") == "DOWN" for row in backends[pool["id"]])
            failed = [found for found in member_statuses if found == "ERROR"]
            if member_statuses and (down or len(failed) == len(member_statuses)):
                pool_status = "ERROR"
            elif failed:
                pool_status = "DEGRADED"
            else:
                pool_status = "ONLINE"
        pools.append({"id": pool["id"], "operating_status": pool_status})
    overall: OperatingStatus = "OFFLINE"
    if enabled:
        overall = "ONLINE"
        if any(item["operating_status"] in ("DEGRADED", "ERROR")
               for item in (*listeners, *pools)):
            overall = "DEGRADED"
    return {"loadbalancer_id": lb["id"], "revision_number": lb["revision_number"],
            "applied": True, "error": "", "loadbalancer": overall, "listeners": listeners,
            "pools": pools, "members": members}


def listener_stats(lb: LoadBalancerSyncData, rows: list[dict[str, str]]) -> dict[str, Stats]:
    """Pure: each listener's counters, from its frontend's row (zero when it
    has none). They count from the running HAProxy's start: a reload starts
    them again."""
    frontends = {row["pxname"]: row for row in rows if row.get("svname") == "FRONTEND"}
    found: dict[str, Stats] = {}
    for listener in lb["listeners"]:
        row = frontends.get(listener["id"], {})
        found[listener["id"]] = {"bytes_in": _int(row, "bin"), "bytes_out": _int(row, "bout"),
                                 "active_connections": _int(row, "scur"),
                                 "total_connections": _int(row, "stot"),
                                 "request_errors": _int(row, "ereq")}
    return found


# --- the host ---------------------------------------------------------------------------------

def ask(socket_path: str, command: str, timeout: float = 5.0) -> str:
    """One command on an HAProxy CLI socket (a UNIX socket on the host's file
    system, whichever network namespace HAProxy is in), and its whole answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(socket_path)
        sock.sendall(command.encode() + b"\n")
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


def _complaint(output: str) -> str:
    """HAProxy's alerts, in one line."""
    alerts = [re.sub(r"^\[ALERT\]\s*\(\d+\)\s*:\s*", "", line).strip()
              for line in output.splitlines() if line.startswith("[ALERT]")]
    if alerts:
        return " | ".join(alerts)
    lines = output.strip().splitlines()
    return lines[-1] if lines else "no reason given"


def host_maxconn() -> int:
    """The most connections an HAProxy started from here can take: it needs two
    file descriptors for each (and some for listeners, checks and sockets),
    and may raise its own limit only up to the hard one it inherits (asking
    for more, it refuses to start)."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        return UNLIMITED * 20
    return max((hard - FD_RESERVE) // 2, 100)


def check(config_file: str, binary: str = HAPROXY) -> None:
    """``haproxy -c``: raise ``HaproxyError`` with HAProxy's alerts if it
    would not load ``config_file`` (nothing is bound or started)."""
    done = subprocess.run([binary, "-c", "-f", config_file], capture_output=True, text=True,
                          timeout=30, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise HaproxyError(f"HAProxy refuses {config_file}: "
                           f"{_complaint(done.stderr + done.stdout)}")


class Haproxy:
    """The HAProxy of one load balancer: its files in ``directory`` (config,
    pid file and, when the path is short enough, stats socket), run in
    ``namespace`` (which holds the VIP; the caller makes both)."""

    def __init__(self, directory: str, namespace: str, binary: str = HAPROXY,
                 wait: float = 10.0):
        self.directory = os.path.abspath(directory)
        self.namespace = namespace
        self.binary = binary
        self.wait = wait
        self.config = os.path.join(self.directory, CONFIG)
        self.pid_file = os.path.join(self.directory, PID)
        self.socket = socket_path(self.directory)

    def pid(self) -> int | None:
        """The serving HAProxy's pid: the pid file's, if that process has this
        pid file on its command line (not a pid reused by something else)."""
        return process.pid_of(self.pid_file, self.pid_file)

    def processes(self) -> list[int]:
        """Every HAProxy of this load balancer: the serving one and any still
        draining connections after a reload."""
        found = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                argv = process.cmdline(int(entry))
                if argv and self.pid_file in argv and "-p" in argv:
                    found.append(int(entry))
        return found

    def apply(self, lb: LoadBalancerSyncData) -> Outcome:
        """HAProxy serving exactly ``lb`` (none for a tree that wants none): a
        new config is checked, then started or reloaded; the same config with
        HAProxy running is left alone. A config HAProxy refuses raises
        ``HaproxyError`` and leaves the running HAProxy and its file as they were."""
        if not should_run(lb):
            self.stop(remove=False)
            return "stopped"
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        os.makedirs(os.path.dirname(self.socket), mode=0o700, exist_ok=True)
        text = render(lb, self.socket, host_maxconn())
        try:
            with open(self.config, encoding="utf-8") as handle:
                previous: str | None = handle.read()
        except FileNotFoundError:
            previous = None
        pid = self.pid()
        if pid is not None and text == previous:
            return "unchanged"
        staged = self.config + ".new"
        with open(os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w",
                  encoding="utf-8") as handle:
            handle.write(text)
        try:
            check(staged, self.binary)
        except HaproxyError:
            os.unlink(staged)
            raise
        os.replace(staged, self.config)
        try:
            self._launch(pid)
        except HaproxyError:
            if pid is not None and previous is not None:
                self._restore(previous, pid)
            raise
        return "started" if pid is None else "reloaded"

    def _restore(self, previous: str, pid: int) -> None:
        """After a refused reload the old process still serves: its config and
        pid file say so again (the next ``apply`` then tries again)."""
        with open(self.config, "w", encoding="utf-8") as handle:
            handle.write(previous)
        if self.pid() is None and process.cmdline(pid) is not None:
            with open(self.pid_file, "w", encoding="ascii") as handle:
                handle.write(f"{pid}\n")

    def _launch(self, old: int | None) -> None:
        """Start HAProxy in the namespace; with ``old``, as its successor (it
        takes the listening sockets over and tells ``old`` to drain and go).
        Returns once the new process answers on the stats socket."""
        argv = ["ip", "netns", "exec", self.namespace, self.binary, "-D",
                "-p", self.pid_file, "-f", self.config]
        if old is not None:
            argv += ["-x", self.socket, "-sf", str(old)]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30,
                              stdin=subprocess.DEVNULL, cwd=self.directory)
        what = "start" if old is None else "reload"
        if done.returncode != 0:
            raise HaproxyError(f"HAProxy in {self.namespace} did not {what}: "
                               f"{_complaint(done.stderr + done.stdout)}")
        deadline = time.monotonic() + self.wait
        while time.monotonic() < deadline:
            pid = self.pid()
            if pid is not None and pid != old and self._answers(pid):
                LOG.info("HAProxy in %s: pid %d (%s)", self.namespace, pid,
                         "started" if old is None else f"took over from {old}")
                return
            time.sleep(0.02)
        raise HaproxyError(f"HAProxy in {self.namespace} did not {what}: no answer on its "
                           f"stats socket within {self.wait:g}s")

    def _answers(self, pid: int) -> bool:
        try:
            info = ask(self.socket, "show info", timeout=1)
        except OSError:
            return False
        return f"\nPid: {pid}\n" in f"\n{info}"

    def stop(self, remove: bool = True, wait: float = 5.0) -> None:
        """No HAProxy (draining ones neither); ``remove``: its files go too, and
        the directory if nothing else is left in it."""
        for pid in self.processes():
            process.terminate(pid, wait)
        names = [self.pid_file, self.socket]
        if remove:
            names += [self.config, self.config + ".new"]
        for path in names:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        if remove:
            try:
                os.rmdir(self.directory)
            except OSError:
                pass

    def rows(self, lb: LoadBalancerSyncData) -> list[dict[str, str]]:
        """``show stat`` of the running HAProxy (none when the tree wants none)."""
        if not should_run(lb):
            return []
        try:
            return parse_stat(ask(self.socket, "show stat"))
        except OSError as error:
            raise HaproxyError(f"HAProxy in {self.namespace} does not answer on its "
                               f"stats socket: {error}") from None

    def statuses(self, lb: LoadBalancerSyncData) -> StatusReport:
        """The tree's operating statuses as the running HAProxy has them."""
        return status_report(lb, self.rows(lb))

    def stats(self, lb: LoadBalancerSyncData) -> dict[str, Stats]:
        """Per-listener counters of the running HAProxy."""
        return listener_stats(lb, self.rows(lb))


def socket_path(directory: str) -> str:
    """The stats socket of ``directory``: in it, or by a hash of it under
    ``SHORT_SOCKETS`` when that path is too long for a UNIX socket."""
    return process.socket_path(directory, SOCKET, SHORT_SOCKETS)


def running(state_dir: str) -> list[str]:
    """The load balancers (sub-directories of ``state_dir`` named by their
    ids) with an HAProxy serving: after an agent restart, those no longer
    wanted are to be stopped."""
    try:
        entries = sorted(os.listdir(state_dir))
    except FileNotFoundError:
        return []
    return [entry for entry in entries if _NAME.match(entry)
            and process.pid_of(os.path.join(os.path.abspath(state_dir), entry, PID),
                               os.path.join(os.path.abspath(state_dir), entry, PID))]
