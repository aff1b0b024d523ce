"""logger: logs every call it gets; useful to watch what ML2 does."""

from __future__ import annotations

import logging
from typing import Any

from neutrino.plugins.ml2.api import MechanismDriver

LOG = logging.getLogger("neutrino.ml2.logger")


def _logged(method: str):
    def call(self: Any, context: Any) -> None:
        LOG.info("%s: %s", method, context.current)

    call.__name__ = method
    return call


class LoggerMechanismDriver(MechanismDriver):
    name = "logger"


for _method in [f"{action}_{resource}_{phase}" for action in ("create", "update", "delete")
                for resource in ("network", "subnet", "port")
                for phase in ("precommit", "postcommit")]:
    setattr(LoggerMechanismDriver, _method, _logged(_method))
