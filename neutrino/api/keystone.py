"""``auth_strategy = keystone``: tokens validated by keystone, contexts built from them.

The server asks keystone about each token it has not seen recently
(``GET /v3/auth/tokens`` with the token as ``X-Subject-Token``, authenticated
as the service user of ``[keystone_authtoken]``) and keeps the answer for at
most ``token_cache_time`` seconds and never past the token's expiry. A token
revoked in keystone therefore stops working here within ``token_cache_time``.
Headers a client sends about its identity (``X-Project-Id``, ``X-Roles``...)
are ignored: only the token speaks.
"""

from __future__ import annotations

import datetime
import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from neutrino import exceptions as exc
from neutrino.config import Opt, OptGroup, int_range, parse_bool, parse_list
from neutrino.context import Context

LOG = logging.getLogger(__name__)

GROUP = OptGroup("keystone_authtoken", [
    Opt("www_authenticate_uri", str, "",
        "Keystone's public URL, named in WWW-Authenticate when a token is refused."),
    Opt("auth_url", str, "", "Keystone URL the service user authenticates against."),
    Opt("auth_type", str, "password", "How the service user authenticates (password)."),
    Opt("username", str, "", "The service user."),
    Opt("password", str, ""),
    Opt("project_name", str, "service"),
    Opt("user_domain_name", str, "Default"),
    Opt("project_domain_name", str, "Default"),
    Opt("region_name", str, ""),
    Opt("cafile", str, "", "CA bundle for https to keystone."),
    Opt("insecure", parse_bool, False, "Do not verify keystone's certificate."),
    Opt("http_connect_timeout", int_range(1), 10, "Seconds to wait for keystone."),
    Opt("token_cache_time", int_range(-1), 300,
        "Seconds a validated token is trusted without asking keystone again "
        "(-1: not cached)."),
    Opt("cache_size", int_range(1), 10000, "Validated tokens kept per API process."),
    Opt("memcached_servers", parse_list, [],
        "Not used: each API process keeps its own cache (token_cache_time bounds it)."),
    Opt("service_token_roles", parse_list, ["service"],
        "A service token (X-Service-Token) counts when it carries one of these roles."),
    Opt("service_token_roles_required", parse_bool, False,
        "Refuse service tokens without one of service_token_roles."),
])


def _base(auth_url: str) -> str:
    url = auth_url.rstrip("/")
    return url if url.endswith("/v3") else url + "/v3"


@dataclass(frozen=True)
class TokenInfo:
    """What keystone said of a token: enough to build a context."""

    user_id: str | None
    user_name: str | None
    user_domain_id: str | None
    project_id: str | None
    project_name: str | None
    project_domain_id: str | None
    domain_id: str | None  # a domain-scoped token
    system_scope: str | None
    roles: frozenset[str]
    expires_at: float  # epoch seconds

    @classmethod
    def parse(cls, body: Mapping[str, Any]) -> TokenInfo:
        token = body["token"]
        user = token.get("user") or {}
        project = token.get("project") or {}
        domain = token.get("domain") or {}
        system = token.get("system") or {}
        expires = datetime.datetime.fromisoformat(token["expires_at"].replace("Z", "+00:00"))
        return cls(
            user_id=user.get("id"), user_name=user.get("name"),
            user_domain_id=(user.get("domain") or {}).get("id"),
            project_id=project.get("id"), project_name=project.get("name"),
            project_domain_id=(project.get("domain") or {}).get("id"),
            domain_id=domain.get("id"),
            system_scope="all" if system.get("all") else None,
            roles=frozenset(r["name"].lower() for r in token.get("roles") or ()),
            expires_at=expires.timestamp())


class TokenCache:
    """Validated tokens by digest (tokens themselves are not kept), oldest dropped first."""

    def __init__(self, lifetime: int, size: int, clock: Callable[[], float] = time.time):
        self.lifetime = lifetime
        self.size = size
        self.clock = clock
        self._entries: OrderedDict[str, tuple[float, TokenInfo]] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def key(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

    def get(self, token: str) -> TokenInfo | None:
        key = self.key(token)
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry[0] <= self.clock():
                del self._entries[key]
                return None
            return entry[1]

    def put(self, token: str, info: TokenInfo) -> None:
        if self.lifetime < 0:
            return
        until = min(self.clock() + self.lifetime, info.expires_at)
        with self._lock:
            self._entries[self.key(token)] = (until, info)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)


