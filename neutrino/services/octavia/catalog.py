"""Octavia's flavors and availability zones: what an operator offers projects
by name, each backed by a profile of one provider's options.

A profile (an admin's) names a provider and holds its options as JSON text,
which that provider checks when the profile is written; a flavor or an
availability zone (read by every project, written by admins) points at a
profile and can be disabled. A load balancer created with one takes its
provider from the flavor's profile, and its provider applies the options
(the haproxy provider: HAProxy's limits, the agents' zone). What a load
balancer or a flavor uses cannot be deleted, and a profile in use keeps its
provider and options (409), as in Octavia.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table, delete, func, insert, select, update
from sqlalchemy.engine import Connection, Row

from neutrino.db import models
from neutrino.definitions.validators import new_uuid
from neutrino.services.octavia import errors
from neutrino.services.octavia.providers import Provider


@dataclass(frozen=True)
class Offer:
    """Flavors or availability zones, with their profiles."""

    table: Table
    key: str  # "id" or "name"
    noun: str  # in errors
    option: str  # the load balancer's attribute naming one
    profiles: Table
    profile_noun: str
    reference: str  # the column naming the profile
    data: str  # the profile's column of options
    lb_column: str  # the load balancer's column naming one
    invalid: str  # what a load balancer naming a missing one is told is invalid
    validator: str  # the provider's method that checks the options

    def validate(self, provider: Provider, options: dict[str, Any]) -> None:
        getattr(provider, self.validator)(options)


FLAVORS = Offer(models.lbaas_flavors, "id", "Flavor", "flavor", models.lbaas_flavor_profiles,
                "Flavor profile", "flavor_profile_id", "flavor_data", "flavor_id",
                "flavor_id", "validate_flavor")
ZONES = Offer(models.lbaas_availability_zones, "name", "Availability Zone",
              "availability_zone", models.lbaas_availability_zone_profiles,
              "Availability zone profile", "availability_zone_profile_id",
              "availability_zone_data", "availability_zone", "availability zone",
              "validate_availability_zone")
LB = models.lbaas_loadbalancers


def options_of(offer: Offer, text: str) -> dict[str, Any]:
    """A profile's options: a JSON object (Octavia's InvalidOption otherwise)."""
    try:
        found = json.loads(text)
    except ValueError:
        found = None
    if not isinstance(found, dict):
        raise errors.InvalidOption(value=text, option=offer.data)
    return found


def profile_view(offer: Offer, row: Row) -> dict[str, Any]:
    return {"id": row.id, "name": row.name, "provider_name": row.provider_name,
            offer.data: getattr(row, offer.data)}


def offer_view(offer: Offer, row: Row) -> dict[str, Any]:
    view = {"name": row.name, "description": row.description, "enabled": row.enabled,
            offer.reference: getattr(row, offer.reference)}
    if offer.key == "id":
        view = {"id": row.id, **view}
    return view


def profile_row(conn: Connection, offer: Offer, profile_id: str) -> Row:
    row = conn.execute(select(offer.profiles).where(offer.profiles.c.id == profile_id)).first()
    if row is None:
        raise errors.NotFound(resource=offer.profile_noun, id=profile_id)
    return row


def offer_row(conn: Connection, offer: Offer, key: str) -> Row:
    row = conn.execute(select(offer.table).where(offer.table.c[offer.key] == key)).first()
    if row is None:
        raise errors.NotFound(resource=offer.noun, id=key)
    return row


class Catalog:
    """The writes and checks behind the four collections; ``provider(name)``
    is the enabled provider of that name (400 if it is not enabled)."""

    def __init__(self, provider: Callable[[str], Provider]):
        self.provider = provider

    # --- profiles ---------------------------------------------------------------------

    def create_profile(self, conn: Connection, offer: Offer, data: dict[str, Any]
                       ) -> dict[str, Any]:
        offer.validate(self.provider(data["provider_name"]),
                       options_of(offer, data[offer.data]))
        profile_id = new_uuid()
        conn.execute(insert(offer.profiles).values(
            id=profile_id, name=data["name"], provider_name=data["provider_name"],
            **{offer.data: data[offer.data]}))
        return profile_view(offer, profile_row(conn, offer, profile_id))

    def update_profile(self, conn: Connection, offer: Offer, profile_id: str,
                       data: dict[str, Any]) -> dict[str, Any]:
        row = profile_row(conn, offer, profile_id)
        if offer.data in data or "provider_name" in data:
            if self._profile_used(conn, offer, profile_id):
                raise errors.ObjectInUse(object=offer.profile_noun, id=profile_id)
            options = options_of(offer, data.get(offer.data, getattr(row, offer.data)))
            offer.validate(self.provider(data.get("provider_name", row.provider_name)),
                           options)
        if data:
            conn.execute(update(offer.profiles).where(
                offer.profiles.c.id == profile_id).values(**data))
        return profile_view(offer, profile_row(conn, offer, profile_id))

    def delete_profile(self, conn: Connection, offer: Offer, profile_id: str) -> None:
        profile_row(conn, offer, profile_id)
        if self._profile_used(conn, offer, profile_id):
            raise errors.ObjectInUse(object=offer.profile_noun, id=profile_id)
        conn.execute(delete(offer.profiles).where(offer.profiles.c.id == profile_id))

    @staticmethod
    def _profile_used(conn: Connection, offer: Offer, profile_id: str) -> bool:
        return bool(conn.execute(select(func.count()).where(
            offer.table.c[offer.reference] == profile_id)).scalar())

    # --- flavors and availability zones ------------------------------------------------

    def create_offer(self, conn: Connection, offer: Offer, data: dict[str, Any]
                     ) -> dict[str, Any]:
        try:
            profile_row(conn, offer, data[offer.reference])
        except errors.NotFound:
            raise errors.InvalidSubresource(resource=offer.profile_noun,
                                            id=data[offer.reference]) from None
        taken = conn.execute(select(func.count()).where(
            offer.table.c.name == data["name"])).scalar()
        if taken:
            raise errors.RecordAlreadyExists(field=offer.option, name=data["name"])
        values = {"name": data["name"], "description": data.get("description"),
                  "enabled": data.get("enabled", True),
                  offer.reference: data[offer.reference]}
        if offer.key == "id":
            values["id"] = new_uuid()
        conn.execute(insert(offer.table).values(**values))
        return offer_view(offer, offer_row(conn, offer, values[offer.key]))

    def update_offer(self, conn: Connection, offer: Offer, key: str, data: dict[str, Any]
                     ) -> dict[str, Any]:
        offer_row(conn, offer, key)
        if data.get("name") and offer.key == "id":
            taken = conn.execute(select(func.count()).where(
                offer.table.c.name == data["name"], offer.table.c.id != key)).scalar()
            if taken:
                raise errors.RecordAlreadyExists(field=offer.option, name=data["name"])
        if data:
            conn.execute(update(offer.table).where(
                offer.table.c[offer.key] == key).values(**data))
        return offer_view(offer, offer_row(conn, offer, key))

    def delete_offer(self, conn: Connection, offer: Offer, key: str) -> None:
        offer_row(conn, offer, key)
        used = conn.execute(select(func.count()).where(LB.c[offer.lb_column] == key)).scalar()
        if used:
            raise errors.ObjectInUse(object=offer.noun, id=key)
        conn.execute(delete(offer.table).where(offer.table.c[offer.key] == key))

    # --- what a load balancer is created with ------------------------------------------

    def chosen(self, conn: Connection, offer: Offer, key: str) -> tuple[str, dict[str, Any]]:
        """The provider and options of the enabled flavor or zone ``key`` a load
        balancer is created with (Octavia's 400s otherwise)."""
        row = conn.execute(
            select(offer.table.c.enabled, offer.profiles.c.provider_name,
                   offer.profiles.c[offer.data])
            .join(offer.profiles, offer.profiles.c.id == offer.table.c[offer.reference])
            .where(offer.table.c[offer.key] == key)).first()
        if row is None:
            raise errors.Validation(detail=f"Invalid {offer.invalid}.")
        if not row.enabled:
            raise errors.DisabledOption(option=offer.option, value=key)
        return row.provider_name, options_of(offer, row[2])

    def options(self, conn: Connection, offer: Offer, key: str | None) -> dict[str, Any]:
        """The options of a load balancer's flavor or zone ({} without one)."""
        if not key:
            return {}
        text = conn.execute(
            select(offer.profiles.c[offer.data])
            .join(offer.table, offer.profiles.c.id == offer.table.c[offer.reference])
            .where(offer.table.c[offer.key] == key)).scalar()
        return json.loads(text) if text else {}
