"""Routed networks, loaded by Neutron's name for them (``service_plugins =
segments``): subnets on segments of a network, each reached by the hosts of
its segment, and ports that get their addresses from their host's segment.

The work is ML2's (the subnets, the ports' addresses and the hosts' segments
are its tables, ``plugins/core/segment_subnets.py``, ``ipam/routed.py``,
``plugins/ml2/host_segments.py``), which turns it on when this plugin is
configured; this plugin names the extensions it brings.
"""

from __future__ import annotations

from neutrino.plugins.base import Plugin


class SegmentsPlugin(Plugin):
    supported_extension_aliases = ("ip_allocation", "subnet-segmentid-writable",
                                   "segments-peer-subnet-host-routes")
