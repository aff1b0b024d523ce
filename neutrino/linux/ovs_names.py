"""Open vSwitch names and numbers that code which never talks to OVS needs too
(the defaults of the ``[ovs]`` options, say).

Kept apart from ``neutrino.linux.ovs``: importing that imports the ``ovs``
library, which imports eventlet whenever eventlet is installed (a test
dependency brings it into the same virtualenv); agents that do not use OVS
import this module only.
"""

from __future__ import annotations

DEFAULT_OVSDB = "unix:/var/run/openvswitch/db.sock"
#: the access VLAN of ports that must pass nothing (not yet known, admin down)
DEAD_VLAN = 4095
#: an instance's trunk parent is plugged into a bridge of its trunk's, not br-int
TRUNK_BRIDGE_PREFIX = "tbr-"


def trunk_bridge_name(trunk_id: str) -> str:
    """``tbr-<trunk id[:11]>``: the hypervisor names it, the OVS agent finds it."""
    return f"{TRUNK_BRIDGE_PREFIX}{trunk_id[:11]}"
