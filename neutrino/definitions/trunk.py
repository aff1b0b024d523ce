"""trunk: a parent port that carries other ports' traffic tagged (its subports),
at ``/v2.0/trunks`` with the member actions ``add_subports``,
``remove_subports`` (PUT) and ``get_subports`` (GET); and trunk-details, the
``trunk_details`` a trunk's parent port shows.

A subport is ``{port_id, segmentation_type, segmentation_id}``; the type is
``vlan`` (ids 1-4094) or ``inherit`` (the type and id of the subport's
network's segment), as Neutron's drivers offer them.
"""

from __future__ import annotations

from typing import Any

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import REQUIRED, Attr, Extension, Resource, attrs, standard_attrs

VLAN, INHERIT = "vlan", "inherit"
#: segmentation type -> its lowest and highest id
SEGMENTATION_TYPES = {VLAN: (1, 4094)}
#: what ``device_owner`` a port takes while it is a subport
SUBPORT_OWNER = "trunk:subport"
DOWN, ACTIVE, BUILD, DEGRADED, ERROR = "DOWN", "ACTIVE", "BUILD", "DEGRADED", "ERROR"


class TrunkNotFound(exc.NotFound):
    message = "Trunk %(trunk_id)s could not be found."


class TrunkPortInUse(exc.InUse):
    message = "Port %(port_id)s is in use by another trunk."


class SubPortNotFound(exc.NotFound):
    message = "SubPort %(port_id)s on trunk %(trunk_id)s could not be found."


class DuplicateSubPort(exc.InUse):
    message = ("segmentation_type %(segmentation_type)s and segmentation_id "
               "%(segmentation_id)s already in use on trunk %(trunk_id)s.")


class ParentPortInUse(exc.InUse):
    message = ("Port %(port_id)s is currently in use and is not eligible for use as a "
               "parent port.")


class SubPortMtuGreaterThanTrunkPortMtu(exc.Conflict):
    message = ("MTU %(port_mtu)s of subport %(port_id)s cannot be greater than MTU "
               "%(trunk_mtu)s of trunk %(trunk_id)s.")


class PortInUseAsTrunkParent(exc.InUse):
    message = "Port %(port_id)s is currently a parent port for trunk %(trunk_id)s."


class PortInUseAsSubPort(exc.InUse):
    message = "Port %(port_id)s is currently a subport for trunk %(trunk_id)s."


class TrunkDisabled(exc.Conflict):
    message = "Trunk %(trunk_id)s is currently disabled."


class TrunkInErrorState(exc.Conflict):
    message = ("Trunk %(trunk_id)s is in error state. Attempt to resolve the error "
               "condition before proceeding.")


def subports(value: Any) -> str | None:
    """Neutron's ``type:subports``: a list of dicts, each with a unique port UUID
    and both segmentation details (or ``segmentation_type: inherit``), no
    segmentation repeated. Unlike Neutron's, an ``inherit`` item does not end
    the checks of the items after it, and unknown keys are refused."""
    if not isinstance(value, list):
        return f"Invalid data format for subports: '{value}' is not a list"
    seen: set[str] = set()
    taken: set[tuple[Any, Any]] = set()
    for item in value:
        if not isinstance(item, dict):
            return f"Invalid data format for subport: '{item}' is not a dict"
        unknown = sorted(str(k) for k in item if k not in (
            "port_id", "segmentation_type", "segmentation_id"))
        if unknown:
            return f"Unrecognized subport attribute(s) '{', '.join(unknown)}'"
        if "port_id" not in item:
            return "A valid port UUID must be specified"
        if v.uuid(item["port_id"]):
            return f"Invalid UUID for subport: '{item['port_id']}'"
        if item["port_id"] in seen:
            return f"Non unique UUID for subport: '{item['port_id']}'"
        seen.add(item["port_id"])
        kind, seg_id = item.get("segmentation_type"), item.get("segmentation_id")
        if kind == INHERIT or len(item) == 1:  # a port alone: what a removal names
            continue
        if not isinstance(kind, str) or not kind or seg_id is None:
            return (f"Invalid subport details '{item}': missing segmentation information. "
                    "Must specify both segmentation_id and segmentation_type")
        if kind not in SEGMENTATION_TYPES:
            return f"Unknown segmentation_type '{kind}'"
        try:
            number = v.to_int(seg_id)
        except exc.NeutronException:
            return f"Invalid subport details: segmentation_id '{seg_id}' is not an integer"
        low, high = SEGMENTATION_TYPES[kind]
        if not low <= number <= high:
            return f"Segmentation ID '{seg_id}' is not in range"
        if (kind, number) in taken:
            return f"Segmentation ID '{seg_id}' for '{item['port_id']}' is not unique"
        taken.add((kind, number))
    return None


def checked_subports(value: Any, segmentation: bool = True) -> list[dict[str, Any]]:
    """``sub_ports`` as the plugin takes them (InvalidInput if not valid): with
    ``segmentation`` (to add them) each with its details, the id an int."""
    error = subports(value)
    if error:
        raise exc.InvalidInput(error_message=error)
    if not segmentation:
        return [dict(item) for item in value]
    checked = []
    for item in value:
        if item.get("segmentation_type") == INHERIT:
            checked.append(dict(item))
        elif len(item) == 1:
            raise exc.InvalidInput(error_message=(
                f"Invalid subport details '{item}': missing segmentation information. "
                "Must specify both segmentation_id and segmentation_type"))
        else:
            checked.append({**item, "segmentation_id": v.to_int(item["segmentation_id"])})
    return checked


def subports_of(body: Any) -> Any:
    """``{"sub_ports": [...]}``, the body of add_subports and remove_subports."""
    if not isinstance(body, dict) or "sub_ports" not in body:
        raise exc.HTTPBadRequest(msg="Invalid input for operation: 'sub_ports' is required.")
    return body["sub_ports"]


RESOURCE = Resource(
    name="trunk",
    collection="trunks",
    taggable=True,
    not_found=TrunkNotFound,
    member_actions={"add_subports": "add_subports", "remove_subports": "remove_subports"},
    member_reads={"get_subports": "get_subports"},
    attrs={
        **standard_attrs(),
        **attrs(
            Attr("admin_state_up", allow_post=True, allow_put=True, default=True,
                 convert=v.to_boolean, validate=v.boolean, sort=True,
                 convert_filter=v.to_boolean),
            Attr("port_id", allow_post=True, default=REQUIRED, validate=v.uuid, sort=True),
            Attr("status", sort=True),
            Attr("sub_ports", allow_post=True, default=[], convert=v.none_to_empty_list,
                 validate=subports, filter=False),
        ),
    },
)

TRUNK = Extension(
    alias="trunk", name="Trunk Extension", description="Provides support for trunk ports",
    updated="2016-01-01T10:00:00-00:00", resources=(RESOURCE,), required=("binding",))

DETAILS = Extension(
    alias="trunk-details", name="Trunk port details",
    description="Expose trunk port details", updated="2016-01-01T10:00:00-00:00",
    attributes={"ports": attrs(Attr("trunk_details", filter=False))}, required=("trunk",))

EXTENSIONS = (TRUNK, DETAILS)
