"""segment: the segments of a network as a resource of their own (admin only)."""

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import REQUIRED, Attr, Extension, Resource, attrs


class SegmentNotFound(exc.NotFound):
    message = "Segment %(segment_id)s could not be found."


def _none_or_text(value: str) -> str | None:
    return value or None


RESOURCE = Resource(
    name="segment",
    collection="segments",
    not_found=SegmentNotFound,
    attrs=attrs(
        Attr("id", validate=v.uuid, sort=True),
        Attr("network_id", allow_post=True, default=REQUIRED, validate=v.uuid, sort=True),
        Attr("name", allow_post=True, allow_put=True, default=None,
             validate=v.string_or_none(255), sort=True),
        Attr("description", allow_post=True, allow_put=True, default="",
             validate=v.string(255), sort=True),
        Attr("network_type", allow_post=True, default=REQUIRED, validate=v.string(32),
             sort=True),
        Attr("physical_network", allow_post=True, default=None,
             validate=v.string_or_none(64), sort=True),
        Attr("segmentation_id", allow_post=True, default=None, convert=v.to_int_or_none,
             validate=lambda x: None if x is None else v.integer_range(*v.UINT32)(x),
             sort=True, int_range=v.UINT32),
        Attr("created_at", sort=True, filter=False),
        Attr("updated_at", sort=True, filter=False),
        Attr("revision_number", sort=True, convert_filter=v.to_int),
    ),
)

EXTENSION = Extension(
    alias="segment",
    name="Segment",
    description="Segments extension.",
    resources=(RESOURCE,),
    # a subnet on a segment (routed networks: the segments service plugin)
    attributes={"subnets": attrs(Attr("segment_id", allow_post=True, allow_put=True,
                                      default=None, validate=v.uuid_or_none,
                                      convert_filter=_none_or_text))},
)

STANDARD_ATTRS = Extension(
    alias="standard-attr-segment",
    name="Standard Attribute Segment Extension",
    description="Segments carry a description, timestamps and a revision number.",
    updated="2018-04-09T10:00:00-00:00",
    required=("segment",),
)

L2_ADJACENCY = Extension(
    alias="l2_adjacency",
    name="L2 Adjacency",
    description="A network says whether all its addresses are on one L2 domain.",
    updated="2016-04-12T16:00:00-00:00",
    attributes={"networks": attrs(Attr("l2_adjacency", filter=False))},
)

IP_ALLOCATION = Extension(
    alias="ip_allocation",
    name="IP Allocation",
    description="A port on a routed network gets its addresses once its host is known.",
    updated="2016-06-10T23:00:00-07:00",
    attributes={"ports": attrs(Attr("ip_allocation", filter=False))},
    required=("segment",),
)

SEGMENT_ID_WRITABLE = Extension(
    alias="subnet-segmentid-writable",
    name="Subnet SegmentID (writable)",
    description="A subnet joins the segment of a network that has only one.",
    updated="2018-03-12T00:00:00-00:00",
    required=("segment",),
)

PEER_HOST_ROUTES = Extension(
    alias="segments-peer-subnet-host-routes",
    name="Segments peer-subnet host routes",
    description="The subnets of a routed network route to each other's segments.",
    updated="2023-03-02T00:00:00-00:00",
    required=("segment",),
)
