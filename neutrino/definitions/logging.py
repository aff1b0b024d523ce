"""logging: packet logs of security groups (/v2.0/log/logs) and the kinds of
resource that the loaded log drivers can log (/v2.0/log/loggable-resources).

Which ``resource_type`` values are accepted is not fixed here: the logging
plugin asks its drivers (``services/logging/drivers.py``), so a service that
brings a loggable resource of its own (FWaaS's ``firewall_group``) adds a
driver, not a definition.
"""

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import REQUIRED, Attr, Extension, Resource, attrs, standard_attrs

ALIAS = "logging"
SECURITY_GROUP = "security_group"
EVENTS = ("ACCEPT", "DROP", "ALL")


class LogResourceNotFound(exc.NotFound):
    message = "Log resource %(log_id)s could not be found."


class InvalidLogResourceType(exc.InvalidInput):
    message = "Invalid log resource_type: %(resource_type)s."


class LoggingTypeNotSupported(exc.Conflict):
    message = "Logging type %(log_type)s is not supported on port %(port_id)s."


class TargetResourceNotFound(exc.NotFound):
    message = "Target resource %(target_id)s could not be found."


class ResourceNotFound(exc.NotFound):
    message = "Resource %(resource_id)s could not be found."


class InvalidResourceConstraint(exc.InvalidInput):
    message = ("Invalid resource constraint between resource (%(resource)s "
               "%(resource_id)s) and target resource (%(target_resource)s %(target_id)s).")


LOG = Resource(
    prefix="log",
    name="log",
    collection="logs",
    not_found=LogResourceNotFound,
    attrs={
        **{k: a for k, a in standard_attrs().items() if k != "tags"},
        **attrs(
            Attr("resource_type", allow_post=True, default=REQUIRED,
                 validate=v.string(36), sort=True),
            Attr("resource_id", allow_post=True, default=None, validate=v.uuid_or_none,
                 sort=True),
            Attr("target_id", allow_post=True, default=None, validate=v.uuid_or_none,
                 sort=True),
            Attr("event", allow_post=True, default="ALL", validate=v.one_of(*EVENTS)),
            Attr("enabled", allow_post=True, allow_put=True, default=True,
                 convert=v.to_boolean, convert_filter=v.to_boolean, sort=True),
        ),
    },
)

LOGGABLE_RESOURCE = Resource(
    prefix="log",
    hyphenated=True,  # /v2.0/log/loggable-resources
    name="loggable_resource",
    collection="loggable_resources",
    attrs=attrs(Attr("type", sort=True)),
)

EXTENSION = Extension(
    ALIAS, "Logging API Extension",
    "Provides a logging API for resources such as security group and firewall.",
    updated="2017-01-01T10:00:00-00:00", resources=(LOG, LOGGABLE_RESOURCE),
)
