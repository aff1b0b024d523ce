"""``/v2.0/quotas``: limits per project, their defaults and usage."""

from __future__ import annotations

from typing import Any

from neutrino import exceptions as exc
from neutrino.api.policy import Policy
from neutrino.api.request import Request, Response
from neutrino.context import Context
from neutrino.definitions import validators as v
from neutrino.plugins.quotas import QuotaService

MAX_LIMIT = 2147483647
_check_limit = v.integer_range(-1, MAX_LIMIT)


class HTTPNotImplemented(exc.NeutronException):
    status = 501
    message = "%(msg)s"


class QuotasController:
    def __init__(self, service: QuotaService, policy: Policy):
        self.service = service
        self.policy = policy

    def dispatch(self, req: Request, rest: list[str]) -> Response:
        method, ctx = req.method, req.context
        if not rest:
            if method == "POST":
                raise HTTPNotImplemented(msg="POST requests are not supported on this "
                                             "resource.")
            if method != "GET":
                raise exc.HTTPMethodNotAllowed()
            return self.index(ctx)
        project_id = rest[0]
        error = v.project_id(project_id)
        if error:
            raise exc.HTTPBadRequest(msg=f"Invalid input for project_id. Reason: {error}.")
        if len(rest) == 1 and method == "GET" and project_id in ("tenant", "project"):
            key = "tenant_id" if project_id == "tenant" else "project_id"
            return Response(200, {project_id: {key: ctx.project_id}})
        if len(rest) == 2 and method == "GET" and rest[1] == "default":
            self._authorize_read(ctx, project_id)
            return Response(200, {"quota": self.service.defaults})
        if len(rest) == 2 and method == "GET" and rest[1] == "details":
            if not ctx.is_admin and project_id != ctx.project_id:
                raise exc.AdminRequired(reason="Only admin is authorized to access quotas "
                                               "for another project")
            return Response(200, {"quota": self.service.details(project_id)})
        if len(rest) != 1:
            raise exc.HTTPNotFound()
        if method == "GET":
            self._authorize_read(ctx, project_id)
            return Response(200, {"quota": self.service.limits(project_id)})
        if method == "PUT":
            self._authorize_admin(ctx, "update_quota")
            values, force = self._parse(req)
            return Response(200, {"quota": self.service.update(project_id, values, force)})
        if method == "DELETE":
            self._authorize_admin(ctx, "delete_quota")
            self.service.reset(project_id)
            return Response(204)
        raise exc.HTTPMethodNotAllowed()

    def index(self, ctx: Context) -> Response:
        self._authorize_admin(ctx, "get_quota")
        return Response(200, {"quotas": self.service.all_limits()})

    def _authorize_read(self, ctx: Context, project_id: str) -> None:
        if project_id != ctx.project_id and not self.policy.allows(
                "get_quota", ctx, {"project_id": project_id}):
            raise exc.PolicyNotAuthorized(action="get_quota")

    def _authorize_admin(self, ctx: Context, action: str) -> None:
        if not self.policy.allows(action, ctx, {}):
            raise exc.PolicyNotAuthorized(action=action)

    def _parse(self, req: Request) -> tuple[dict[str, int], bool]:
        body = req.json()
        if not isinstance(body.get("quota"), dict):
            raise exc.HTTPBadRequest(msg="Unable to find 'quota' in request body")
        quota: dict[str, Any] = dict(body["quota"])
        force = quota.pop("force", None) is True  # as Neutron: only a JSON true forces
        quota.pop("check_limit", None)
        unknown = sorted(k for k in quota if k not in self.service.defaults)
        if unknown:
            raise exc.HTTPBadRequest(msg=f"Unrecognized attribute(s) '{', '.join(unknown)}'")
        values = {}
        for key, value in quota.items():
            number = v.to_int(value)
            error = _check_limit(number)
            if error:
                raise exc.HTTPBadRequest(msg=f"Invalid input for {key}. Reason: {error}.")
            values[key] = number
        return values, force

