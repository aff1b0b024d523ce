"""metering: labels of traffic counted on routers (``/v2.0/metering/metering-labels``)
and the rules that say which traffic a label counts
(``/v2.0/metering/metering-label-rules``); metering_source_and_destination_fields
adds ``source_ip_prefix`` and ``destination_ip_prefix`` to rules.

As in Neutron, neither labels nor rules are updated, and they carry no
standard attributes (no tags, timestamps or revision). A rule's project is
its label's.
"""

from __future__ import annotations

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import REQUIRED, Attr, Extension, Resource, attrs

DIRECTIONS = ("ingress", "egress")
PREFIXES = ("remote_ip_prefix", "source_ip_prefix", "destination_ip_prefix")


class MeteringLabelNotFound(exc.NotFound):
    message = "Metering label '%(label_id)s' does not exist."


class MeteringLabelRuleNotFound(exc.NotFound):
    message = "Metering label rule '%(rule_id)s' does not exist."


class MeteringLabelRuleOverlaps(exc.Conflict):
    message = ("Metering label rule with remote_ip_prefix '%(remote_ip_prefix)s' overlaps "
               "another.")


class Invalid(exc.BadRequest):
    """Neutron raises its bare ``Invalid`` for these, which it answers with a
    500; the caller's mistake is a 400 here, under the same type name."""

    message = "%(error_message)s"


def _project(value: object) -> str | None:
    return v.project_id(value)


LABEL = Resource(
    prefix="metering",
    hyphenated=True,
    name="metering_label",
    collection="metering_labels",
    not_found=lambda metering_label_id: MeteringLabelNotFound(label_id=metering_label_id),
    attrs=attrs(
        Attr("id", validate=v.uuid, sort=True),
        Attr("name", allow_post=True, default="", validate=v.string(255), sort=True),
        Attr("description", allow_post=True, default="", validate=v.string(1024), sort=True),
        Attr("project_id", allow_post=True, validate=_project, sort=True),
        Attr("tenant_id", allow_post=True, validate=_project, sort=True),
        Attr("shared", allow_post=True, default=False, convert=v.to_boolean,
             validate=v.boolean, sort=True),
    ),
)

RULE = Resource(
    prefix="metering",
    hyphenated=True,
    name="metering_label_rule",
    collection="metering_label_rules",
    not_found=lambda metering_label_rule_id: MeteringLabelRuleNotFound(
        rule_id=metering_label_rule_id),
    attrs=attrs(
        Attr("id", validate=v.uuid, sort=True),
        Attr("metering_label_id", allow_post=True, default=REQUIRED, validate=v.uuid,
             sort=True),
        Attr("direction", allow_post=True, default=REQUIRED,
             validate=v.one_of(*DIRECTIONS), sort=True),
        Attr("excluded", allow_post=True, default=False, convert=v.to_boolean,
             validate=v.boolean, sort=True),
        Attr("remote_ip_prefix", allow_post=True, default=None,
             validate=v.subnet_cidr_or_none, sort=True),
        # checked by the plugin, with Neutron's messages
        Attr("source_ip_prefix", allow_post=True, default=None, sort=True),
        Attr("destination_ip_prefix", allow_post=True, default=None, sort=True),
        Attr("project_id", allow_post=True, validate=_project, sort=True),
        Attr("tenant_id", allow_post=True, validate=_project, sort=True),
    ),
)

EXTENSIONS = (
    Extension("metering", "Neutron Metering", "Neutron Metering extension.",
              updated="2013-06-12T10:00:00-00:00", resources=(LABEL, RULE)),
    Extension("metering_source_and_destination_fields",
              "Neutron Metering with source and destination filtering",
              "Neutron Metering extension that enables the use of source and destination "
              "IP prefixes to create metering label rules.",
              updated="2020-08-21T08:12:00-00:00", required=("metering",)),
)
