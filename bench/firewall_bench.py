"""Firewall benchmark: ``IptablesFirewall.apply`` on a host with many ports.

    .venv/bin/python bench/firewall_bench.py [--ports 500] [--variant default|groups]
                                             [--module path/to/iptables_firewall.py]

Root. Everything runs in one namespace it makes and always removes; no device
is needed (physdev matches name taps that need not exist) and no traffic is
sent. ``info`` is shaped like the server's ``security_group_info_for_devices``:

* ``default``: every port in one default group (ingress from the group, egress
  anything; IPv4 and IPv6), each port with one IPv4 and one IPv6 address;
* ``groups``: three groups, each port in one or two of them, with port-range,
  single-port, ICMP and cross-group rules.

It prints the milliseconds of: the first apply of N ports (a fresh firewall
object); N+1 (one port added); back to N (one port removed); one rule added to
a group; one member leaving its group (the port moved to an empty group); and
an apply with nothing changed. ``--module`` loads ``IptablesFirewall`` from
another file (an older copy, for before/after figures).
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.dataplane import sandbox  # noqa: E402

GROUPS = [str(uuid.UUID(int=n + 1)) for n in range(4)]  # the last one stays empty


def load(path: str | None) -> type:
    """``IptablesFirewall`` of this tree, or of the file at ``path``."""
    if path is None:
        from neutrino.linux.iptables_firewall import IptablesFirewall
        return IptablesFirewall
    spec = importlib.util.spec_from_file_location("firewall_under_test", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module.IptablesFirewall


def rule(group: str, direction: str, ethertype: str = "IPv4", protocol: str | None = None,
         low: int | None = None, high: int | None = None,
         remote_group: str | None = None, prefix: str | None = None) -> dict:
    return {"direction": direction, "ethertype": ethertype, "protocol": protocol,
            "port_range_min": low, "port_range_max": high, "remote_ip_prefix": prefix,
            "remote_group_id": remote_group, "security_group_id": group}


def default_rules(group: str) -> list[dict]:
    return [rule(group, "ingress", v, remote_group=group) for v in ("IPv4", "IPv6")] + [
        rule(group, "egress", v) for v in ("IPv4", "IPv6")]


def varied_rules(group: str, other: str) -> list[dict]:
    return [*default_rules(group),
            rule(group, "ingress", "IPv4", "tcp", 8000, 8100, remote_group=other),
            rule(group, "ingress", "IPv4", "tcp", 22, 22, prefix="192.0.2.0/24"),
            rule(group, "ingress", "IPv6", "udp", 5000, 5999, remote_group=other),
            rule(group, "ingress", "IPv4", "icmp", prefix="0.0.0.0/0"),
            rule(group, "egress", "IPv4", "udp", 53, 53, prefix="198.51.100.53/32")]


def make_port(n: int, groups: list[str]) -> dict:
    port_id = str(uuid.UUID(int=(n << 96) + 0xABC))  # n in the 11 characters names keep
    return {"device": f"tap{port_id[:11]}", "port_id": port_id,
            "mac_address": f"fa:16:3e:{n >> 16 & 255:02x}:{n >> 8 & 255:02x}:{n & 255:02x}",
            "fixed_ips": [{"subnet_id": "s4", "ip_address": f"10.{n >> 16 & 255}.{n >> 8 & 255}."
                                                            f"{n & 255}"},
                          {"subnet_id": "s6", "ip_address": f"fd00::{n:x}"}],
            "allowed_address_pairs": [], "port_security_enabled": True,
            "security_groups": groups, "device_owner": "compute:nova"}


def make_info(count: int, variant: str) -> dict:
    """``count`` ports (numbered from 1) in the variant's groups."""
    if variant == "default":
        rules = {GROUPS[0]: default_rules(GROUPS[0])}
        membership = [[GROUPS[0]] for _ in range(count)]
    else:
        rules = {g: varied_rules(g, GROUPS[(i + 1) % 3]) for i, g in enumerate(GROUPS[:3])}
        membership = [[GROUPS[n % 3]] + ([GROUPS[(n + 1) % 3]] if n % 5 == 0 else [])
                      for n in range(count)]
    rules[GROUPS[3]] = []
    info: dict[str, Any] = {"devices": {}, "security_groups": rules, "sg_member_ips": {}}
    for n, groups in enumerate(membership, start=1):
        add_port(info, make_port(n, groups))
    return info


def add_port(info: dict, port: dict) -> None:
    info["devices"][port["port_id"]] = port
    for group in port["security_groups"]:
        owned = info["sg_member_ips"].setdefault(group, {"IPv4": [], "IPv6": []})
        for ip in port["fixed_ips"]:
            owned["IPv6" if ":" in ip["ip_address"] else "IPv4"].append(ip["ip_address"])


def remove_port(info: dict, port_id: str) -> None:
    port = info["devices"].pop(port_id)
    addresses = {ip["ip_address"] for ip in port["fixed_ips"]}
    for group in port["security_groups"]:
        owned = info["sg_member_ips"][group]
        for version in ("IPv4", "IPv6"):
            owned[version] = [a for a in owned[version] if a not in addresses]


def timed(action: Callable[[], None], repeat: int = 1) -> float:
    """The median milliseconds of ``repeat`` runs."""
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        action()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def scenario(firewall_class: type, namespace: str, count: int, variant: str) -> dict[str, float]:
    firewall = firewall_class(namespace=namespace)
    info = make_info(count, variant)
    figures = {"first apply": timed(lambda: firewall.apply(info))}
    figures["no change"] = timed(lambda: firewall.apply(info))

    grown = copy.deepcopy(info)
    add_port(grown, make_port(count + 1, [GROUPS[0]]))
    figures["port added"] = timed(lambda: firewall.apply(grown))
    figures["port removed"] = timed(lambda: firewall.apply(info))

    ruled = copy.deepcopy(info)
    ruled["security_groups"][GROUPS[0]].append(rule(GROUPS[0], "ingress", "IPv4", "tcp", 22, 22))
    figures["rule added"] = timed(lambda: firewall.apply(ruled))

    left = copy.deepcopy(ruled)
    leaving = make_port(1, [GROUPS[0]])["port_id"]
    port = left["devices"][leaving]
    remove_port(left, leaving)
    port["security_groups"] = [GROUPS[3]]
    add_port(left, port)
    figures["member left"] = timed(lambda: firewall.apply(left))
    firewall.remove_all()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ports", type=int, default=500)
    parser.add_argument("--variant", choices=("default", "groups"), default="default")
    parser.add_argument("--module", help="an iptables_firewall.py to load instead")
    args = parser.parse_args()
    firewall_class = load(args.module)
    with sandbox() as box:
        namespace = box.namespace("fw")
        figures = scenario(firewall_class, namespace, args.ports, args.variant)
    print(f"{args.variant}, {args.ports} ports ({args.module or 'this tree'}):")
    for what, ms in figures.items():
        print(f"  {what:<14} {ms:8.1f} ms")


if __name__ == "__main__":
    main()
