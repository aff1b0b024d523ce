"""``[ovn]``: Neutron's options of the OVN driver and its metadata agent, by
Neutron's names (a Neutron ``ml2_conf.ini``'s ``[ovn]`` section reads as is)."""

from __future__ import annotations

from neutrino.config import Opt, OptGroup, choice, int_range, parse_bool, parse_list


def ovsdb_remotes(text: str) -> str:
    """One or more OVSDB remotes, comma-separated (a clustered database's members)."""
    for remote in text.split(","):
        kind, _, where = remote.strip().partition(":")
        if kind not in ("tcp", "unix") or not where:
            raise ValueError(f"{remote.strip()!r} is not tcp:IP:PORT or unix:PATH "
                             "(ssl: is not supported yet)")
    return ",".join(remote.strip() for remote in text.split(","))


OVN = OptGroup("ovn", [
    Opt("ovn_nb_connection", ovsdb_remotes, "tcp:127.0.0.1:6641",
        "The Northbound database: tcp:IP:PORT or unix:PATH, or the members of a "
        "cluster, comma-separated."),
    Opt("ovn_sb_connection", ovsdb_remotes, "tcp:127.0.0.1:6642",
        "The Southbound database (as ovn_nb_connection)."),
    Opt("ovsdb_connection_timeout", int_range(1), 180,
        "Seconds a Northbound or Southbound transaction may take."),
    Opt("ovn_l3_scheduler", choice("leastloaded", "chance"), "leastloaded",
        "How a router's gateway port is given its gateway chassis."),
    Opt("ovn_metadata_enabled", parse_bool, False,
        "Give each network a metadata port and instances a route to it "
        "(neutrino-ovn-metadata-agent serves it on every chassis)."),
    Opt("enable_distributed_floating_ip", parse_bool, False,
        "Floating IPs NATed on the instance's chassis rather than the gateway's."),
    Opt("dns_servers", parse_list, [],
        "DNS servers DHCP gives instances of subnets that name none."),
    Opt("neutron_sync_mode", choice("off", "log", "repair"), "log",
        "What neutrino-ovn-db-sync does by default."),
])
