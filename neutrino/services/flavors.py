"""The ``flavors`` service plugin (``service_plugins = flavors``): flavors,
service profiles and the bindings between them, with Neutron's checks and
errors.

A flavor names a service type that a loaded plugin offers (its
``plugin_type``: ``L3_ROUTER_NAT`` for ``router``, ``VPN`` for ``vpnaas``...);
a profile holds a driver, one of the ``[service_providers]`` drivers, and/or
free-form ``metainfo``. A profile bound to a flavor is neither changed nor
deleted (ServiceProfileInUse), as in Neutron; deleting a flavor drops its
bindings. Whatever names a flavor vetoes its delete through the
``before_flavor_delete`` hook (FlavorInUse), as the router plugin does for its
routers' ``flavor_id`` (l3-flavors). A service that serves a flavor asks
``provider_in`` (through ``Hooks.flavors``) which provider's driver does it.

Each write is one transaction; a flavor's row is locked before its bindings
change, then the profiles' rows, always in that order.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.engine import Connection, Row

from neutrino.context import Context
from neutrino.db import models
from neutrino.db.query import CollectionQuery, Page, find_row, read_page, select_page
from neutrino.definitions import flavors as fdef
from neutrino.definitions.validators import new_uuid
from neutrino.plugins.base import Environment, Plugin
from neutrino.plugins.providers import Provider

F, SP, FSP = models.flavors, models.service_profiles, models.flavor_service_profiles
FLAVOR_COLUMNS = {name: F.c[name] for name in (
    "id", "name", "description", "service_type", "enabled")}
PROFILE_COLUMNS = {name: SP.c[name] for name in (
    "id", "description", "driver", "metainfo", "enabled")}
#: a flavor's bindings, each named by its profile's id (the sub-resource's items)
BOUND = select(FSP.c.service_profile_id.label("id"), FSP.c.flavor_id).subquery(
    "flavor_service_profiles")


# --- rows and views -----------------------------------------------------------------------

def flavor_row(conn: Connection, flavor_id: str, for_update: bool = False) -> Row:
    return find_row(conn, F, flavor_id, [],
                    lambda: fdef.FlavorNotFound(flavor_id=flavor_id), for_update)


def profile_row(conn: Connection, profile_id: str, for_update: bool = False) -> Row:
    return find_row(conn, SP, profile_id, [],
                    lambda: fdef.ServiceProfileNotFound(sp_id=profile_id), for_update)


def flavor_view(row: Any, profile_ids: list[str]) -> dict[str, Any]:
    return {"id": row.id, "name": row.name, "description": row.description,
            "service_type": row.service_type, "service_profiles": profile_ids,
            "enabled": bool(row.enabled)}


def profile_view(row: Any) -> dict[str, Any]:
    return {"id": row.id, "description": row.description, "driver": row.driver,
            "metainfo": row.metainfo, "enabled": bool(row.enabled)}


def bound_profiles(conn: Connection, page: Page) -> dict[str, list[str]]:
    """flavor id -> the ids of its profiles, sorted, for the flavors of ``page``."""
    found: dict[str, list[str]] = {}
    stmt = select(FSP.c.flavor_id, FSP.c.service_profile_id).order_by(
        FSP.c.flavor_id, FSP.c.service_profile_id)
    for flavor_id, profile_id in page.read(conn, stmt, FSP.c.flavor_id):
        found.setdefault(flavor_id, []).append(profile_id)
    return found


def flavor(conn: Connection, flavor_id: str) -> dict[str, Any]:
    row = flavor_row(conn, flavor_id)
    return flavor_view(row, bound_profiles(conn, Page.of([row.id])).get(row.id, []))


def flavors(conn: Connection, query: CollectionQuery) -> list[dict[str, Any]]:
    rows, page = read_page(conn, F, FLAVOR_COLUMNS, query)
    bound = bound_profiles(conn, page) if rows else {}
    return [flavor_view(row, bound.get(row.id, [])) for row in rows]


def _is_bound(conn: Connection, profile_id: str) -> bool:
    return conn.execute(select(FSP.c.flavor_id).where(
        FSP.c.service_profile_id == profile_id).limit(1)).first() is not None


def _binding(conn: Connection, flavor_id: str, profile_id: str) -> Row | None:
    return conn.execute(select(FSP.c.service_profile_id).where(
        FSP.c.flavor_id == flavor_id, FSP.c.service_profile_id == profile_id)).first()


def _bind(conn: Connection, flavor_id: str, profile_ids: Iterable[str]) -> None:
    """Bind the profiles (each must exist) to a flavor that has none of them."""
    for profile_id in sorted(set(profile_ids)):
        row = profile_row(conn, profile_id, for_update=True)
        conn.execute(FSP.insert().values(flavor_id=flavor_id, service_profile_id=row.id))


def _rebind(conn: Connection, flavor_id: str, profile_ids: list[str]) -> None:
    """The flavor's bindings become exactly ``profile_ids`` (each must exist)."""
    wanted = {profile_row(conn, profile_id, for_update=True).id
              for profile_id in sorted(set(profile_ids))}
    current = set(conn.execute(select(FSP.c.service_profile_id).where(
        FSP.c.flavor_id == flavor_id)).scalars())
    gone = current - wanted
    if gone:
        conn.execute(delete(FSP).where(FSP.c.flavor_id == flavor_id,
                                       FSP.c.service_profile_id.in_(sorted(gone))))
    for profile_id in sorted(wanted - current):
        conn.execute(FSP.insert().values(flavor_id=flavor_id, service_profile_id=profile_id))


