"""network-segment-range: the segmentation ids project networks take, as ranges
an admin manages (``/v2.0/network_segment_ranges``).

The configured ranges ([ml2_type_vlan] network_vlan_ranges, [ml2_type_vxlan]
vni_ranges, ...) show as ``default`` ranges, shared and read-only. An admin
adds ranges, shared or of one project: a project's networks take their ids from
its own ranges first, then from the shared ones less other projects'.
``available`` lists the free ids of a range, ``used`` maps each taken one to
the project of its network.
"""

from __future__ import annotations

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import REQUIRED, Attr, Extension, Resource, attrs, standard_attrs

VLAN = "vlan"
#: the network types a range may be of (those with a loaded type driver are served)
NETWORK_TYPES = (VLAN, "vxlan", "gre", "geneve")
#: every id of any type lies in here (GRE's keys are the widest)
LIMITS = (1, 2 ** 32 - 1)


class NetworkSegmentRangeNotFound(exc.NotFound):
    message = "Network Segment Range %(range_id)s could not be found."


class NetworkSegmentRangeNetTypeNotSupported(exc.BadRequest):
    message = "Network type %(type)s does not support network segment ranges."


class NetworkSegmentRangeReferencedByProject(exc.InUse):
    message = ("Network Segment Range %(range_id)s is referenced by one or more project "
               "networks.")


class NetworkSegmentRangeDefaultReadOnly(exc.BadRequest):
    message = ("Network Segment Range %(range_id)s is a default segment range which could "
               "not be updated or deleted.")


class NetworkSegmentRangeOverlaps(exc.Conflict):
    message = "Network segment range overlaps with range(s) with id %(range_id)s"


# Neutron answers these two with a 500 (they are not of its API's families);
# a bad range is the caller's error, a 400 here.
class NetworkVlanRangeError(exc.BadRequest):
    message = "Invalid network VLAN range: '%(vlan_range)s' - '%(error)s'."


class NetworkTunnelRangeError(exc.BadRequest):
    message = "Invalid network tunnel range: '%(tunnel_range)s' - %(error)s."


def range_error(network_type: str, first: int, last: int, error: str) -> exc.BadRequest:
    """Neutron's error for a bad range of ``network_type``."""
    if network_type == VLAN:
        return NetworkVlanRangeError(vlan_range=f"{first}:{last}", error=error)
    return NetworkTunnelRangeError(tunnel_range=f"{first}:{last}", error=error)


RESOURCE = Resource(
    name="network_segment_range",
    collection="network_segment_ranges",
    taggable=True,
    not_found=lambda network_segment_range_id: NetworkSegmentRangeNotFound(
        range_id=network_segment_range_id),
    attrs={
        **standard_attrs(),
        **attrs(
            # openstacksdk's queries name these too (Neutron's definition makes no
            # filter of them): filters here
            Attr("default", convert_filter=v.to_boolean, sort=True),
            Attr("shared", allow_post=True, default=True, convert=v.to_boolean, sort=True),
            Attr("network_type", allow_post=True, default=REQUIRED,
                 validate=v.one_of(*NETWORK_TYPES), sort=True),
            Attr("physical_network", allow_post=True, default=None,
                 validate=v.string_or_none(64), sort=True),
            Attr("minimum", allow_post=True, allow_put=True, default=REQUIRED,
                 convert=v.to_int, validate=v.integer_range(*LIMITS), sort=True,
                 int_range=v.UINT32),
            Attr("maximum", allow_post=True, allow_put=True, default=REQUIRED,
                 convert=v.to_int, validate=v.integer_range(*LIMITS), sort=True,
                 int_range=v.UINT32),
            Attr("available", filter=False),
            Attr("used", filter=False),
        ),
    },
)

EXTENSION = Extension(
    alias="network-segment-range",
    name="Neutron Network Segment Range",
    description="Provides support for the network segment range management",
    updated="2018-11-29T00:00:00-00:00",
    resources=(RESOURCE,),
    required=("provider",),
)
