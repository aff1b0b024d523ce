"""keepalived in a highly available router's namespace: VRRP elects which of
the router's hosts carries its addresses.

Each host of an HA router has its namespace with the same devices and
addresses configured, but only the active one holds them: keepalived adds
the router's addresses (``virtual_ipaddress_excluded``: the gateway's and
interfaces' addresses, the floating IPs) and routes (``virtual_routes``) when
it becomes master, removes them when it becomes backup, and sends gratuitous
ARPs for them on taking over. The instances on the HA network (one port per
host, ``ha-<port id[:11]>``) exchange the adverts; their own address (a
169.254.192.0/18 one) stays, and the one VIP of that link
(``virtual_ipaddress``, 169.254.0.<vr_id>/24) tells which host is master.
Every instance starts as BACKUP with ``nopreempt``: a master is not
displaced by a host that comes back, so traffic moves only on failure, as
Neutron configures it.
With ``Instance.notify`` (conntrackd's script, ``neutrino.linux.conntrackd``)
keepalived runs it with the new role at each change: master, backup, fault.

``converge`` writes the configuration and starts keepalived (or has it
reload it, SIGHUP) in the namespace, its files in the router's directory;
``state`` reads which role the host holds from the device; ``stop`` ends it.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from neutrino.linux import process
from neutrino.linux.errors import HostError

CONF, PID, VRRP_PID = "keepalived.conf", "keepalived.pid", "keepalived-vrrp.pid"
#: the HA link's VIP: 169.254.0.<vr_id>/24 on the ha- device tells the master
VIP_NETWORK = ipaddress.ip_network("169.254.0.0/24")
ACTIVE, STANDBY, UNKNOWN = "active", "standby", "unknown"
AUTH_TYPES = ("AH", "PASS")


class KeepalivedError(HostError):
    """keepalived did not start; the message says why."""


@dataclass(frozen=True)
class Instance:
    """One HA router's VRRP instance on this host."""

    router_id: str
    interface: str  # the ha- device
    vr_id: int  # 1..255, one per router on its HA network
    priority: int = 50
    advert_int: int = 2  # seconds (Neutron's ha_vrrp_advert_int)
    #: (auth_type: AH or PASS, password), or None
    auth: tuple[str, str] | None = None
    #: (address/prefix, device) the master holds (gateway, interfaces, floating IPs)
    addresses: Sequence[tuple[str, str]] = field(default_factory=tuple)
    #: (destination, nexthop, device) the master routes by
    routes: Sequence[tuple[str, str, str]] = field(default_factory=tuple)
    #: a script run with the new role (master, backup, fault) at each change
    #: (conntrackd's), or None
    notify: str | None = None

    @property
    def vip(self) -> str:
        """The HA link's VIP, which only the master holds."""
        return f"{VIP_NETWORK.network_address + self.vr_id}/{VIP_NETWORK.prefixlen}"


def render(instance: Instance) -> str:
    """keepalived.conf of one router."""
    lines = ["global_defs {",
             f"    router_id neutrino-{instance.router_id[:20]}",
             "    vrrp_garp_master_refresh 0",
             "}",
             f"vrrp_instance VR_{instance.vr_id} {{",
             "    state BACKUP",
             f"    interface {instance.interface}",
             f"    virtual_router_id {instance.vr_id}",
             f"    priority {instance.priority}",
             "    nopreempt",
             f"    advert_int {instance.advert_int}",
             "    garp_master_delay 60",
             f"    track_interface {{\n        {instance.interface}\n    }}"]
    if instance.auth is not None:
        auth_type, password = instance.auth
        lines += ["    authentication {", f"        auth_type {auth_type}",
                  f"        auth_pass {password}", "    }"]
    lines += ["    virtual_ipaddress {", f"        {instance.vip} dev {instance.interface}",
              "    }"]
    if instance.addresses:
        lines.append("    virtual_ipaddress_excluded {")
        lines += [f"        {cidr} dev {device}" for cidr, device in instance.addresses]
        lines.append("    }")
    if instance.routes:
        lines.append("    virtual_routes {")
        lines += [f"        {destination} via {nexthop} dev {device}"
                  for destination, nexthop, device in instance.routes]
        lines.append("    }")
    if instance.notify is not None:
        lines += [f'    notify_{role} "{instance.notify} {role}"'
                  for role in ("master", "backup", "fault")]
    lines.append("}")
    return "\n".join(lines) + "\n"


def _path(state_dir: str, name: str) -> str:
    return os.path.join(os.path.abspath(state_dir), name)


def command(state_dir: str) -> list[str]:
    """keepalived, VRRP only, its files in ``state_dir``."""
    return ["keepalived", "--vrrp", "-f", _path(state_dir, CONF),
            "-p", _path(state_dir, PID), "-r", _path(state_dir, VRRP_PID)]


def keepalived_pid(state_dir: str) -> int | None:
    """The pid of the keepalived of ``state_dir`` (its parent process), or None."""
    pid_file = _path(state_dir, PID)
    return process.pid_of(pid_file, pid_file)


def _clear_leftovers(state_dir: str, wait: float) -> None:
    """What a keepalived that was killed leaves: its VRRP child, which runs on
    (holding the addresses if it was master), and the pid files. A keepalived
    started while they name a live process, or a zombie init has not reaped
    yet, takes itself for a second copy and leaves."""
    pid_file = _path(state_dir, VRRP_PID)
    pid = process.pid_of(pid_file, pid_file)
    if pid is not None:
        process.terminate(pid, wait)
    for name in (PID, VRRP_PID):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(_path(state_dir, name))


def converge(namespace: str, state_dir: str, instance: Instance, wait: float = 5.0) -> int:
    """keepalived running ``instance`` in ``namespace``: started, told to reload
    a changed configuration, or left alone; its pid."""
    if keepalived_pid(state_dir) is None:
        _clear_leftovers(state_dir, wait)
    return process.run_configured(
        namespace, _path(state_dir, CONF), render(instance), command(state_dir),
        lambda: keepalived_pid(state_dir),
        f"keepalived of router {instance.router_id} in {namespace}", wait=wait,
        error=KeepalivedError)


def state(addresses: Sequence[str], instance: Instance) -> str:
    """The host's role, from the addresses of the ha- device: active when it
    holds the HA link's VIP."""
    return ACTIVE if instance.vip in addresses else STANDBY


def stop(state_dir: str, wait: float = 5.0) -> None:
    """Stop the keepalived of ``state_dir`` if one runs (it takes its addresses
    away as it goes); forget its files."""
    pid = keepalived_pid(state_dir)
    if pid is not None:
        process.terminate(pid, wait)
    for name in (PID, VRRP_PID, CONF):
        try:
            os.unlink(_path(state_dir, name))
        except FileNotFoundError:
            pass
