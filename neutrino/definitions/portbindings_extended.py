"""binding-extended: a port's bindings on several hosts (for live migration).

``/v2.0/ports/{port_id}/bindings/{host}``: one binding is ACTIVE, the others
INACTIVE until ``activate`` swaps them. Admin only. A binding no driver
can make says ``binding_failed`` (Neutron answers 500 there).
"""

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import REQUIRED, Attr, Extension, Resource, attrs
from neutrino.definitions.portbindings import VNIC_TYPES

ACTIVE = "ACTIVE"
INACTIVE = "INACTIVE"


class PortBindingNotFound(exc.NotFound):
    message = "Binding for port %(port_id)s for host %(host)s could not be found."


class PortBindingAlreadyExists(exc.Conflict):
    message = "Binding for port %(port_id)s on host %(host)s already exists."


class PortBindingAlreadyActive(exc.Conflict):
    message = "Binding for port %(port_id)s on host %(host)s is already active."


RESOURCE = Resource(
    name="binding",
    collection="bindings",
    parent=("ports", "port"),
    member_actions={"activate": "activate_port_binding"},
    attrs=attrs(
        Attr("host", allow_post=True, default=REQUIRED, validate=v.string(255), sort=True),
        Attr("vnic_type", allow_post=True, allow_put=True, default="normal",
             validate=v.one_of(*VNIC_TYPES), sort=True),
        Attr("profile", allow_post=True, allow_put=True, default={},
             convert=lambda x: {} if x is None else x, validate=v.dict_or_none,
             filter=False),
        Attr("vif_type", sort=True),
        Attr("vif_details", filter=False),
        Attr("status", sort=True),
    ),
)

EXTENSION = Extension(
    alias="binding-extended",
    name="Port Bindings Extended",
    description="Expose port bindings of a virtual port to external application",
    resources=(RESOURCE,),
    required=("binding",),
)
