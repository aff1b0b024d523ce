"""Mechanism drivers for tests only (loaded by dotted path, never an entry point)."""

from __future__ import annotations

from neutrino.plugins.ml2.api import MechanismDriver, PortContext


class FailingDriver(MechanismDriver):
    """Fails ``<method>`` for a resource named ``fail:<method>``."""

    name = "failing"

    def __getattribute__(self, attr: str):
        if attr.endswith(("_precommit", "_postcommit")):
            def call(context) -> None:
                if context.current.get("name") == f"fail:{attr}":
                    raise RuntimeError(f"asked to fail in {attr}")
            return call
        return super().__getattribute__(attr)


class AlwaysBindDriver(MechanismDriver):
    """Binds every port on its network's first segment, as VIF type 'fake'."""

    name = "always_bind"

    def bind_port(self, context: PortContext) -> None:
        if context.segments_to_bind:
            context.set_binding(context.segments_to_bind[0], "fake", {"port_filter": False})
