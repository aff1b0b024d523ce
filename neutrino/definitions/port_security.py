"""port-security: whether a network's ports (default) or one port are filtered."""

from neutrino.definitions import validators as v
from neutrino.definitions.base import Attr, Extension, attrs

ENABLED = "port_security_enabled"

EXTENSION = Extension(
    alias="port-security",
    name="Port Security",
    description="Provides port security",
    attributes={
        "networks": attrs(Attr(ENABLED, allow_post=True, allow_put=True, convert=v.to_boolean)),
        "ports": attrs(Attr(ENABLED, allow_post=True, allow_put=True, convert=v.to_boolean)),
    },
)
