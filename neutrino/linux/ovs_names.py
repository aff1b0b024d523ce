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
