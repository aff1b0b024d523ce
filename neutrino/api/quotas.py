"""``/v2.0/quotas``: limits per project, their defaults and usage."""

from __future__ import annotations

from typing import Any

from neutrino import exceptions as exc
from neutrino.api.policy import Policy
from neutrino.api.request import Request, Response
from neutrino.context import Context
from neutrino.db.engine import Database
from neutrino.db.quota import QuotaEngine
from neutrino.definitions import validators as v

MAX_LIMIT = 2147483647
_check_limit = v.integer_range(-1, MAX_LIMIT)


class HTTPNotImplemented(exc.NeutronException):
    status = 501
    message = "%(msg)s"


class QuotasController:
    def __init__(self, db: Database, engine: QuotaEngine, policy: Policy):
        self.db = db
        self.engine = engine
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
            return Response(200, {"quota": dict(self.engine.defaults)})
        if len(rest) == 2 and method == "GET" and rest[1] == "details":
            if not ctx.is_admin and project_id != ctx.project_id:
                raise exc.AdminRequired(reason="Only admin is authorized to access quotas "
                                               "for another project")
            with self.db.reader() as conn:
                limits = self.engine.limits(conn, project_id)
                details = {r: {"limit": limits[r],
                               "used": self.engine.used(conn, project_id, r), "reserved": 0}
                           for r in self.engine.resources}
            return Response(200, {"quota": details})
        if len(rest) != 1:
            raise exc.HTTPNotFound()
        if method == "GET":
            self._authorize_read(ctx, project_id)
            with self.db.reader() as conn:
                return Response(200, {"quota": self.engine.limits(conn, project_id)})
        if method == "PUT":
            self._authorize_admin(ctx, "update_quota")
            values, force = self._parse(req)

            def update(conn) -> dict[str, int]:
                if not force:
                    self._check_usage(conn, project_id, values)
                self.engine.set_limits(conn, project_id, values)
                return self.engine.limits(conn, project_id)

            return Response(200, {"quota": self.db.write(update)})
        if method == "DELETE":
            self._authorize_admin(ctx, "delete_quota")
            self.db.write(lambda conn: self.engine.reset(conn, project_id))
            return Response(204)
        raise exc.HTTPMethodNotAllowed()

    def index(self, ctx: Context) -> Response:
        self._authorize_admin(ctx, "get_quota")
        with self.db.reader() as conn:
            items = [{**self.engine.limits(conn, p), "project_id": p, "tenant_id": p}
                     for p in self.engine.projects_with_limits(conn)]
        return Response(200, {"quotas": items})

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
        unknown = sorted(k for k in quota if k not in self.engine.defaults)
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

    def _check_usage(self, conn, project_id: str, values: dict[str, int]) -> None:
        for resource, limit in values.items():
            if limit < 0:
                continue
            used = self.engine.used(conn, project_id, resource)
            if limit < used:
                raise exc.HTTPBadRequest(msg=f"Quota limit {limit} for {resource} must be "
                                             f"greater than or equal to already used {used}")