class KeystoneUnavailable(exc.ServiceUnavailable):
    message = "The Keystone service is temporarily unavailable."


class Keystone:
    """The keystone authenticator: X-Auth-Token in, Context out, 401 for bad tokens."""

    def __init__(self, opts: Any, is_admin: Callable[[Context], bool]):
        if not opts.auth_url:
            raise ValueError("auth_strategy = keystone needs auth_url in [keystone_authtoken]")
        if opts.auth_type not in ("password", "v3password"):
            raise ValueError(f"auth_type {opts.auth_type} in [keystone_authtoken] is not "
                             "supported (password is)")
        if opts.memcached_servers:
            LOG.warning("[keystone_authtoken] memcached_servers is not used: each API "
                        "process caches tokens itself, for at most token_cache_time")
        self.opts = opts
        self.is_admin = is_admin
        self.tokens_url = _base(opts.auth_url) + "/auth/tokens"
        self.challenge = f'Keystone uri="{opts.www_authenticate_uri or opts.auth_url}"'
        self.cache = TokenCache(opts.token_cache_time, opts.cache_size)
        # keystoneauth1 (and osprofiler, which it brings) is some 20 MB a process:
        # loaded by the servers that use keystone only
        from keystoneauth1 import exceptions, session
        from keystoneauth1.identity import v3

        self.unreachable = exceptions.ClientException
        plugin = v3.Password(
            auth_url=_base(opts.auth_url), username=opts.username, password=opts.password,
            project_name=opts.project_name, user_domain_name=opts.user_domain_name,
            project_domain_name=opts.project_domain_name)
        verify: bool | str = not opts.insecure
        if opts.cafile and not opts.insecure:
            verify = opts.cafile
        self.session = session.Session(auth=plugin, verify=verify,
                                          timeout=opts.http_connect_timeout)

    def authenticate(self, headers: Mapping[str, str], request_id: str) -> Context:
        token = headers.get("x-auth-token") or headers.get("x-storage-token")
        if not token:
            raise exc.HTTPUnauthorized()
        allow_expired = False
        service = headers.get("x-service-token")
        if service:
            service_info = self._validate(service)
            if service_info is None:
                raise exc.HTTPUnauthorized()
            carries_role = bool(service_info.roles & {
                r.lower() for r in self.opts.service_token_roles})
            if not carries_role and self.opts.service_token_roles_required:
                raise exc.HTTPUnauthorized()
            # a user token past its expiry still counts when a service vouches for it
            allow_expired = carries_role
        info = self._validate(token, allow_expired)
        if info is None:
            raise exc.HTTPUnauthorized()
        ctx = Context(
            project_id=info.project_id, user_id=info.user_id, roles=info.roles,
            request_id=request_id, user_domain_id=info.user_domain_id,
            project_name=info.project_name, user_name=info.user_name,
            project_domain_id=info.project_domain_id, system_scope=info.system_scope)
        return ctx.with_admin(self.is_admin(ctx))

    def _validate(self, token: str, allow_expired: bool = False) -> TokenInfo | None:
        """The token's information, or None when keystone does not know it (any more)."""
        info = self.cache.get(token)
        if info is not None:
            return info
        params = {"nocatalog": "1"}
        if allow_expired:
            params["allow_expired"] = "1"
        try:
            resp = self.session.get(self.tokens_url, headers={"X-Subject-Token": token},
                                    params=params, raise_exc=False, authenticated=True)
        except self.unreachable as error:
            LOG.error("cannot validate a token with keystone at %s: %s",
                      self.tokens_url, error)
            raise KeystoneUnavailable() from None
        if resp.status_code in (401, 403, 404):
            return None  # unknown, expired or revoked; 401/403: malformed
        if resp.status_code != 200:
            LOG.error("keystone answered %s to a token validation", resp.status_code)
            raise KeystoneUnavailable()
        info = TokenInfo.parse(resp.json())
        if not allow_expired:
            self.cache.put(token, info)
        return info
