"""Port attributes that compute services read, each offered by an ML2 extension
driver of its own, as in Neutron: ``numa_affinity_policy``
(port-numa-affinity-policy, for Nova's NUMA placement), ``device_profile``
(port-device-profile, Cyborg's accelerator profile, set once) and ``trusted``
(port-trusted-vif, an admin's to set and see)."""

from __future__ import annotations

from typing import Any

from neutrino.definitions import validators as v
from neutrino.definitions.base import Attr, Extension, attrs

NUMA_AFFINITY_POLICY = "numa_affinity_policy"
NUMA_POLICIES = ("required", "preferred", "legacy")
SOCKET = "socket"
DEVICE_PROFILE = "device_profile"
TRUSTED = "trusted"


def _numa_policy(value: Any) -> str | None:
    if value is None or value in NUMA_POLICIES:
        return None
    return f"'{value}' is not in {[*NUMA_POLICIES, None]}"


def _numa_policy_or_socket(value: Any) -> str | None:
    if value is None or value in (*NUMA_POLICIES, SOCKET):
        return None
    return f"'{value}' is not in {[*NUMA_POLICIES, SOCKET, None]}"


def _string_or_none(value: Any) -> str | None:
    return None if value is None else v.string(255)(value)


NUMA = Extension(
    alias="port-numa-affinity-policy",
    name="Port NUMA affinity policy",
    description="A port says how close to its NUMA node an instance must be placed.",
    updated="2020-07-08T10:00:00-00:00",
    attributes={"ports": attrs(Attr(NUMA_AFFINITY_POLICY, allow_post=True, allow_put=True,
                                    default=None, validate=_numa_policy, filter=False))},
)

NUMA_SOCKET = Extension(
    alias="port-numa-affinity-policy-socket",
    name='Port NUMA affinity policy "socket"',
    description="A port may also ask for an instance on its NUMA node's socket.",
    updated="2024-02-09T10:00:00-00:00",
    attributes={"ports": attrs(Attr(NUMA_AFFINITY_POLICY, allow_post=True, allow_put=True,
                                    default=None, validate=_numa_policy_or_socket,
                                    filter=False))},
    required=("port-numa-affinity-policy",),
)

DEVICE = Extension(
    alias="port-device-profile",
    name="Port device profile",
    description="A port names the accelerator device profile it needs (set on create).",
    updated="2020-12-17T10:00:00-00:00",
    attributes={"ports": attrs(Attr(DEVICE_PROFILE, allow_post=True, default=None,
                                    validate=_string_or_none, filter=False))},
)

TRUSTED_VIF = Extension(
    alias="port-trusted-vif",
    name="Port trusted vif",
    description="An admin marks a port trusted (its VF may change its MAC, go "
                "promiscuous); others do not see the mark.",
    updated="2024-07-10T10:00:00-00:00",
    attributes={"ports": attrs(Attr(TRUSTED, allow_post=True, allow_put=True, default=None,
                                    convert=v.to_boolean, admin_only=True,
                                    hidden=True, filter=False))},
    required=("binding",),
)

EXTENSIONS = (NUMA, NUMA_SOCKET, DEVICE, TRUSTED_VIF)
