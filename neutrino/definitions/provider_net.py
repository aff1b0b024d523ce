"""provider and multi-provider: the segments under a network (admin only)."""

from neutrino.definitions import validators as v
from neutrino.definitions.base import Attr, Extension, attrs

NETWORK_TYPE = "provider:network_type"
PHYSICAL_NETWORK = "provider:physical_network"
SEGMENTATION_ID = "provider:segmentation_id"
PROVIDER_KEYS = (NETWORK_TYPE, PHYSICAL_NETWORK, SEGMENTATION_ID)


def _segmentation_id(value):
    return None if value is None else v.integer_range(*v.UINT32)(value)


def _segments(value):
    if value is None:
        return None
    if not isinstance(value, list) or not value:
        return f"'{value}' is not a non-empty list"
    for segment in value:
        if not isinstance(segment, dict):
            return f"'{segment}' is not a dictionary"
        extra = set(segment) - set(PROVIDER_KEYS)
        if extra:
            return f"Unrecognized attribute(s) '{', '.join(sorted(extra))}'"
        error = (v.string_or_none(255)(segment.get(NETWORK_TYPE))
                 or v.string_or_none(64)(segment.get(PHYSICAL_NETWORK)))
        if error:
            return error
        seg_id = segment.get(SEGMENTATION_ID)
        if seg_id is not None:
            try:
                segment[SEGMENTATION_ID] = v.to_int(seg_id)
            except Exception:  # noqa: BLE001 - reported as a validation message
                return f"'{seg_id}' is not an integer"
            error = _segmentation_id(segment[SEGMENTATION_ID])
            if error:
                return error
    return None


PROVIDER = Extension(
    alias="provider",
    name="Provider Network",
    description="Expose mapping of virtual networks to physical networks",
    attributes={"networks": attrs(
        Attr(NETWORK_TYPE, allow_post=True, allow_put=True, validate=v.string_or_none(255),
             hidden=True),
        Attr(PHYSICAL_NETWORK, allow_post=True, allow_put=True,
             validate=v.string_or_none(64), hidden=True),
        Attr(SEGMENTATION_ID, allow_post=True, allow_put=True, convert=v.to_int_or_none,
             validate=_segmentation_id, hidden=True, int_range=v.UINT32),
    )},
)

MULTI_PROVIDER = Extension(
    alias="multi-provider",
    name="Multi Provider Network",
    description="Expose mapping of virtual networks to multiple physical networks",
    attributes={"networks": attrs(
        Attr("segments", allow_post=True, allow_put=True, validate=_segments, hidden=True,
             filter=False),
    )},
)
