"""flavors: an operator's named offers of an advanced service (``/v2.0/flavors``),
each served by the drivers of its service profiles (``/v2.0/service_profiles``),
bound to it at ``/v2.0/flavors/{flavor_id}/service_profiles[/{profile_id}]``.

Neither flavors nor profiles belong to a project, and neither carries standard
attributes (no tags, timestamps or revision), as in Neutron. A flavor's
``service_type`` names a loaded service plugin's type (``L3_ROUTER_NAT``,
``VPN``...); a profile's driver, one of the ``[service_providers]`` drivers.
"""

from __future__ import annotations

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import REQUIRED, Attr, Extension, Resource, attrs

#: what a flavor or profile description may hold (the columns' width)
DESCRIPTION_MAX = 1024
DRIVER_MAX = 1024
METAINFO_MAX = 4096


class FlavorNotFound(exc.NotFound):
    message = "Flavor %(flavor_id)s could not be found."


class FlavorInUse(exc.InUse):
    message = "Flavor %(flavor_id)s is used by some service instance."


class ServiceProfileNotFound(exc.NotFound):
    message = "Service Profile %(sp_id)s could not be found."


class ServiceProfileInUse(exc.InUse):
    message = "Service Profile %(sp_id)s is used by some service instance."


class FlavorServiceProfileBindingExists(exc.Conflict):
    message = "Service Profile %(sp_id)s is already associated with flavor %(fl_id)s."


class FlavorServiceProfileBindingNotFound(exc.NotFound):
    message = "Service Profile %(sp_id)s is not associated with flavor %(fl_id)s."


class ServiceProfileDriverNotFound(exc.NotFound):
    message = "Service Profile driver %(driver)s could not be found."


class ServiceProfileEmpty(exc.InvalidInput):
    message = "Service Profile needs either a driver or metainfo."


class FlavorDisabled(exc.ServiceUnavailable):
    message = "Flavor is not enabled."


class ServiceProfileDisabled(exc.ServiceUnavailable):
    message = "Service Profile is not enabled."


class InvalidServiceType(exc.InvalidInput):
    """A flavor's service type that no loaded plugin offers (Neutron's
    ``service_plugin_type`` validator raises this one)."""

    message = "Invalid service type: %(service_type)s."


class InvalidFlavorServiceType(exc.InvalidInput):
    """A flavor given to a service that does not serve its service type."""

    message = "Invalid service type %(service_type)s."


def _enabled() -> Attr:
    return Attr("enabled", allow_post=True, allow_put=True, default=True,
                convert=v.to_boolean, validate=v.boolean, sort=True,
                convert_filter=v.to_boolean)


FLAVOR = Resource(
    name="flavor",
    collection="flavors",
    not_found=lambda flavor_id: FlavorNotFound(flavor_id=flavor_id),
    attrs=attrs(
        Attr("id", validate=v.uuid, sort=True),
        Attr("name", allow_post=True, allow_put=True, default="", validate=v.string(255),
             sort=True),
        Attr("description", allow_post=True, allow_put=True, default="",
             validate=v.string_or_none(DESCRIPTION_MAX), sort=True),
        # a string here; which types are offered, the plugin knows (what is loaded)
        Attr("service_type", allow_post=True, default=REQUIRED, validate=v.string(None),
             sort=True),
        # Neutron takes and ignores them on create and update; here they bind
        Attr("service_profiles", allow_post=True, allow_put=True, default=[],
             convert=v.none_to_empty_list, validate=v.uuid_list, filter=False),
        _enabled(),
    ),
)

SERVICE_PROFILE = Resource(
    name="service_profile",
    collection="service_profiles",
    not_found=lambda service_profile_id: ServiceProfileNotFound(sp_id=service_profile_id),
    attrs=attrs(
        Attr("id", validate=v.uuid, sort=True),
        Attr("description", allow_post=True, allow_put=True, default="",
             validate=v.string_or_none(DESCRIPTION_MAX), sort=True),
        Attr("driver", allow_post=True, allow_put=True, default="",
             validate=v.string(DRIVER_MAX), sort=True),
        Attr("metainfo", allow_post=True, allow_put=True, default="",
             validate=v.string_or_none(METAINFO_MAX), sort=True, filter=False),
        _enabled(),
    ),
)

#: a flavor's bindings: POST {"service_profile": {"id": ...}} binds a profile
FLAVOR_SERVICE_PROFILE = Resource(
    name="service_profile",
    collection="service_profiles",
    parent=("flavors", "flavor"),
    attrs=attrs(
        Attr("id", allow_post=True, default=REQUIRED, validate=v.uuid, sort=True),
    ),
)

EXTENSION = Extension(
    alias="flavors",
    name="Neutron Service Flavors",
    description="Flavor specification for Neutron advanced services.",
    updated="2015-09-17T10:00:00-00:00",
    resources=(FLAVOR, SERVICE_PROFILE, FLAVOR_SERVICE_PROFILE),
)
