"""Octavia's default policy, as code: the keystone default roles (reader,
member, admin) with Octavia's own ``load-balancer_*`` roles beside them.

- read: observer-and-owner, member-and-owner, global observer or admin;
- read-global (every project's objects in a list): global observer or admin;
- write: member-and-owner or admin.

Another project's object is a 403, as in Octavia (it checks the object's
project after finding it).
"""

from __future__ import annotations

from neutrino.context import Context
from neutrino.services.octavia import errors


def is_admin(ctx: Context) -> bool:
    return ctx.is_admin or bool({"admin", "load-balancer_admin"} & ctx.roles)


def global_observer(ctx: Context) -> bool:
    return is_admin(ctx) or "load-balancer_global_observer" in ctx.roles


def _owner(ctx: Context, project_id: str | None) -> bool:
    return ctx.project_id is not None and ctx.project_id == project_id


def can_read(ctx: Context, project_id: str | None) -> bool:
    if global_observer(ctx):
        return True
    roles = {"reader", "member", "load-balancer_observer", "load-balancer_member"}
    return _owner(ctx, project_id) and bool(roles & ctx.roles)


def can_write(ctx: Context, project_id: str | None) -> bool:
    if is_admin(ctx):
        return True
    return _owner(ctx, project_id) and bool({"member", "load-balancer_member"} & ctx.roles)


def check_read(ctx: Context, project_id: str | None) -> None:
    if not can_read(ctx, project_id):
        raise errors.Forbidden()


def check_write(ctx: Context, project_id: str | None) -> None:
    if not can_write(ctx, project_id):
        raise errors.Forbidden()
