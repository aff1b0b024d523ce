"""Routers' flavors in the database (``l3-flavors``): a flavored router's
flavor and the provider that serves it, one row per router (none: a router of
no flavor). The row goes with its router; a flavor with routers stays.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection

from neutrino.context import Context
from neutrino.db import models
from neutrino.definitions.flavors import FlavorInUse

RF, R = models.router_flavors, models.routers
#: a router's flavor_id, as an expression over the routers table (its filter and sort)
FLAVOR_ID: Any = select(RF.c.flavor_id).where(RF.c.router_id == R.c.id).scalar_subquery()


def bind(conn: Connection, router_id: str, flavor_id: str, provider_name: str) -> None:
    conn.execute(RF.insert().values(router_id=router_id, flavor_id=flavor_id,
                                    provider_name=provider_name))


def of(conn: Connection, router_ids: list[str]) -> dict[str, str]:
    """router id -> its flavor's id, for the flavored ones."""
    if not router_ids:
        return {}
    return dict(conn.execute(select(RF.c.router_id, RF.c.flavor_id)
                             .where(RF.c.router_id.in_(router_ids))).all())


def check_unused(conn: Connection, ctx: Context, flavor_id: str) -> None:
    """The ``before_flavor_delete`` check: a flavor with routers stays (FlavorInUse)."""
    if conn.execute(select(RF.c.router_id).where(RF.c.flavor_id == flavor_id)
                    .limit(1)).first() is not None:
        raise FlavorInUse(flavor_id=flavor_id)
