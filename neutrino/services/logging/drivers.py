"""Log drivers and loggable resource types: the seam other services log through.

Two registries, both by entry point, so that a service of another package adds
to them without touching this one:

- ``neutrino.loggable_types``: a ``LoggableType`` per ``resource_type``
  (``security_group`` here; FWaaS adds ``firewall_group``): how a log request of
  that type is checked, and which ports' logs the L2 agents are told about;
- ``neutrino.log_drivers``: a ``LogDriver`` per backend, saying which resource
  types it logs, on which ports, and whether this deployment runs it.

The plugin serves a resource type when a running driver logs it and a
``LoggableType`` checks it: that is ``/v2.0/log/loggable-resources``, and any
other ``resource_type`` is ``InvalidLogResourceType``.
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from sqlalchemy.engine import Connection

from neutrino.config import Config
from neutrino.context import Context
from neutrino.definitions.portbindings import VIF_TYPE_BINDING_FAILED, VIF_TYPE_UNBOUND
from neutrino.entry_points import of_group
from neutrino.plugins.base import CorePlugin

LOG = logging.getLogger(__name__)

TYPES_GROUP = "neutrino.loggable_types"
DRIVERS_GROUP = "neutrino.log_drivers"
#: a port that is not bound (yet) is judged by its vnic_type, as in Neutron
UNBOUND = (VIF_TYPE_UNBOUND, VIF_TYPE_BINDING_FAILED)


@dataclass(frozen=True)
class Binding:
    """What decides whether a driver can log a port."""
    vif_type: str
    vnic_type: str


class LogDriver(abc.ABC):
    """A backend that logs packets of ``resource_types`` on the ports it serves."""

    name: ClassVar[str]
    resource_types: ClassVar[tuple[str, ...]]
    vif_types: ClassVar[tuple[str, ...]] = ()
    vnic_types: ClassVar[tuple[str, ...]] = ("normal",)

    @classmethod
    @abc.abstractmethod
    def enabled(cls, conf: Config) -> bool:
        """Whether this deployment runs the backend (its mechanism driver is loaded)."""

    def logs_port(self, resource_type: str, binding: Binding) -> bool:
        if resource_type not in self.resource_types:
            return False
        if binding.vif_type in UNBOUND:
            return binding.vnic_type in self.vnic_types
        return binding.vif_type in self.vif_types


class Drivers:
    """The running drivers, asked together."""

    def __init__(self, drivers: Iterable[LogDriver]):
        self.drivers = list(drivers)

    def resource_types(self) -> set[str]:
        return {t for driver in self.drivers for t in driver.resource_types}

    def logs_port(self, resource_type: str, binding: Binding) -> bool:
        return any(driver.logs_port(resource_type, binding) for driver in self.drivers)


class LoggableType(Protocol):
    """A kind of resource that logs can name (``resource_type``)."""

    def validate(self, conn: Connection, ctx: Context, data: Mapping[str, Any],
                 drivers: Drivers, core: CorePlugin) -> None:
        """Raise the NeutronError that says what is wrong with a log of this type
        (inside the create's transaction)."""


def _mechanism_drivers(conf: Config) -> list[str]:
    ml2 = getattr(conf, "ml2", None)
    return list(getattr(ml2, "mechanism_drivers", None) or [])


class LinuxBridgeLogDriver(LogDriver):
    """The Linux bridge agent's ``log`` extension: NFLOG in the iptables firewall."""

    name = "linuxbridge"
    resource_types = ("security_group",)
    vif_types = ("bridge",)

    @classmethod
    def enabled(cls, conf: Config) -> bool:
        return "linuxbridge" in _mechanism_drivers(conf)


def load_drivers(conf: Config) -> Drivers:
    running = []
    for point in of_group(DRIVERS_GROUP):
        cls = point.load()
        if cls.enabled(conf):
            running.append(cls())
            LOG.info("log driver %s loaded (%s)", point.name, ", ".join(cls.resource_types))
    return Drivers(running)


def load_types() -> dict[str, LoggableType]:
    return {point.name: point.load() for point in of_group(TYPES_GROUP)}
