"""The mechanism manager: calls every mechanism driver, in order, through one helper."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from neutrino import exceptions as exc
from neutrino.plugins.ml2.api import MechanismDriver, PortContext

LOG = logging.getLogger(__name__)


class MechanismDriverError(exc.NeutronException):
    status = 500
    message = "%(method)s failed: %(errors)s"


class MechanismManager:
    def __init__(self, drivers: Sequence[MechanismDriver]):
        self.drivers = list(drivers)

    def call(self, method: str, context: Any, *, keep_going: bool = False) -> None:
        """Call ``method`` on every driver; deletes run in reverse order.

        Errors are collected; without ``keep_going`` the first one stops the
        fan-out. Any error ends as one MechanismDriverError naming the drivers.
        """
        drivers = reversed(self.drivers) if method.startswith("delete_") else self.drivers
        errors = []
        for driver in drivers:
            try:
                getattr(driver, method)(context)
            except Exception as error:  # noqa: BLE001 - a driver may fail any way
                if isinstance(error, exc.NeutronException) and error.status != 500:
                    raise  # the driver's answer to the caller: a refusal, its backend down
                LOG.exception("mechanism driver %s failed in %s", driver.name, method)
                errors.append(f"{driver.name}: {error}")
                if not keep_going:
                    break
        if errors:
            raise MechanismDriverError(method=method, errors="; ".join(errors))

    def bind_port(self, context: PortContext) -> bool:
        """Ask the drivers in order until one binds; True when bound."""
        for driver in self.drivers:
            try:
                driver.bind_port(context)
            except Exception:  # noqa: BLE001
                LOG.exception("mechanism driver %s failed to bind port %s", driver.name,
                              context.current.get("id"))
                continue
            if context.bound_segment is not None:
                context.vif_details.setdefault("bound_drivers", {"0": driver.name})
                return True
        return False
