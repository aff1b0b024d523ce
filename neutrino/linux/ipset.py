"""IP sets of addresses for the firewall, replaced atomically with ``ipset restore``.

A rule naming a remote group matches one ``hash:net`` set per group and IP
version, so changing a group's members rewrites one set, not every rule that
names it. Members change by filling a temporary set and swapping it with the
live one: a packet never sees a half-filled set. Sets belong to the network
namespace they are made in.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping

#: the kernel's limit on a set name (IPSET_MAXNAMELEN 32, with the NUL)
MAX_NAME = 31
#: appended to a set's name for its temporary twin during a swap
TEMP_SUFFIX = "T"
FAMILY = {4: "inet", 6: "inet6"}


def set_name(prefix: str, version: int, kind: str, owner_id: str) -> str:
    """``<prefix><4|6><kind>-<id hex>``, cut so that its temporary twin still fits.

    ``kind`` says whose addresses these are (``g``: a security group's members,
    ``a``: an address group's CIDRs); 60+ bits of the id stay, enough not to clash.
    """
    stem = f"{prefix}{version}{kind}-"
    return (stem + owner_id.replace("-", ""))[:MAX_NAME - len(TEMP_SUFFIX)]


def is_ours(name: str, prefix: str) -> bool:
    return (name.startswith(prefix) and len(name) > len(prefix) + 2
            and name[len(prefix)] in "46" and name[len(prefix) + 2] == "-")


def entries(version: int, addresses: Iterable[str]) -> list[str]:
    """The set's entries for ``addresses`` (hosts or CIDRs) of that IP version:
    normalised, without duplicates, sorted; a /0 becomes two halves, since a
    ``hash:net`` cannot hold a zero-length prefix."""
    found: dict[tuple[int, int], str] = {}  # (first address, prefix length) -> entry
    for address in addresses:
        if "/" not in address:  # a host, the common case: ip_address is much cheaper
            ip = ipaddress.ip_address(address)
            if ip.version == version:
                found[int(ip), ip.max_prefixlen] = str(ip)
            continue
        net = ipaddress.ip_network(address, strict=False)
        if net.version != version:
            continue
        for part in net.subnets() if net.prefixlen == 0 else [net]:
            found[int(part.network_address), part.prefixlen] = (
                str(part.network_address) if part.prefixlen == part.max_prefixlen
                else str(part))
    return [found[key] for key in sorted(found)]


def parse_save(saved: str) -> dict[str, set[str]]:
    """Each set of ``ipset save`` output with its entries, as ``entries`` writes them."""
    sets: dict[str, set[str]] = {}
    for line in saved.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] == "create":
            sets.setdefault(words[1], set())
        elif len(words) >= 3 and words[0] == "add":
            sets.setdefault(words[1], set()).add(words[2])
    return sets


def restore_script(sets: Mapping[str, tuple[int, list[str]]]) -> str:
    """``ipset restore`` input making each named set (version, entries) hold
    exactly those entries, by filling its twin and swapping the two."""
    lines: list[str] = []
    for name, (version, members) in sorted(sets.items()):
        temp = name + TEMP_SUFFIX
        options = f"hash:net family {FAMILY[version]}"
        lines += [f"create {name} {options} -exist", f"create {temp} {options} -exist",
                  f"flush {temp}"]
        lines += [f"add {temp} {member} -exist" for member in members]
        lines += [f"swap {temp} {name}", f"destroy {temp}"]
    return "".join(line + "\n" for line in lines)


def destroy_script(names: Iterable[str]) -> str:
    return "".join(f"destroy {name}\n" for name in sorted(names))
