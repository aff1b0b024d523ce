"""Authentication strategies: each turns request headers into a Context.

``keystone`` (``neutrino.api.keystone``) validates tokens; the others here
take identity from headers.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol

from neutrino import exceptions as exc
from neutrino.api.keystone import Keystone
from neutrino.api.policy import Policy
from neutrino.context import DEFAULT_PROJECT_ID, Context
from neutrino.definitions import validators

LOG = logging.getLogger(__name__)


class Authenticator(Protocol):
    #: the WWW-Authenticate header of a 401
    challenge: str

    def authenticate(self, headers: Mapping[str, str], request_id: str) -> Context: ...


# keystone's default implied roles: an admin is a member, a member a reader
IMPLIED_ROLES = {"admin": {"member", "reader"}, "member": {"reader"}}


def with_implied(roles: frozenset[str]) -> frozenset[str]:
    return roles.union(*(IMPLIED_ROLES.get(role, ()) for role in roles))


def _identity(headers: Mapping[str, str], *names: str) -> str | None:
    """The first of ``names`` present: an id as the database holds one (a 400 if not)."""
    for name in names:
        value = headers.get(name)
        if value:
            error = validators.project_id(value)
            if error:
                raise exc.HTTPBadRequest(msg=f"Invalid {name} header: {error}")
            return value
    return None


def _roles(headers: Mapping[str, str]) -> frozenset[str]:
    text = headers.get("x-roles", "")
    return with_implied(frozenset(r.strip().lower() for r in text.split(",") if r.strip()))


class NoAuth:
    """Neutron's noauth: everyone is admin. Requests act in one fixed project unless
    an X-Project-Id header names another (handy for trying several projects; it
    grants nothing, since every caller is admin anyway)."""

    challenge = "Keystone uri=''"

    def authenticate(self, headers: Mapping[str, str], request_id: str) -> Context:
        project = _identity(headers, "x-project-id", "x-tenant-id") or DEFAULT_PROJECT_ID
        return Context(project_id=project, user_id=_identity(headers, "x-user-id"),
                       roles=_roles(headers) | {"admin"}, is_admin=True,
                       request_id=request_id, project_from_body=True)


class TrustedHeaders:
    """Identity asserted by an authenticating proxy in X-* headers; policy applies.

    A request without X-User-Id is a 401, as keystone's middleware makes one
    without a valid token: the proxy authenticated nobody."""

    challenge = "Keystone uri=''"

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        LOG.warning("auth_strategy = trusted_headers: identity headers are trusted as "
                    "given; only run this behind a proxy that sets them")

    def authenticate(self, headers: Mapping[str, str], request_id: str) -> Context:
        project = _identity(headers, "x-project-id", "x-tenant-id")
        user = _identity(headers, "x-user-id")
        roles = _roles(headers)
        if not user or (not project and "admin" not in roles):
            raise exc.HTTPUnauthorized()
        ctx = Context(project_id=project, user_id=user,
                      roles=roles, request_id=request_id,
                      user_domain_id=_identity(headers, "x-user-domain-id"))
        return ctx.with_admin(self.policy.is_admin(ctx) or (
            project is None and "admin" in roles))


def make_authenticator(strategy: str, conf: Any, policy: Policy) -> Authenticator:
    if strategy == "noauth":
        return NoAuth()
    if strategy == "trusted_headers":
        return TrustedHeaders(policy)
    if strategy == "keystone":
        return Keystone(conf.keystone_authtoken, policy.is_admin)
    raise ValueError(f"auth_strategy {strategy} is not available")
