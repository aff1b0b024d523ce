"""local_ip: addresses that instances reach on their own host only
(``/v2.0/local_ips``), each led to the ports associated with it
(``/v2.0/local_ips/{local_ip_id}/port_associations``, one per port, named by
the port's id). Neutron's Local IP API (neutron-lib's ``local_ip``)."""

from __future__ import annotations

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import (
    REQUIRED,
    UNSET,
    Attr,
    Extension,
    Resource,
    attrs,
    standard_attrs,
)

ALIAS = "local_ip"
#: the owner of the port a local IP made for itself on a network
DEVICE_OWNER = "network:local_ip"
TRANSLATE, PASSTHROUGH = "translate", "passthrough"
IP_MODES = (TRANSLATE, PASSTHROUGH)


class LocalIPNotFound(exc.NotFound):
    message = "Local IP %(id)s could not be found."


class LocalIPInUse(exc.InUse):
    message = "Local IP %(id)s is still associated with one or more ports."


class LocalIPNoIP(exc.InvalidInput):
    message = "Specified Port %(port_id)s has no fixed IPs configured."


class LocalIPRequestedIPNotFound(exc.InvalidInput):
    message = "Specified Port %(port_id)s does not have requested IP address: %(ip)s."


class LocalIPNoRequestedIP(exc.InvalidInput):
    message = ("Specified Port %(port_id)s has several IPs, should specify exact IP "
               "address to use for Local IP.")


class LocalIPPortOrNetworkRequired(exc.InvalidInput):
    message = "Either Port ID or Network ID must be specified for Local IP create."


class LocalIPAssociationNotFound(exc.NotFound):
    message = "Local IP %(local_ip_id)s association with port %(port_id)s could not be found."


class LocalIPPortAssociationExists(exc.Conflict):
    """Neutron logs a second association of a port and fails with a 500;
    here it is a conflict."""

    message = "Local IP %(local_ip_id)s is already associated with port %(port_id)s."


class LocalIPNotSupportedOnLinuxBridge(exc.Conflict):
    """Only the Open vSwitch agent enforces local IPs (as in Neutron)."""

    message = ("Port %(port_id)s is bound by the Linux bridge mechanism driver, which does "
               "not enforce Local IPs: only Open vSwitch does.")


LOCAL_IP = Resource(
    name="local_ip",
    collection="local_ips",
    not_found=lambda local_ip_id: LocalIPNotFound(id=local_ip_id),
    taggable=True,  # standard attributes, so tags too, as in Neutron
    attrs={
        **standard_attrs(),
        **attrs(
            Attr("local_port_id", allow_post=True, default=UNSET, validate=v.uuid, sort=True),
            Attr("network_id", allow_post=True, default=UNSET, validate=v.uuid, sort=True),
            Attr("local_ip_address", allow_post=True, default=UNSET, convert=v.canonical_ip,
                 validate=v.ip_address_or_none, sort=True),
            Attr("ip_mode", allow_post=True, default=TRANSLATE, validate=v.one_of(*IP_MODES),
                 sort=True),
        ),
    },
)

PORT_ASSOCIATION = Resource(
    name="port_association",
    collection="port_associations",
    parent=("local_ips", "local_ip"),
    not_found=lambda port_association_id: LocalIPAssociationNotFound(
        local_ip_id=None, port_id=port_association_id),
    attrs=attrs(
        Attr("local_ip_id", filter=False),
        Attr("local_ip_address", sort=True, convert_filter=v.canonical_ip),
        Attr("fixed_port_id", allow_post=True, default=REQUIRED, validate=v.uuid, sort=True),
        Attr("fixed_ip", allow_post=True, default=None, convert=v.canonical_ip,
             validate=v.ip_address_or_none, sort=True),
        Attr("host", sort=True),
        # the local IP's (its owner's, checked by the policy) whatever is given
        Attr("project_id", allow_post=True, validate=v.project_id, sort=True),
        Attr("tenant_id", allow_post=True, validate=v.project_id, visible=False,
             filter=False),
    ),
)

EXTENSION = Extension(
    alias=ALIAS, name="Local IP", description="Support Node Local Virtual IP",
    updated="2021-07-26T10:00:00-00:00",
    resources=(LOCAL_IP, PORT_ASSOCIATION),
)

EXTENSIONS = (EXTENSION,)
