"""binding: where and how a port is plugged (host, VIF type and details)."""

from neutrino.definitions import validators as v
from neutrino.definitions.base import Attr, Extension, attrs

HOST_ID = "binding:host_id"
VNIC_TYPE = "binding:vnic_type"
PROFILE = "binding:profile"
VIF_TYPE = "binding:vif_type"
VIF_DETAILS = "binding:vif_details"

VNIC_TYPES = ("normal", "direct", "macvtap", "baremetal", "direct-physical",
              "virtio-forwarder", "smart-nic", "vdpa", "remote-managed",
              "accelerator-direct", "accelerator-direct-physical")
VIF_TYPE_UNBOUND = "unbound"
VIF_TYPE_BINDING_FAILED = "binding_failed"


def _profile(value):
    return v.dict_or_none(value)


EXTENSION = Extension(
    alias="binding",
    name="Port Binding",
    description="Expose port bindings of a virtual port to external application",
    attributes={"ports": attrs(
        Attr(HOST_ID, allow_post=True, allow_put=True, validate=v.string_or_none(255),
             convert=lambda x: "" if x is None else x, hidden=True, sort=True),
        Attr(VNIC_TYPE, allow_post=True, allow_put=True, validate=v.one_of(*VNIC_TYPES),
             sort=True),
        Attr(PROFILE, allow_post=True, allow_put=True, validate=_profile,
             convert=lambda x: {} if x is None else x, hidden=True, filter=False,
             schema={"type": ["object", "null"]}),
        Attr(VIF_TYPE, hidden=True, sort=True),
        Attr(VIF_DETAILS, hidden=True, filter=False),
    )},
)