# --- the plugin ---------------------------------------------------------------------------

class FlavorsPlugin(Plugin):
    supported_extension_aliases = (fdef.EXTENSION.alias,)
    plugin_type = "FLAVORS"

    def __init__(self, env: Environment):
        super().__init__(env)
        self.providers = env.providers
        self.hooks = env.hooks
        env.hooks.flavors = self  # for the services that serve flavors
        #: the service types a flavor may name: those of the loaded plugins
        self.service_types = env.plugin_types

    # --- checks -------------------------------------------------------------------------

    def _check_service_type(self, service_type: str) -> None:
        if service_type not in self.service_types:
            raise fdef.InvalidServiceType(service_type=service_type)

    def _check_driver(self, driver: str) -> None:
        """A configured provider's driver, spelt as ``[service_providers]`` spells it."""
        if not any(p.driver == driver for p in self.providers.providers):
            raise fdef.ServiceProfileDriverNotFound(driver=driver)

    # --- flavors ------------------------------------------------------------------------

    def create_flavor(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        self._check_service_type(data["service_type"])

        def work(conn: Connection) -> dict[str, Any]:
            flavor_id = new_uuid()
            conn.execute(F.insert().values(
                id=flavor_id, name=data.get("name", ""),
                description=data.get("description", ""),
                service_type=data["service_type"], enabled=data.get("enabled", True)))
            _bind(conn, flavor_id, data.get("service_profiles") or [])
            return flavor(conn, flavor_id)

        return self.db.write(work)

    def get_flavor(self, ctx: Context, flavor_id: str) -> dict[str, Any]:
        return self._read(lambda conn: flavor(conn, flavor_id))

    def get_flavors(self, ctx: Context, query: CollectionQuery) -> list[dict[str, Any]]:
        return self._read(lambda conn: flavors(conn, query))

    def update_flavor(self, ctx: Context, flavor_id: str, data: dict[str, Any],
                      if_revision: int | None = None) -> dict[str, Any]:
        def work(conn: Connection) -> dict[str, Any]:
            row = flavor_row(conn, flavor_id, for_update=True)
            values = {key: data[key] for key in ("name", "description", "enabled")
                      if key in data}
            if values:
                conn.execute(update(F).where(F.c.id == row.id).values(**values))
            if "service_profiles" in data:
                _rebind(conn, row.id, data["service_profiles"] or [])
            return flavor(conn, row.id)

        return self.db.write(work)

    def delete_flavor(self, ctx: Context, flavor_id: str,
                      if_revision: int | None = None) -> None:
        def work(conn: Connection) -> list:
            row = flavor_row(conn, flavor_id, for_update=True)
            then = self.hooks.run(self.hooks.before_flavor_delete, conn, ctx, row.id)
            conn.execute(delete(FSP).where(FSP.c.flavor_id == row.id))
            conn.execute(delete(F).where(F.c.id == row.id))
            return then

        for after in self.db.write(work):
            after()

    # --- service profiles ---------------------------------------------------------------

    def create_service_profile(self, ctx: Context, data: dict[str, Any]) -> dict[str, Any]:
        driver, metainfo = data.get("driver") or "", data.get("metainfo")
        if driver:
            self._check_driver(driver)
        elif not metainfo:
            raise fdef.ServiceProfileEmpty()

        def work(conn: Connection) -> dict[str, Any]:
            profile_id = new_uuid()
            conn.execute(SP.insert().values(
                id=profile_id, description=data.get("description", ""), driver=driver,
                metainfo=metainfo, enabled=data.get("enabled", True)))
            return profile_view(profile_row(conn, profile_id))

        return self.db.write(work)

    def get_service_profile(self, ctx: Context, profile_id: str) -> dict[str, Any]:
        return self._read(lambda conn: profile_view(profile_row(conn, profile_id)))

    def get_service_profiles(self, ctx: Context, query: CollectionQuery
                             ) -> list[dict[str, Any]]:
        return self._read(lambda conn: [
            profile_view(row) for row in select_page(conn, SP, PROFILE_COLUMNS, query)])

    def update_service_profile(self, ctx: Context, profile_id: str, data: dict[str, Any],
                               if_revision: int | None = None) -> dict[str, Any]:
        if data.get("driver"):
            self._check_driver(data["driver"])

        def work(conn: Connection) -> dict[str, Any]:
            row = profile_row(conn, profile_id, for_update=True)
            if _is_bound(conn, row.id):
                raise fdef.ServiceProfileInUse(sp_id=profile_id)
            # what create refuses, an update may not make (Neutron lets it)
            if not data.get("driver", row.driver) and not data.get("metainfo", row.metainfo):
                raise fdef.ServiceProfileEmpty()
            if data:
                conn.execute(update(SP).where(SP.c.id == row.id).values(**data))
            return profile_view(profile_row(conn, row.id))

        return self.db.write(work)

    def delete_service_profile(self, ctx: Context, profile_id: str,
                               if_revision: int | None = None) -> None:
        def work(conn: Connection) -> None:
            row = profile_row(conn, profile_id, for_update=True)
            if _is_bound(conn, row.id):
                raise fdef.ServiceProfileInUse(sp_id=profile_id)
            conn.execute(delete(SP).where(SP.c.id == row.id))

        self.db.write(work)

    # --- a flavor's bindings (/v2.0/flavors/{flavor_id}/service_profiles) ---------------

    def create_flavor_service_profile(self, ctx: Context, flavor_id: str,
                                      data: dict[str, Any]) -> dict[str, Any]:
        """Bind a profile: the answer names it (Neutron's names the flavor)."""
        def work(conn: Connection) -> dict[str, Any]:
            row = flavor_row(conn, flavor_id, for_update=True)
            profile = profile_row(conn, data["id"], for_update=True)
            if _binding(conn, row.id, profile.id) is not None:
                raise fdef.FlavorServiceProfileBindingExists(sp_id=data["id"], fl_id=flavor_id)
            conn.execute(FSP.insert().values(flavor_id=row.id, service_profile_id=profile.id))
            return {"id": profile.id}

        return self.db.write(work)

    def get_flavor_service_profile(self, ctx: Context, flavor_id: str, profile_id: str
                                   ) -> dict[str, Any]:
        found = self._read(lambda conn: _binding(conn, flavor_id, profile_id))
        if found is None:
            raise fdef.FlavorServiceProfileBindingNotFound(sp_id=profile_id, fl_id=flavor_id)
        return {"id": found.service_profile_id}

    def get_flavor_service_profiles(self, ctx: Context, flavor_id: str,
                                    query: CollectionQuery) -> list[dict[str, Any]]:
        rows = self._read(lambda conn: select_page(
            conn, BOUND, {"id": BOUND.c.id}, query, [BOUND.c.flavor_id == flavor_id]))
        return [{"id": row.id} for row in rows]

    def delete_flavor_service_profile(self, ctx: Context, flavor_id: str, profile_id: str,
                                      if_revision: int | None = None) -> None:
        def work(conn: Connection) -> None:
            row = flavor_row(conn, flavor_id, for_update=True)
            gone = conn.execute(delete(FSP).where(
                FSP.c.flavor_id == row.id, FSP.c.service_profile_id == profile_id)).rowcount
            if not gone:
                raise fdef.FlavorServiceProfileBindingNotFound(sp_id=profile_id,
                                                               fl_id=flavor_id)

        self.db.write(work)

    # --- for the services that serve flavors --------------------------------------------

    def next_provider(self, ctx: Context, flavor_id: str,
                      service_type: str | None = None) -> Provider:
        """The provider whose driver serves a new resource of the flavor (its
        own read)."""
        return self._read(lambda conn: self.provider_in(conn, flavor_id, service_type))

    def provider_in(self, conn: Connection, flavor_id: str, service_type: str | None,
                    lock: bool = False) -> Provider:
        """The provider of the flavor's first enabled profile (by id), read on
        the caller's connection; with ``service_type``, the flavor must be of it
        (InvalidFlavorServiceType). Neutron takes the first profile, enabled or
        not, and never refuses a disabled flavor; here a disabled flavor serves
        nothing new (FlavorDisabled)."""
        row = flavor_row(conn, flavor_id, for_update=lock)
        if service_type is not None and row.service_type != service_type:
            raise fdef.InvalidFlavorServiceType(service_type=row.service_type)
        if not row.enabled:
            raise fdef.FlavorDisabled()
        profiles = list(conn.execute(
            select(SP).join(FSP, FSP.c.service_profile_id == SP.c.id)
            .where(FSP.c.flavor_id == row.id).order_by(SP.c.id)))
        if not profiles:
            raise fdef.FlavorServiceProfileBindingNotFound(sp_id="", fl_id=flavor_id)
        profile = next((p for p in profiles if p.enabled), None)
        if profile is None:
            raise fdef.ServiceProfileDisabled()
        found = next((p for p in self.providers.providers if p.driver == profile.driver), None)
        if found is None:
            raise fdef.ServiceProfileDriverNotFound(driver=profile.driver)
        return found
