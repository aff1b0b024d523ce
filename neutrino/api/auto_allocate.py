"""``/v2.0/auto-allocated-topology/{project_id}``: a project's auto-allocated
topology (the auto-allocated-topology extension).

The path names a project where other resources name an item, and there is
no collection, so the generic controller does not serve it. A ``GET`` makes
the topology on the project's first request (``?fields=dry-run`` only checks
that it could); a ``DELETE`` takes it down. The project's members may do both
for their own project (readers may get it), admins for any: the policy is
asked before anything is made.
"""

from __future__ import annotations

from typing import Any

from neutrino import exceptions as exc
from neutrino.api.policy import Policy
from neutrino.api.request import Request, Response
from neutrino.context import Context
from neutrino.definitions import validators as v
from neutrino.definitions.auto_allocated_topology import DRY_RUN, NAME


class AutoAllocatedTopologyController:
    def __init__(self, plugin: Any, policy: Policy):
        self.plugin = plugin
        self.policy = policy

    def dispatch(self, req: Request, rest: list[str]) -> Response:
        if len(rest) != 1:
            raise exc.HTTPNotFound()  # no collection, nothing under a project
        if req.method == "GET":
            return self.show(req, rest[0])
        if req.method == "DELETE":
            return self.delete(req, rest[0])
        raise exc.HTTPMethodNotAllowed()

    def show(self, req: Request, given: str) -> Response:
        ctx = req.context
        project_id = self._project(ctx, given)
        if not self._allows("get", ctx, project_id):
            # as Neutron, which asks once the topology is read: what the policy
            # hides is not there
            raise exc.HTTPNotFound()
        fields = req.fields()
        if DRY_RUN in fields:
            found = self.plugin.validate_auto_allocated_topology(ctx, project_id)
        elif fields:
            raise exc.BadRequest(resource="auto_allocate", msg="Unrecognized field")
        else:
            found = self.plugin.get_auto_allocated_topology(ctx, project_id)
        return Response(200, {NAME: found})

    def delete(self, req: Request, given: str) -> Response:
        ctx = req.context
        if req.body:
            raise exc.HTTPBadRequest(msg="Request body is not supported in DELETE.")
        project_id = self._project(ctx, given)
        if not self._allows("delete", ctx, project_id):
            raise exc.PolicyNotAuthorized(action="delete_auto_allocated_topology")
        self.plugin.delete_auto_allocated_topology(ctx, project_id)
        return Response(204)

    @staticmethod
    def _project(ctx: Context, given: str) -> str:
        """The project the URL names: ``None`` (what older clients send without a
        project) is the caller's; another project's is an admin's alone."""
        project_id = ctx.project_id if given == "None" else given
        if project_id is None:
            raise exc.HTTPBadRequest(msg="Running without keystone AuthN requires that "
                                         "project_id is specified")
        error = v.project_id(project_id)
        if error:
            raise exc.HTTPBadRequest(msg=f"Invalid input for project_id. Reason: {error}.")
        if not ctx.is_admin and project_id != ctx.project_id:
            raise exc.NotAuthorized()
        return project_id

    def _allows(self, action: str, ctx: Context, project_id: str) -> bool:
        return ctx.is_admin or self.policy.allows(
            f"{action}_auto_allocated_topology", ctx,
            {"project_id": project_id, "tenant_id": project_id})
