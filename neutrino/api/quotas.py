"""``/v2.0/quotas``: limits per project, their defaults and usage."""

from __future__ import annotations

from typing import Any

from neutrino import exceptions as exc
from neutrino.api.policy import Policy
from neutrino.api.request import Request, Response
from neutrino.db.engine import Database
from neutrino.db.quota import QuotaEngine
from neutrino.definitions import validators as v


class QuotasController:
    def __init__(self, db: Database, engine: QuotaEngine, policy: Policy):
        self.db = db
        self.engine = engine
        self.policy = policy

    def dispatch(self, req: Request, rest: list[str]) -> Response:
        method = req.method
        if not rest:
            if method != "GET":
                raise exc.HTTPMethodNotAllowed(method=method)
            return self.index(req)
        project_id = rest[0]
        if project_id == "tenant" and len(rest) == 1 and method == "GET":
            return Response(200, {"tenant": {"tenant_id": req.context.project_id}})
        if len(rest) == 2 and rest[1] in ("details", "default") and method == "GET":
            self._authorize_read(req, project_id)
            with self.db.reader() as conn:
                if rest[1] == "default":
                    return Response(200, {"quota": self._with_project(
                        dict(self.engine.defaults), project_id)})
                limits = self.engine.limits(conn, project_id)
                details = {r: {"limit": limits[r], "used": self.engine.used(conn, project_id, r),
                               "reserved": 0} for r in self.engine.resources}
            return Response(200, {"quota": self._with_project(details, project_id)})
        if len(rest) != 1:
            raise exc.HTTPNotFound()
        if method == "GET":
            self._authorize_read(req, project_id)
            with self.db.reader() as conn:
                limits = self.engine.limits(conn, project_id)
            return Response(200, {"quota": self._with_project(limits, project_id)})
        if method == "PUT":
            self._authorize_admin(req, "update_quota")
            values = self._parse(req)
            self.db.write(lambda conn: self.engine.set_limits(conn, project_id, values))
            with self.db.reader() as conn:
                limits = self.engine.limits(conn, project_id)
            return Response(200, {"quota": limits})
        if method == "DELETE":
            self._authorize_admin(req, "delete_quota")
            self.db.write(lambda conn: self.engine.reset(conn, project_id))
            return Response(204)
        raise exc.HTTPMethodNotAllowed(method=method)

    @staticmethod
    def _with_project(values: dict[str, Any], project_id: str) -> dict[str, Any]:
        return {**values, "project_id": project_id, "tenant_id": project_id}

    def index(self, req: Request) -> Response:
        ctx = req.context
        with self.db.reader() as conn:
            projects = self.engine.projects_with_limits(conn)
            if not ctx.is_admin:
                projects = [p for p in projects if p == ctx.project_id]
            items = [self._with_project(self.engine.limits(conn, p), p) for p in projects]
        return Response(200, {"quotas": items})

    def _authorize_read(self, req: Request, project_id: str) -> None:
        ctx = req.context
        if not self.policy.allows("get_quota", ctx, {"project_id": project_id}):
            raise exc.PolicyNotAuthorized(action="get_quota")

    def _authorize_admin(self, req: Request, action: str) -> None:
        if not self.policy.allows(action, req.context, {}):
            raise exc.PolicyNotAuthorized(action=action)

    def _parse(self, req: Request) -> dict[str, int]:
        body = req.json()
        if not isinstance(body, dict) or not isinstance(body.get("quota"), dict):
            raise exc.HTTPBadRequest(msg="Unable to find 'quota' in request body")
        values = {}
        unknown = [k for k in body["quota"] if k not in self.engine.defaults
                   and k not in ("project_id", "tenant_id", "force", "check_limit")]
        if unknown:
            raise exc.HTTPBadRequest(msg=f"Unrecognized attribute(s) '{', '.join(unknown)}'")
        for key, value in body["quota"].items():
            if key not in self.engine.defaults:
                continue
            number = v.to_int(value)
            if number < -1:
                raise exc.HTTPBadRequest(msg=f"Invalid input for {key}. Reason: '{number}' "
                                             "is too small - must be at least '-1'.")
            values[key] = number
        return values
