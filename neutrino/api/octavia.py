"""The load-balancer API's routes, bodies and checks (Octavia v2 at /v2/lbaas).

Octavia's bodies are not Neutron's (faults, status fields, 204 on delete,
``cascade``), so this is a small router of its own rather than the generic
ResourceController; it shares the server's authentication.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import select
from sqlalchemy.engine import Connection

from neutrino import exceptions as exc
from neutrino.api.request import Request, Response
from neutrino.context import Context
from neutrino.services.octavia import catalog, errors
from neutrino.services.octavia import policy as octavia_policy
from neutrino.services.octavia.catalog import FLAVORS, ZONES, Offer
from neutrino.services.octavia.plugin import (
    HM,
    L7P,
    L7R,
    LB,
    LI,
    ME,
    PO,
    QUOTAS,
    OctaviaPlugin,
)

#: the versions this API answers to at ``/`` (Octavia's list, to the one whose
#: features it has: the v2 API; later minor versions come with their features)
VERSIONS = (("v2.0", "2016-12-11T00:00:00Z"), ("v2.1", "2018-04-20T00:00:00Z"),
            ("v2.2", "2018-07-31T00:00:00Z"), ("v2.3", "2018-12-18T00:00:00Z"))
LISTENER_PROTOCOLS = ("HTTP", "HTTPS", "TCP", "TERMINATED_HTTPS", "UDP", "SCTP",
                      "PROMETHEUS")
POOL_PROTOCOLS = ("HTTP", "HTTPS", "PROXY", "PROXYV2", "TCP", "UDP", "SCTP")
ALGORITHMS = ("ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP", "SOURCE_IP_PORT")
PERSISTENCE = ("SOURCE_IP", "HTTP_COOKIE", "APP_COOKIE")
#: timeouts are milliseconds, up to 24 days as in Octavia
MAX_TIMEOUT = 24 * 24 * 60 * 60 * 1000


# --- attribute checks: each returns the value to store or raises InvalidInput ---------

Check = Callable[[str, Any], Any]


def _bad(name: str, value: Any, reason: str) -> errors.InvalidInput:
    return errors.InvalidInput(name=name, value=value, reason=reason)


def text(limit: int = 255) -> Check:
    def check(name: str, value: Any) -> Any:
        if value is None:
            return ""
        if not isinstance(value, str):
            raise _bad(name, value, f"Wrong type. Expected '{str}', got '{type(value)}'")
        if len(value) > limit:
            raise _bad(name, value, f"Value should have a maximum character requirement "
                                    f"of {limit}")
        return value
    return check


def boolean(name: str, value: Any) -> Any:
    if not isinstance(value, bool):
        raise _bad(name, value, f"Wrong type. Expected '{bool}', got '{type(value)}'")
    return value


def integer(low: int, high: int) -> Check:
    def check(name: str, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _bad(name, value, f"Wrong type. Expected '{int}', got '{type(value)}'")
        if value < low:
            raise _bad(name, value, f"Value should be greater or equal to {low}")
        if value > high:
            raise _bad(name, value, f"Value should be lower or equal to {high}")
        return value
    return check


def one_of(*choices: str) -> Check:
    def check(name: str, value: Any) -> Any:
        if value not in choices:
            raise _bad(name, value, f"Value should be one of: {', '.join(choices)}")
        return value
    return check


def an_uuid(name: str, value: Any) -> Any:
    try:
        uuid.UUID(str(value))
    except ValueError:
        raise _bad(name, value, "Value should be UUID format") from None
    if not isinstance(value, str):
        raise _bad(name, value, f"Wrong type. Expected '{str}', got '{type(value)}'")
    return value


def optional_uuid(name: str, value: Any) -> Any:
    return None if value is None else an_uuid(name, value)


def ip_address(name: str, value: Any) -> Any:
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise _bad(name, value, "Value should be IPv4 or IPv6 format") from None


def optional_ip(name: str, value: Any) -> Any:
    return None if value is None else ip_address(name, value)


def optional_port(name: str, value: Any) -> Any:
    return None if value is None else integer(1, 65535)(name, value)


def tags(name: str, value: Any) -> Any:
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise _bad(name, value, f"Wrong type. Expected '{list}', got '{type(value)}'")
    return list(dict.fromkeys(value))


def persistence(name: str, value: Any) -> Any:
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - {"type", "cookie_name",
                                                   "persistence_timeout",
                                                   "persistence_granularity"}:
        raise _bad(name, value, "Value should be a session persistence object")
    kind = one_of(*PERSISTENCE)("type", value.get("type"))
    cookie = value.get("cookie_name")
    if kind == "APP_COOKIE" and not cookie:
        raise errors.Validation(detail="Field cookie_name is required for APP_COOKIE "
                                       "session persistence type.")
    if kind != "APP_COOKIE" and cookie:
        raise errors.Validation(detail="Field cookie_name can only be specified when "
                                       "session persistence type is APP_COOKIE.")
    if cookie is not None and not re.fullmatch(r"[\x21-\x7e]+", str(cookie)):
        raise _bad("cookie_name", cookie, "Value should be a cookie name")
    return {"type": kind, "cookie_name": cookie, "persistence_timeout": None,
            "persistence_granularity": None}


@dataclass(frozen=True)
class Field:
    check: Check
    post: bool = True
    put: bool = True
    required: bool = False
    default: Any = None


def _fields(**fields: Field) -> dict[str, Field]:
    common = {"name": Field(text(), default=""), "description": Field(text(), default=""),
              "admin_state_up": Field(boolean, default=True),
              "tags": Field(tags, default=[])}
    return {**common, **fields}


LB_FIELDS = _fields(
    project_id=Field(text(), put=False), tenant_id=Field(text(), put=False),
    vip_subnet_id=Field(optional_uuid, put=False),
    vip_network_id=Field(optional_uuid, put=False),
    vip_port_id=Field(optional_uuid, put=False),
    vip_address=Field(optional_ip, put=False), provider=Field(text(64), put=False),
    availability_zone=Field(text(), put=False), flavor_id=Field(optional_uuid, put=False),
    vip_sg_ids=Field(lambda n, v: [an_uuid(n, i) for i in tags(n, v)], put=False))
TIMEOUT = integer(0, MAX_TIMEOUT)
LISTENER_FIELDS = _fields(
    project_id=Field(text(), put=False), tenant_id=Field(text(), put=False),
    loadbalancer_id=Field(an_uuid, put=False, required=True),
    protocol=Field(one_of(*LISTENER_PROTOCOLS), put=False, required=True),
    protocol_port=Field(integer(1, 65535), put=False, required=True),
    connection_limit=Field(integer(-1, 2**31 - 1), default=-1),
    default_pool_id=Field(optional_uuid),
    timeout_client_data=Field(TIMEOUT, default=50000),
    timeout_member_connect=Field(TIMEOUT, default=5000),
    timeout_member_data=Field(TIMEOUT, default=50000),
    timeout_tcp_inspect=Field(TIMEOUT, default=0),
    # certificates, in a secret store: asked for, never stored (none serves here)
    default_tls_container_ref=Field(text(), put=False),
    sni_container_refs=Field(tags, put=False))
POOL_FIELDS = _fields(
    project_id=Field(text(), put=False), tenant_id=Field(text(), put=False),
    loadbalancer_id=Field(optional_uuid, put=False),
    listener_id=Field(optional_uuid, put=False),
    protocol=Field(one_of(*POOL_PROTOCOLS), put=False, required=True),
    lb_algorithm=Field(one_of(*ALGORITHMS), required=True),
    session_persistence=Field(persistence))
MEMBER_FIELDS = {key: spec for key, spec in _fields(
    project_id=Field(text(), put=False), tenant_id=Field(text(), put=False),
    address=Field(ip_address, put=False, required=True),
    protocol_port=Field(integer(1, 65535), put=False, required=True),
    weight=Field(integer(0, 256), default=1), backup=Field(boolean, default=False),
    subnet_id=Field(optional_uuid, put=False), monitor_address=Field(optional_ip),
    monitor_port=Field(optional_port)).items() if key != "description"}  # none in Octavia
HM_TYPES = ("HTTP", "HTTPS", "PING", "TCP", "TLS-HELLO", "UDP-CONNECT", "SCTP")
HTTP_METHODS = ("CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT",
                "TRACE")
RETRIES = integer(1, 10)


def pattern(regex: str, limit: int = 255) -> Check:
    def check(name: str, value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, str) or len(value) > limit or \
                not re.fullmatch(regex, value):
            raise _bad(name, value, f"Value should match the pattern {regex}")
        return value
    return check


def http_version(name: str, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, bool) or value not in (1.0, 1.1):
        raise _bad(name, value, "Value should be one of: 1.0, 1.1")
    return str(float(value))


HM_FIELDS = {
    "name": Field(text(), default=""), "admin_state_up": Field(boolean, default=True),
    "tags": Field(tags, default=[]),
    "project_id": Field(text(), put=False), "tenant_id": Field(text(), put=False),
    "pool_id": Field(an_uuid, put=False, required=True),
    "type": Field(one_of(*HM_TYPES), put=False, required=True),
    "delay": Field(integer(0, 2**31 - 1), required=True),
    "timeout": Field(integer(0, 2**31 - 1), required=True),
    "max_retries": Field(RETRIES, required=True),
    "max_retries_down": Field(RETRIES, default=3),
    "http_method": Field(lambda n, v: None if v is None else one_of(*HTTP_METHODS)(n, v)),
    "url_path": Field(pattern(r"/[\x21-\x7e]*", 2048)),
    "expected_codes": Field(pattern(r"^(\d{3}(\s*,\s*\d{3})*)$|^(\d{3}-\d{3})$", 64)),
    "http_version": Field(http_version),
    "domain_name": Field(pattern(r"(?=.{1,255}$)[A-Za-z0-9]([A-Za-z0-9-]{0,62}"
                                 r"[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}"
                                 r"[A-Za-z0-9])?)*")),
}
HTTP_ONLY = ("http_method", "url_path", "expected_codes")


def hm_suits(data: dict[str, Any]) -> Callable[[Any], None]:
    """What Octavia checks of a monitor against its pool (or, on update, its
    stored self): the HTTP options only for HTTP(S) monitors, the UDP and SCTP
    types only on such pools."""

    def check(row: Any) -> None:
        kind = data.get("type") or row.type
        if kind not in ("HTTP", "HTTPS"):
            for name in HTTP_ONLY:
                if data.get(name):
                    raise errors.InvalidOption(value=name,
                                               option=f"health monitors of type {kind}")
        if "type" in data:  # a create: row is the pool
            if row.protocol in ("UDP", "SCTP"):
                if kind not in ("UDP-CONNECT", "SCTP", "TCP", "HTTP"):
                    raise errors.Validation(detail=(
                        f"The associated pool protocol is {row.protocol}, so only a "
                        "UDP-CONNECT/SCTP/TCP/HTTP health monitor is supported."))
            elif kind in ("UDP-CONNECT", "SCTP"):
                raise errors.Validation(detail=f"The {kind} type is only supported for "
                                               "pools of type UDP/SCTP.")
            if kind in ("HTTP", "HTTPS"):
                data["http_method"] = data.get("http_method") or "GET"
                data["url_path"] = data.get("url_path") or "/"
                data["expected_codes"] = data.get("expected_codes") or "200"
        version = data.get("http_version", getattr(row, "http_version", None))
        if data.get("domain_name") and not version:
            raise errors.Validation(detail="'http_version' must be specified when "
                                           "'domain_name' is provided.")
        if data.get("domain_name") and version and float(version) < 1.1:
            raise errors.InvalidOption(
                value=f"http_version {float(version)}",
                option="health monitors HTTP 1.1 domain name health check")

    return check


L7_ACTIONS = ("REJECT", "REDIRECT_TO_URL", "REDIRECT_TO_POOL", "REDIRECT_PREFIX")
L7_RULE_TYPES = ("COOKIE", "FILE_TYPE", "HEADER", "HOST_NAME", "PATH", "SSL_CONN_HAS_CERT",
                 "SSL_VERIFY_RESULT", "SSL_DN_FIELD")
L7_COMPARE_TYPES = ("REGEX", "STARTS_WITH", "ENDS_WITH", "CONTAINS", "EQUAL_TO")
URL = pattern(r"https?://[\x21-\x7e]+", 2048)


def redirect_code(name: str, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, bool) or value not in (301, 302, 303, 307, 308):
        raise _bad(name, value, "Value should be one of: 301, 302, 303, 307, 308")
    return value


def printable(limit: int = 255) -> Check:
    """Text without control characters (a rule's key or value)."""
    def check(name: str, value: Any) -> Any:
        value = text(limit)(name, value)
        if any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise _bad(name, value, "Value should hold no control characters")
        return value
    return check


L7POLICY_FIELDS = _fields(
    project_id=Field(text(), put=False), tenant_id=Field(text(), put=False),
    listener_id=Field(an_uuid, put=False, required=True),
    action=Field(one_of(*L7_ACTIONS), required=True),
    position=Field(integer(1, 2**31 - 1)),
    redirect_url=Field(URL), redirect_prefix=Field(URL),
    redirect_pool_id=Field(optional_uuid), redirect_http_code=Field(redirect_code))
L7RULE_FIELDS = {
    "admin_state_up": Field(boolean, default=True), "tags": Field(tags, default=[]),
    "project_id": Field(text(), put=False), "tenant_id": Field(text(), put=False),
    "type": Field(one_of(*L7_RULE_TYPES), required=True),
    "compare_type": Field(one_of(*L7_COMPARE_TYPES), required=True),
    "key": Field(lambda n, v: None if v is None else printable()(n, v)),
    "value": Field(printable(), required=True),
    "invert": Field(boolean, default=False),
}


def rule_suits(data: dict[str, Any]) -> Callable[[Any], None]:
    """What Octavia checks of a rule (on update, with its stored self): a key
    for HEADER, COOKIE and SSL_DN_FIELD rules and none for others, FILE_TYPE
    only by EQUAL_TO or REGEX, and a REGEX that compiles."""

    def check(row: Any) -> None:
        merged = {"type": getattr(row, "type", None), "compare_type":
                  getattr(row, "compare_type", None), "key": getattr(row, "key", None),
                  "value": getattr(row, "value", None), **data}
        keyed = merged["type"] in ("HEADER", "COOKIE", "SSL_DN_FIELD")
        if keyed and not merged["key"]:
            raise errors.Validation(detail=f"A key is required for {merged['type']} rules.")
        if not keyed and merged["key"]:
            raise errors.Validation(detail=f"{merged['type']} rules take no key.")
        if merged["type"] == "FILE_TYPE" and merged["compare_type"] not in ("EQUAL_TO",
                                                                            "REGEX"):
            raise errors.Validation(detail="FILE_TYPE rules compare by EQUAL_TO or REGEX "
                                           "only.")
        if merged["compare_type"] == "REGEX":
            try:
                re.compile(merged["value"])
            except re.error as error:
                raise errors.Validation(detail=f"Invalid regex: {error}") from None

    return check


#: the older names Octavia still answers and accepts beside its quotas' own
QUOTA_ALIASES = {"loadbalancer": "load_balancer", "healthmonitor": "health_monitor"}
MAX_QUOTA = 2_000_000_000


def quota_view(quotas: dict[str, int]) -> dict[str, int]:
    return {**quotas, **{old: quotas[new] for old, new in QUOTA_ALIASES.items()}}


def given_text(limit: int = 255) -> Check:
    """A text that may not be null (Octavia's InvalidOption when it is)."""
    def check(name: str, value: Any) -> Any:
        if value is None:
            raise errors.InvalidOption(value=None, option=name)
        return text(limit)(name, value)
    return check


@dataclass(frozen=True)
class Catalogue:
    """One of the flavor and availability zone collections, as the API shows it."""

    path: str  # under /v2/lbaas
    key: str  # a body's object
    plural: str
    links: str
    offer: Offer
    profile: bool  # a profile (an admin's alone), or what is offered
    fields: dict[str, Field]


def _profile_fields(offer: Offer) -> dict[str, Field]:
    return {"name": Field(given_text(), required=True),
            "provider_name": Field(given_text(), required=True),
            offer.data: Field(given_text(4096), required=True)}


def _offered_fields(offer: Offer) -> dict[str, Field]:
    """An availability zone's name is its key: set once."""
    return {"name": Field(given_text(), required=True, put=offer.key == "id"),
            "description": Field(text()), "enabled": Field(boolean, default=True),
            offer.reference: Field(an_uuid, required=True, put=False)}


CATALOGUES = (
    Catalogue("flavorprofiles", "flavorprofile", "flavorprofiles", "flavorprofile_links",
              FLAVORS, True, _profile_fields(FLAVORS)),
    Catalogue("flavors", "flavor", "flavors", "flavors_links", FLAVORS, False,
              _offered_fields(FLAVORS)),
    Catalogue("availabilityzoneprofiles", "availability_zone_profile",
              "availability_zone_profiles", "availability_zone_profile_links", ZONES, True,
              _profile_fields(ZONES)),
    Catalogue("availabilityzones", "availability_zone", "availability_zones",
              "availability_zones_links", ZONES, False, _offered_fields(ZONES)),
)

#: what is accepted in a body but not stored as a column
NOT_STORED = ("project_id", "tenant_id")


def parse_body(req: Request, key: str, fields: dict[str, Field], creating: bool
               ) -> dict[str, Any]:
    """The ``key`` object of the body checked against ``fields``: on create with
    defaults filled in, on update only what it changes."""
    body = req.json()
    obj = body.get(key)
    if not isinstance(obj, dict):
        raise errors.BadRequest(f"Missing argument: \"{key}\"")
    unknown = sorted(name for name in obj
                     if name not in fields or not (fields[name].post if creating
                                                   else fields[name].put))
    if unknown:
        raise _bad(key, obj, f"Unknown attribute for argument {key}: {', '.join(unknown)}")
    out: dict[str, Any] = {}
    for name, spec in fields.items():
        if name in obj:
            out[name] = spec.check(name, obj[name])
        elif creating and spec.required:
            raise _bad(name, None, "Mandatory field missing.")
        elif creating and spec.post and name not in NOT_STORED:
            out[name] = spec.default
    return out


# --- the router -------------------------------------------------------------------------

Handler = Callable[..., Response]


class OctaviaRouter:
    def __init__(self, plugin: OctaviaPlugin, max_limit: int | None = None):
        self.plugin = plugin
        self.max_limit = max_limit
        patterns: list[tuple[str, str, Handler]] = [
            ("GET", r"", self.versions),
            ("GET", r"/v2(?:\.0)?(?:/lbaas)?", self.v2),
            ("GET", r"/v2(?:\.0)?/lbaas/providers", self.list_providers),
            ("GET", r"/v2(?:\.0)?/lbaas/quotas", self.list_quotas),
            ("GET", r"/v2(?:\.0)?/lbaas/quotas/defaults", self.quota_defaults),
            ("GET", r"/v2(?:\.0)?/lbaas/quotas/([^/]+)", self.show_quotas),
            ("PUT", r"/v2(?:\.0)?/lbaas/quotas/([^/]+)", self.update_quotas),
            ("DELETE", r"/v2(?:\.0)?/lbaas/quotas/([^/]+)", self.reset_quotas),
            ("GET", r"/v2(?:\.0)?/lbaas/loadbalancers", self.list_lbs),
            ("POST", r"/v2(?:\.0)?/lbaas/loadbalancers", self.create_lb),
            ("GET", r"/v2(?:\.0)?/lbaas/loadbalancers/([^/]+)", self.show_lb),
            ("PUT", r"/v2(?:\.0)?/lbaas/loadbalancers/([^/]+)", self.update_lb),
            ("DELETE", r"/v2(?:\.0)?/lbaas/loadbalancers/([^/]+)", self.delete_lb),
            ("GET", r"/v2(?:\.0)?/lbaas/loadbalancers/([^/]+)/status", self.lb_status),
            ("PUT", r"/v2(?:\.0)?/lbaas/loadbalancers/([^/]+)/failover", self.failover_lb),
            ("GET", r"/v2(?:\.0)?/lbaas/loadbalancers/([^/]+)/stats", self.lb_stats),
            ("GET", r"/v2(?:\.0)?/lbaas/listeners/([^/]+)/stats", self.listener_stats),
            ("GET", r"/v2(?:\.0)?/lbaas/listeners", self.list_listeners),
            ("POST", r"/v2(?:\.0)?/lbaas/listeners", self.create_listener),
            ("GET", r"/v2(?:\.0)?/lbaas/listeners/([^/]+)", self.show_listener),
            ("PUT", r"/v2(?:\.0)?/lbaas/listeners/([^/]+)", self.update_listener),
            ("DELETE", r"/v2(?:\.0)?/lbaas/listeners/([^/]+)", self.delete_listener),
            ("GET", r"/v2(?:\.0)?/lbaas/pools", self.list_pools),
            ("POST", r"/v2(?:\.0)?/lbaas/pools", self.create_pool),
            ("GET", r"/v2(?:\.0)?/lbaas/pools/([^/]+)", self.show_pool),
            ("PUT", r"/v2(?:\.0)?/lbaas/pools/([^/]+)", self.update_pool),
            ("DELETE", r"/v2(?:\.0)?/lbaas/pools/([^/]+)", self.delete_pool),
            ("GET", r"/v2(?:\.0)?/lbaas/healthmonitors", self.list_hms),
            ("POST", r"/v2(?:\.0)?/lbaas/healthmonitors", self.create_hm),
            ("GET", r"/v2(?:\.0)?/lbaas/healthmonitors/([^/]+)", self.show_hm),
            ("PUT", r"/v2(?:\.0)?/lbaas/healthmonitors/([^/]+)", self.update_hm),
            ("DELETE", r"/v2(?:\.0)?/lbaas/healthmonitors/([^/]+)", self.delete_hm),
            ("GET", r"/v2(?:\.0)?/lbaas/l7policies", self.list_l7policies),
            ("POST", r"/v2(?:\.0)?/lbaas/l7policies", self.create_l7policy),
            ("GET", r"/v2(?:\.0)?/lbaas/l7policies/([^/]+)", self.show_l7policy),
            ("PUT", r"/v2(?:\.0)?/lbaas/l7policies/([^/]+)", self.update_l7policy),
            ("DELETE", r"/v2(?:\.0)?/lbaas/l7policies/([^/]+)", self.delete_l7policy),
            ("GET", r"/v2(?:\.0)?/lbaas/l7policies/([^/]+)/rules", self.list_l7rules),
            ("POST", r"/v2(?:\.0)?/lbaas/l7policies/([^/]+)/rules", self.create_l7rule),
            ("GET", r"/v2(?:\.0)?/lbaas/l7policies/([^/]+)/rules/([^/]+)", self.show_l7rule),
            ("PUT", r"/v2(?:\.0)?/lbaas/l7policies/([^/]+)/rules/([^/]+)",
             self.update_l7rule),
            ("DELETE", r"/v2(?:\.0)?/lbaas/l7policies/([^/]+)/rules/([^/]+)",
             self.delete_l7rule),
            ("GET", r"/v2(?:\.0)?/lbaas/pools/([^/]+)/members", self.list_members),
            ("POST", r"/v2(?:\.0)?/lbaas/pools/([^/]+)/members", self.create_member),
            ("PUT", r"/v2(?:\.0)?/lbaas/pools/([^/]+)/members", self.batch_members),
            ("GET", r"/v2(?:\.0)?/lbaas/pools/([^/]+)/members/([^/]+)", self.show_member),
            ("PUT", r"/v2(?:\.0)?/lbaas/pools/([^/]+)/members/([^/]+)", self.update_member),
            ("DELETE", r"/v2(?:\.0)?/lbaas/pools/([^/]+)/members/([^/]+)",
             self.delete_member),
        ]
        for kind in ("flavor", "availability_zone"):
            patterns.append(("GET", rf"/v2(?:\.0)?/lbaas/providers/([^/]+)/{kind}_capabilities",
                             functools.partial(self.capabilities, kind)))
        for catalogue in CATALOGUES:
            base = rf"/v2(?:\.0)?/lbaas/{catalogue.path}"
            patterns += [
                ("GET", base, functools.partial(self.list_catalogue, catalogue)),
                ("POST", base, functools.partial(self.create_in_catalogue, catalogue)),
                ("GET", base + r"/([^/]+)", functools.partial(self.show_in_catalogue, catalogue)),
                ("PUT", base + r"/([^/]+)",
                 functools.partial(self.update_in_catalogue, catalogue)),
                ("DELETE", base + r"/([^/]+)",
                 functools.partial(self.delete_from_catalogue, catalogue))]
        self.routes = [(method, re.compile(pattern + "/?"), handler)
                       for method, pattern, handler in patterns]

    def dispatch(self, req: Request) -> Response:
        try:
            allowed = []
            for method, pattern, handler in self.routes:
                match = pattern.fullmatch(req.path)
                if match is None:
                    continue
                if method == req.method:
                    return handler(req, *match.groups())
                allowed.append(method)
            if allowed:
                return Response(405, errors.fault(405, "The method is not allowed for the "
                                                       "requested URL."),
                                {"allow": ", ".join(allowed)})
            return Response(404, errors.fault(404, "The resource could not be found."))
        except errors.OctaviaError as error:
            return Response(error.status, errors.fault(error.status, error.msg))
        except exc.NeutronException as error:  # from the Networking side (the VIP port)
            return Response(error.status, errors.fault(error.status, error.msg))

    # --- versions and providers ---------------------------------------------------------

    def versions(self, req: Request) -> Response:
        href = req.url("/v2")
        versions = [{"id": vid, "status": "SUPPORTED", "updated": when,
                     "links": [{"href": href, "rel": "self"}]} for vid, when in VERSIONS]
        versions[-1]["status"] = "CURRENT"
        return Response(200, {"versions": versions})

    def v2(self, req: Request) -> Response:
        return Response(200, "v2")  # Octavia's answer at its version's root

    def list_providers(self, req: Request) -> Response:
        octavia_policy.check_read(req.context, req.context.project_id)
        return Response(200, {"providers": [
            {"name": name, "description": text}
            for name, text in self.plugin.enabled.items()]})

    # --- collections ----------------------------------------------------------------------

    def _list(self, req: Request, table: Any, collection: str,
              view: Callable[[Connection, Any], dict[str, Any]],
              scope: list | None = None, project_check: bool = True,
              key: str = "id", links: str | None = None) -> Response:
        """A collection's page; ``key``: the rows' key, which marks a page (a
        project's object's id; else the rows are everyone's, in key order)."""
        ctx = req.context
        query = [(k, v) for k, v in req.query]
        filters = [(k, v) for k, v in query
                   if k not in ("fields", "limit", "marker", "sort", "page_reverse")]
        if project_check:
            if not octavia_policy.can_read(ctx, ctx.project_id) and \
                    not octavia_policy.global_observer(ctx):
                raise errors.Forbidden()
        limit = None
        for name, value in query:
            if name == "limit":
                try:
                    limit = int(value)
                except ValueError:
                    raise errors.BadRequest("Invalid limit") from None
        if self.max_limit and (limit is None or limit > self.max_limit):
            limit = self.max_limit
        marker = next((v for k, v in query if k == "marker"), None)

        def work(conn: Connection) -> tuple[list[dict[str, Any]], bool]:
            stmt = select(table).where(*(scope or []))
            owned = "project_id" in table.c
            if owned and not octavia_policy.global_observer(ctx):
                stmt = stmt.where(table.c.project_id == ctx.project_id)
            for given, value in filters:
                name = "project_id" if given == "tenant_id" else given
                column = table.c.get(name)
                if column is None or name == "tags":
                    continue  # Octavia ignores what it cannot filter on
                if isinstance(column.type.python_type, type) and \
                        column.type.python_type is bool:
                    stmt = stmt.where(column == (value.lower() == "true"))
                elif column.type.python_type is int:
                    try:
                        stmt = stmt.where(column == int(value))
                    except ValueError:
                        raise errors.BadRequest(
                            "One or more arguments are either duplicate or invalid") from None
                else:
                    stmt = stmt.where(column == value)
            stmt = stmt.order_by(*(table.c.created_at, table.c.id) if owned else (table.c[key],))
            rows = list(conn.execute(stmt))
            if marker is not None:
                ids = [getattr(r, key) for r in rows]
                if marker not in ids:
                    raise errors.NotFound(resource="Marker", id=marker)
                rows = rows[ids.index(marker) + 1:]
            more = limit is not None and len(rows) > limit
            if limit is not None:
                rows = rows[:limit]
            return [view(conn, r) for r in rows], more

        items, more = self.plugin.read(work)
        fields = req.fields()
        if fields:
            items = [{k: v for k, v in item.items() if k in fields} for item in items]
        found = []
        if more and items:
            params = [(k, v) for k, v in query if k != "marker"] + [
                ("marker", items[-1].get(key, ""))]
            found.append({"href": req.url(req.path, params), "rel": "next"})
        return Response(200, {collection: items, links or f"{collection}_links": found})

    def _show(self, req: Request, table: Any, resource: str, key: str, row_id: str,
              view: Callable[[Connection, Any], dict[str, Any]]) -> Response:
        def work(conn: Connection) -> dict[str, Any]:
            row = self.plugin.get_row(conn, table, resource, row_id)
            octavia_policy.check_read(req.context, row.project_id)
            return view(conn, row)

        item = self.plugin.read(work)
        fields = req.fields()
        if fields:
            item = {k: v for k, v in item.items() if k in fields}
        return Response(200, {key: item})

    def _owner_of(self, table: Any, resource: str, row_id: str) -> str | None:
        """The project of the object; a 404 if there is none."""
        return self.plugin.read(
            lambda conn: self.plugin.get_row(conn, table, resource, row_id).project_id)

    def _project_for_create(self, ctx: Context, data: dict[str, Any]) -> str:
        project = data.pop("project_id", None) or data.pop("tenant_id", None)
        data.pop("tenant_id", None)
        project = project or ctx.project_id
        if not project:
            raise errors.Validation(detail="Missing project ID")
        octavia_policy.check_write(ctx, project)
        return project

    # --- quotas ---------------------------------------------------------------------------

    def list_quotas(self, req: Request) -> Response:
        ctx = req.context
        if not octavia_policy.can_read(ctx, ctx.project_id):
            raise errors.Forbidden()
        only = None if octavia_policy.global_observer(ctx) else ctx.project_id

        def work(conn: Connection) -> list[dict[str, Any]]:
            return [{"project_id": project, **quota_view(self.plugin.quotas_of(conn, project))}
                    for project in self.plugin.quota_projects(conn, only)]

        return Response(200, {"quotas": self.plugin.read(work)})

    def quota_defaults(self, req: Request) -> Response:
        if not octavia_policy.can_read(req.context, req.context.project_id):
            raise errors.Forbidden()
        return Response(200, {"quota": quota_view(self.plugin.quota_defaults())})

    def show_quotas(self, req: Request, project_id: str) -> Response:
        octavia_policy.check_read(req.context, project_id)
        quotas = self.plugin.read(lambda conn: self.plugin.quotas_of(conn, project_id))
        return Response(200, {"quota": quota_view(quotas)})

    def update_quotas(self, req: Request, project_id: str) -> Response:
        if not octavia_policy.is_admin(req.context):
            raise errors.Forbidden()
        body = req.json().get("quota")
        if not isinstance(body, dict):
            raise errors.BadRequest('Missing argument: "quota"')
        values = {}
        for key, value in body.items():
            name = QUOTA_ALIASES.get(key, key)
            if name not in QUOTAS:
                raise _bad("quota", body, f"Unknown attribute for argument quota: {key}")
            values[name] = None if value is None else integer(-1, MAX_QUOTA)(key, value)
        return Response(202, {"quota": quota_view(self.plugin.set_quotas(project_id, values))})

    def reset_quotas(self, req: Request, project_id: str) -> Response:
        if not octavia_policy.is_admin(req.context):
            raise errors.Forbidden()
        self.plugin.reset_quotas(project_id)
        return Response(202)

    # --- load balancers -------------------------------------------------------------------

    def list_lbs(self, req: Request) -> Response:
        return self._list(req, LB, "loadbalancers", self.plugin.lb_view)

    def show_lb(self, req: Request, lb_id: str) -> Response:
        return self._show(req, LB, "Load Balancer", "loadbalancer", lb_id, self.plugin.lb_view)

    def lb_status(self, req: Request, lb_id: str) -> Response:
        def work(conn: Connection) -> dict[str, Any]:
            row = self.plugin.get_row(conn, LB, "Load Balancer", lb_id)
            octavia_policy.check_read(req.context, row.project_id)
            return self.plugin.status_tree(conn, row)

        return Response(200, {"statuses": self.plugin.read(work)})

    def lb_stats(self, req: Request, lb_id: str) -> Response:
        def work(conn: Connection) -> dict[str, Any]:
            row = self.plugin.get_row(conn, LB, "Load Balancer", lb_id)
            octavia_policy.check_read(req.context, row.project_id)
            return self.plugin.stats(conn, select(LI.c.id).where(LI.c.loadbalancer_id == lb_id))

        return Response(200, {"stats": self.plugin.read(work)})

    def listener_stats(self, req: Request, listener_id: str) -> Response:
        def work(conn: Connection) -> dict[str, Any]:
            row = self.plugin.get_row(conn, LI, "Listener", listener_id)
            octavia_policy.check_read(req.context, row.project_id)
            return self.plugin.stats(conn, [listener_id])

        return Response(200, {"stats": self.plugin.read(work)})

    def create_lb(self, req: Request) -> Response:
        ctx = req.context
        data = parse_body(req, "loadbalancer", LB_FIELDS, creating=True)
        data["project_id"] = self._project_for_create(ctx, data)
        if not any(data.get(f"vip_{what}_id") for what in ("port", "network", "subnet")):
            raise errors.BadRequest("Validation failure: VIP must contain one of: "
                                    "vip_port_id, vip_network_id, vip_subnet_id.")
        return Response(201, {"loadbalancer": self.plugin.create_lb(ctx, data)})

    def update_lb(self, req: Request, lb_id: str) -> Response:
        data = parse_body(req, "loadbalancer", LB_FIELDS, creating=False)
        octavia_policy.check_write(req.context, self._owner_of(LB, "Load Balancer", lb_id))
        return Response(200, {"loadbalancer": self.plugin.update_lb(lb_id, data)})

    def failover_lb(self, req: Request, lb_id: str) -> Response:
        self._owner_of(LB, "Load Balancer", lb_id)  # a 404 first
        if not octavia_policy.is_admin(req.context):
            raise errors.Forbidden()  # Octavia's default: an admin's action
        self.plugin.failover_lb(lb_id)
        return Response(202)

    def delete_lb(self, req: Request, lb_id: str) -> Response:
        octavia_policy.check_write(req.context, self._owner_of(LB, "Load Balancer", lb_id))
        cascade = any(k == "cascade" and v.lower() in ("true", "1", "yes")
                      for k, v in req.query)
        self.plugin.delete_lb(lb_id, cascade)
        return Response(204)

    # --- listeners ------------------------------------------------------------------------

    def list_listeners(self, req: Request) -> Response:
        return self._list(req, LI, "listeners", self.plugin.listener_view)

    def show_listener(self, req: Request, listener_id: str) -> Response:
        return self._show(req, LI, "Listener", "listener", listener_id,
                          self.plugin.listener_view)

    def _parent_lb(self, ctx: Context, lb_id: str) -> None:
        """The load balancer a create names: there (a 400 if not, as Octavia) and
        the caller's to change."""
        try:
            project = self._owner_of(LB, "Load Balancer", lb_id)
        except errors.NotFound:
            raise errors.BadRequest(f"Load Balancer {lb_id} not found.") from None
        octavia_policy.check_write(ctx, project)

    def create_listener(self, req: Request) -> Response:
        data = parse_body(req, "listener", LISTENER_FIELDS, creating=True)
        for key in NOT_STORED:
            data.pop(key, None)
        self._parent_lb(req.context, data["loadbalancer_id"])
        refs = [ref for ref in (data.pop("default_tls_container_ref", None),
                                *(data.pop("sni_container_refs", None) or [])) if ref]
        if data["protocol"] == "TERMINATED_HTTPS" and not refs:
            raise errors.Validation(detail="An SNI or default certificate container reference "
                                           "must be provided for TERMINATED_HTTPS listeners.")
        if refs and data["protocol"] != "TERMINATED_HTTPS":
            raise errors.Validation(detail="Certificate container references are only "
                                           "allowed on TERMINATED_HTTPS protocol listeners.")
        if refs:  # Octavia without a secret store it can read
            raise errors.BadRequest(f"Could not retrieve certificate: {refs[0]} (no secret "
                                    "store serves this cloud)")
        if data["protocol"] == "PROMETHEUS":
            raise errors.Validation(detail="PROMETHEUS listeners are not supported yet.")
        return Response(201, {"listener": self.plugin.create_listener(data)})

    def update_listener(self, req: Request, listener_id: str) -> Response:
        data = parse_body(req, "listener", LISTENER_FIELDS, creating=False)
        octavia_policy.check_write(req.context, self._owner_of(LI, "Listener", listener_id))
        return Response(200, {"listener": self.plugin.update_listener(listener_id, data)})

    def delete_listener(self, req: Request, listener_id: str) -> Response:
        octavia_policy.check_write(req.context, self._owner_of(LI, "Listener", listener_id))
        self.plugin.delete_listener(listener_id)
        return Response(204)

    # --- pools ----------------------------------------------------------------------------

    def list_pools(self, req: Request) -> Response:
        return self._list(req, PO, "pools", self.plugin.pool_view)

    def show_pool(self, req: Request, pool_id: str) -> Response:
        return self._show(req, PO, "Pool", "pool", pool_id, self.plugin.pool_view)

    def create_pool(self, req: Request) -> Response:
        data = parse_body(req, "pool", POOL_FIELDS, creating=True)
        for key in NOT_STORED:
            data.pop(key, None)
        if data.get("listener_id"):
            try:
                project = self._owner_of(LI, "Listener", data["listener_id"])
            except errors.NotFound:
                raise errors.BadRequest(f"Listener {data['listener_id']} not found.") from None
            octavia_policy.check_write(req.context, project)
        elif data.get("loadbalancer_id"):
            self._parent_lb(req.context, data["loadbalancer_id"])
        else:
            raise errors.Validation(detail="loadbalancer_id or listener_id must be specified.")
        return Response(201, {"pool": self.plugin.create_pool(data)})

    def update_pool(self, req: Request, pool_id: str) -> Response:
        data = parse_body(req, "pool", POOL_FIELDS, creating=False)
        octavia_policy.check_write(req.context, self._owner_of(PO, "Pool", pool_id))
        return Response(200, {"pool": self.plugin.update_pool(pool_id, data)})

    def delete_pool(self, req: Request, pool_id: str) -> Response:
        octavia_policy.check_write(req.context, self._owner_of(PO, "Pool", pool_id))
        self.plugin.delete_pool(pool_id)
        return Response(204)

    # --- health monitors ----------------------------------------------------------------

    def list_hms(self, req: Request) -> Response:
        return self._list(req, HM, "healthmonitors", self.plugin.hm_view)

    def show_hm(self, req: Request, hm_id: str) -> Response:
        return self._show(req, HM, "Health Monitor", "healthmonitor", hm_id,
                          self.plugin.hm_view)

    def create_hm(self, req: Request) -> Response:
        data = parse_body(req, "healthmonitor", HM_FIELDS, creating=True)
        for key in NOT_STORED:
            data.pop(key, None)
        try:
            project = self._owner_of(PO, "Pool", data["pool_id"])
        except errors.NotFound:
            raise errors.BadRequest(f"Pool {data['pool_id']} not found.") from None
        octavia_policy.check_write(req.context, project)
        return Response(201, {"healthmonitor": self.plugin.create_hm(data, hm_suits(data))})

    def update_hm(self, req: Request, hm_id: str) -> Response:
        data = parse_body(req, "healthmonitor", HM_FIELDS, creating=False)
        octavia_policy.check_write(req.context, self._owner_of(HM, "Health Monitor", hm_id))
        return Response(200, {"healthmonitor": self.plugin.update_hm(hm_id, data,
                                                                     hm_suits(data))})

    def delete_hm(self, req: Request, hm_id: str) -> Response:
        octavia_policy.check_write(req.context, self._owner_of(HM, "Health Monitor", hm_id))
        self.plugin.delete_hm(hm_id)
        return Response(204)

    # --- members --------------------------------------------------------------------------

    # --- L7 policies and rules -------------------------------------------------------------

    def list_l7policies(self, req: Request) -> Response:
        return self._list(req, L7P, "l7policies", self.plugin.l7policy_view)

    def show_l7policy(self, req: Request, policy_id: str) -> Response:
        return self._show(req, L7P, "L7 Policy", "l7policy", policy_id,
                          self.plugin.l7policy_view)

    def create_l7policy(self, req: Request) -> Response:
        data = parse_body(req, "l7policy", L7POLICY_FIELDS, creating=True)
        for key in NOT_STORED:
            data.pop(key, None)
        try:
            project = self._owner_of(LI, "Listener", data["listener_id"])
        except errors.NotFound:
            raise errors.BadRequest(f"Listener {data['listener_id']} not found.") from None
        octavia_policy.check_write(req.context, project)
        return Response(201, {"l7policy": self.plugin.create_l7policy(data)})

    def update_l7policy(self, req: Request, policy_id: str) -> Response:
        data = parse_body(req, "l7policy", L7POLICY_FIELDS, creating=False)
        octavia_policy.check_write(req.context, self._owner_of(L7P, "L7 Policy", policy_id))
        return Response(200, {"l7policy": self.plugin.update_l7policy(policy_id, data)})

    def delete_l7policy(self, req: Request, policy_id: str) -> Response:
        octavia_policy.check_write(req.context, self._owner_of(L7P, "L7 Policy", policy_id))
        self.plugin.delete_l7policy(policy_id)
        return Response(204)

    def _policy_project(self, req: Request, policy_id: str, write: bool) -> None:
        project = self._owner_of(L7P, "L7 Policy", policy_id)
        (octavia_policy.check_write if write else octavia_policy.check_read)(
            req.context, project)

    def list_l7rules(self, req: Request, policy_id: str) -> Response:
        self._policy_project(req, policy_id, write=False)
        return self._list(req, L7R, "rules", self.plugin.l7rule_view,
                          scope=[L7R.c.l7policy_id == policy_id])

    def show_l7rule(self, req: Request, policy_id: str, rule_id: str) -> Response:
        self._policy_project(req, policy_id, write=False)
        item = self.plugin.read(lambda conn: self.plugin.l7rule_view(
            conn, self.plugin.l7rule_row(conn, policy_id, rule_id)))
        fields = req.fields()
        if fields:
            item = {k: v for k, v in item.items() if k in fields}
        return Response(200, {"rule": item})

    def create_l7rule(self, req: Request, policy_id: str) -> Response:
        data = parse_body(req, "rule", L7RULE_FIELDS, creating=True)
        for key in NOT_STORED:
            data.pop(key, None)
        self._policy_project(req, policy_id, write=True)
        rule_suits(data)(None)
        return Response(201, {"rule": self.plugin.create_l7rule(policy_id, data)})

    def update_l7rule(self, req: Request, policy_id: str, rule_id: str) -> Response:
        data = parse_body(req, "rule", L7RULE_FIELDS, creating=False)
        self._policy_project(req, policy_id, write=True)
        return Response(200, {"rule": self.plugin.update_l7rule(policy_id, rule_id, data,
                                                                rule_suits(data))})

    def delete_l7rule(self, req: Request, policy_id: str, rule_id: str) -> Response:
        self._policy_project(req, policy_id, write=True)
        self.plugin.delete_l7rule(policy_id, rule_id)
        return Response(204)

    def _pool_project(self, req: Request, pool_id: str, write: bool) -> None:
        project = self._owner_of(PO, "Pool", pool_id)
        (octavia_policy.check_write if write else octavia_policy.check_read)(
            req.context, project)

    def list_members(self, req: Request, pool_id: str) -> Response:
        self._pool_project(req, pool_id, write=False)
        return self._list(req, ME, "members", lambda _conn, row: self.plugin.member_view(row),
                          scope=[ME.c.pool_id == pool_id])

    def show_member(self, req: Request, pool_id: str, member_id: str) -> Response:
        self._pool_project(req, pool_id, write=False)
        item = self.plugin.read(lambda conn: self.plugin.member_view(
            self.plugin.member_row(conn, pool_id, member_id)))
        fields = req.fields()
        if fields:
            item = {k: v for k, v in item.items() if k in fields}
        return Response(200, {"member": item})

    def create_member(self, req: Request, pool_id: str) -> Response:
        data = parse_body(req, "member", MEMBER_FIELDS, creating=True)
        for key in NOT_STORED:
            data.pop(key, None)
        self._pool_project(req, pool_id, write=True)
        return Response(201, {"member": self.plugin.create_member(req.context, pool_id,
                                                                  data)})

    def update_member(self, req: Request, pool_id: str, member_id: str) -> Response:
        data = parse_body(req, "member", MEMBER_FIELDS, creating=False)
        self._pool_project(req, pool_id, write=True)
        return Response(200, {"member": self.plugin.update_member(pool_id, member_id, data)})

    def delete_member(self, req: Request, pool_id: str, member_id: str) -> Response:
        self._pool_project(req, pool_id, write=True)
        self.plugin.delete_member(pool_id, member_id)
        return Response(204)

    def batch_members(self, req: Request, pool_id: str) -> Response:
        body = req.json()
        members = body.get("members")
        if not isinstance(members, list):
            raise errors.BadRequest("Missing argument: \"members\"")
        wanted = []
        for member in members:
            if not isinstance(member, dict):
                raise _bad("members", members, "Value should be a list of members")
            fake = Request(req.method, req.path, [], {}, orjson.dumps({"member": member}),
                           req.base_url, req.request_id)
            data = parse_body(fake, "member", MEMBER_FIELDS, creating=True)
            for key in NOT_STORED:
                data.pop(key, None)
            wanted.append(data)
        self._pool_project(req, pool_id, write=True)
        self.plugin.batch_members(req.context, pool_id, wanted)
        return Response(202)


    # --- flavors, availability zones, their profiles and the providers' options ------

    def capabilities(self, kind: str, req: Request, provider_name: str) -> Response:
        if not octavia_policy.is_admin(req.context):
            raise errors.Forbidden()
        provider = self.plugin.provider_named(provider_name)
        known = (provider.flavor_capabilities if kind == "flavor"
                 else provider.availability_zone_capabilities)
        wanted = dict(req.query)
        items = [{"name": name, "description": text} for name, text in known.items()
                 if wanted.get("name", name) == name
                 and wanted.get("description", text) == text]
        fields = req.fields()
        if fields:
            items = [{k: v for k, v in item.items() if k in fields} for item in items]
        return Response(200, {f"{kind}_capabilities": items})

    @staticmethod
    def _catalogue_allows(req: Request, catalogue: Catalogue, write: bool) -> None:
        """Profiles are an admin's; flavors and zones are read by every project's
        readers and written by an admin."""
        ctx = req.context
        if write or catalogue.profile:
            allowed = octavia_policy.is_admin(ctx)
        else:
            allowed = octavia_policy.can_read(ctx, ctx.project_id)
        if not allowed:
            raise errors.Forbidden()

    @staticmethod
    def _catalogue_view(catalogue: Catalogue) -> Callable[[Connection, Any], dict[str, Any]]:
        show = catalog.profile_view if catalogue.profile else catalog.offer_view
        return lambda _conn, row: show(catalogue.offer, row)

    def list_catalogue(self, catalogue: Catalogue, req: Request) -> Response:
        self._catalogue_allows(req, catalogue, write=False)
        offer = catalogue.offer
        return self._list(req, offer.profiles if catalogue.profile else offer.table,
                          catalogue.plural, self._catalogue_view(catalogue),
                          project_check=False,
                          key="id" if catalogue.profile else offer.key, links=catalogue.links)

    def _catalogue_row(self, conn: Connection, catalogue: Catalogue, key: str) -> Any:
        if catalogue.profile:
            return catalog.profile_row(conn, catalogue.offer, key)
        return catalog.offer_row(conn, catalogue.offer, key)

    def show_in_catalogue(self, catalogue: Catalogue, req: Request, key: str) -> Response:
        self._catalogue_allows(req, catalogue, write=False)
        view = self._catalogue_view(catalogue)
        item = self.plugin.read(
            lambda conn: view(conn, self._catalogue_row(conn, catalogue, key)))
        fields = req.fields()
        if fields:
            item = {k: v for k, v in item.items() if k in fields}
        return Response(200, {catalogue.key: item})

    def create_in_catalogue(self, catalogue: Catalogue, req: Request) -> Response:
        self._catalogue_allows(req, catalogue, write=True)
        data = parse_body(req, catalogue.key, catalogue.fields, creating=True)
        create = self.plugin.catalog.create_profile if catalogue.profile \
            else self.plugin.catalog.create_offer
        item = self.plugin.db.write(lambda conn: create(conn, catalogue.offer, data))
        return Response(201, {catalogue.key: item})

    def update_in_catalogue(self, catalogue: Catalogue, req: Request, key: str) -> Response:
        self._catalogue_allows(req, catalogue, write=True)
        data = parse_body(req, catalogue.key, catalogue.fields, creating=False)
        update = self.plugin.catalog.update_profile if catalogue.profile \
            else self.plugin.catalog.update_offer
        item = self.plugin.db.write(lambda conn: update(conn, catalogue.offer, key, data))
        return Response(200, {catalogue.key: item})

    def delete_from_catalogue(self, catalogue: Catalogue, req: Request, key: str
                              ) -> Response:
        self._catalogue_allows(req, catalogue, write=True)
        delete = self.plugin.catalog.delete_profile if catalogue.profile \
            else self.plugin.catalog.delete_offer
        self.plugin.db.write(lambda conn: delete(conn, catalogue.offer, key))
        return Response(204)


def neutron_fault(error: exc.NeutronException) -> dict[str, Any]:
    """An error raised before the router (authentication), in Octavia's body."""
    return errors.fault(error.status, error.msg)
