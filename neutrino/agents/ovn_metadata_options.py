"""The OVN metadata agent's options, apart from the agent: other commands name
the options it reads (in a config file they share with it) without importing
the agent, which imports the ovs library."""

from __future__ import annotations

from neutrino.agents.metadata import OPTIONS as METADATA_OPTIONS
from neutrino.config import Opt, OptGroup
from neutrino.linux.ovs_names import DEFAULT_OVSDB
from neutrino.ovn.options import OVN

BINARY = "neutrino-ovn-metadata-agent"

OPTIONS = (
    *METADATA_OPTIONS,
    # of the server's [ovn] options, those the agent reads
    OptGroup("ovn", [opt for opt in OVN.opts
                     if opt.name in ("ovn_sb_connection", "ovsdb_connection_timeout")]),
    OptGroup("ovs", [
        Opt("ovsdb_connection", str, DEFAULT_OVSDB,
            "The chassis' Open vSwitch database: its OVN chassis name (system-id) and "
            "bridge (ovn-bridge), where the metadata ports are plugged."),
    ]),
)
