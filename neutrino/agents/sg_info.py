"""The security group data of an L2 agent's ports, kept between syncs.

The firewall is given the whole picture on every change, but the server is
asked only about what a change concerns: a new or changed port, and for a
group whose rules or members changed, one port that brings them. A full sync
asks about every port again.
"""

from __future__ import annotations

from collections.abc import Set

from neutrino.rpc.contracts import l2


class SecurityGroupInfo:
    def __init__(self) -> None:
        self.devices: dict[str, l2.PortDetails] = {}  # device -> its port's details
        self.rules: dict[str, list[l2.SecurityGroupRule]] = {}  # group -> its rules
        self.members: dict[str, dict[l2.IpVersion, list[str]]] = {}  # remote group -> its IPs
        self.address_groups: dict[str, dict[l2.IpVersion, list[str]]] = {}

    def concerned(self, groups: Set[str], changed: Set[str] = frozenset()) -> set[str]:
        """Devices whose answer brings what ``groups`` changing changed: the
        server answers a device with the rules of its groups and the members of
        the groups those rules name, the same for every device, so one member
        of each group (its rules) and one device with a rule naming it (its
        members) are enough however many ports are in it. Not one of the
        ``changed`` devices (asked about anyway): their groups as kept here
        may be the ones they just left, and their answer would not bring them."""
        wanted: set[str] = set()
        for group in groups:
            naming = {g for g, rules in self.rules.items() if any(
                group in (rule.get("remote_group_id"), rule.get("remote_address_group_id"))
                for rule in rules)}
            for targets in ({group}, naming):
                device = next((d for d, port in self.devices.items() if d not in changed
                               and targets & set(port.get("security_groups") or ())), None)
                if device is not None:
                    wanted.add(device)
        return wanted

    def update(self, answer: l2.SecurityGroupInfo | None, devices: set[str]) -> None:
        """Take the server's ``security_group_info_for_devices`` answer in (None:
        nothing was asked), and keep only ``devices`` (every port filtered here)
        and what they use."""
        if answer is not None:
            for port in (answer.get("devices") or {}).values():
                self.devices[port["device"]] = port
            self.rules.update(answer.get("security_groups") or {})
            self.members.update(answer.get("sg_member_ips") or {})
            self.address_groups.update(answer.get("address_group_ips") or {})
        self.devices = {d: port for d, port in self.devices.items() if d in devices}
        used = {g for port in self.devices.values() for g in port.get("security_groups") or ()}
        self.rules = {g: rules for g, rules in self.rules.items() if g in used}
        rules = [rule for group in self.rules.values() for rule in group]
        remote = {rule.get("remote_group_id") for rule in rules}
        named = {rule.get("remote_address_group_id") for rule in rules}
        self.members = {g: ips for g, ips in self.members.items() if g in remote}
        self.address_groups = {g: ips for g, ips in self.address_groups.items() if g in named}

    def info(self) -> l2.SecurityGroupInfo:
        """The whole, in the server's answer's shape (what the firewall takes)."""
        return {"devices": {port["port_id"]: port for port in self.devices.values()},
                "security_groups": self.rules, "sg_member_ips": self.members,
                "address_group_ips": self.address_groups}
