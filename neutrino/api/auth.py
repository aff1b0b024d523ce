"""Authentication strategies: each turns request headers into a Context.

``keystone`` will be one more class with the same ``authenticate`` method.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Protocol

from neutrino import exceptions as exc
from neutrino.context import DEFAULT_PROJECT_ID, Context

LOG = logging.getLogger(__name__)


class Authenticator(Protocol):
    def authenticate(self, headers: Mapping[str, str], request_id: str) -> Context: ...


def _roles(headers: Mapping[str, str]) -> frozenset[str]:
    text = headers.get("x-roles", "")
    return frozenset(r.strip().lower() for r in text.split(",") if r.strip())


class NoAuth:
    """Neutron's noauth: everyone is admin; the project comes from headers or is fixed."""

    def authenticate(self, headers: Mapping[str, str], request_id: str) -> Context:
        project = (headers.get("x-project-id") or headers.get("x-tenant-id")
                   or DEFAULT_PROJECT_ID)
        return Context(project_id=project, user_id=headers.get("x-user-id"),
                       roles=_roles(headers) | {"admin"}, is_admin=True,
                       request_id=request_id, project_from_body=True)


class TrustedHeaders:
    """Identity asserted by an authenticating proxy in X-* headers; policy applies."""

    def __init__(self) -> None:
        LOG.warning("auth_strategy = trusted_headers: identity headers are trusted as "
                    "given; only run this behind a proxy that sets them")

    def authenticate(self, headers: Mapping[str, str], request_id: str) -> Context:
        project = headers.get("x-project-id") or headers.get("x-tenant-id")
        roles = _roles(headers)
        if not project and "admin" not in roles:
            raise exc.HTTPUnauthorized()
        return Context(project_id=project, user_id=headers.get("x-user-id"),
                       roles=roles, is_admin="admin" in roles, request_id=request_id,
                       user_domain_id=headers.get("x-user-domain-id"))


def make_authenticator(strategy: str) -> Authenticator:
    if strategy == "noauth":
        return NoAuth()
    if strategy == "trusted_headers":
        return TrustedHeaders()
    raise ValueError(f"auth_strategy {strategy} is not available yet")
