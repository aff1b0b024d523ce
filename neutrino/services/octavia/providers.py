"""Provider drivers: what realises a load balancer (Octavia's ``provider``).

A provider is told, inside the transaction that changed a load balancer's
tree, that the tree has work pending; it completes it at once or later. The
``noop`` provider (Octavia's ``noop_driver``) completes everything on the
spot and programs nothing; ``pending`` never completes, which leaves objects
PENDING_* (and so immutable) as they are while a real provider works;
``haproxy`` (``services.octavia.haproxy``) hands the tree to a load-balancer
agent, whose report completes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from sqlalchemy.engine import Connection, Row

from neutrino.services.octavia import errors


class Provider:
    """A provider driver found by name (entry point ``neutrino.octavia.providers``),
    made with the plugin it serves and the name it is enabled by."""

    #: whether pending work (create, update, delete) completes in the same
    #: transaction: ACTIVE (ONLINE, or OFFLINE when disabled), deletes done
    completes: ClassVar[bool] = False
    #: the flavor options it applies, and the availability zone options
    #: (Octavia's flavor and availability zone capabilities): name -> meaning
    flavor_capabilities: ClassVar[dict[str, str]] = {}
    availability_zone_capabilities: ClassVar[dict[str, str]] = {}

    def __init__(self, plugin: Any, name: str):
        self.plugin = plugin
        self.name = name

    def validate_flavor(self, options: dict[str, Any]) -> None:
        """``errors.ProviderUnsupported`` for flavor options it cannot apply."""
        self._only(options, self.flavor_capabilities, "flavor")

    def validate_availability_zone(self, options: dict[str, Any]) -> None:
        self._only(options, self.availability_zone_capabilities, "availability zone")

    def _only(self, options: dict[str, Any], known: dict[str, str], what: str) -> None:
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise errors.ProviderUnsupported(
                provider=self.name,
                reason=f"{what} metadata failed validation: unknown {', '.join(unknown)}")

    def check(self, kind: str, value: str) -> None:
        """``errors.ProviderUnsupported`` if this provider cannot realise a
        ``kind`` (``listener``, ``pool`` protocol; ``healthmonitor`` type) of
        ``value``; every one the API accepts is fine by default."""

    def check_member(self, conn: Connection, lb: Row, address: str) -> None:
        """``errors.ProviderUnsupported`` if ``lb``'s dataplane could not reach a
        member at ``address``; any address is fine by default."""

    def pending(self, conn: Connection, lb: Row, after: list[Callable[[], None]]) -> None:
        """A provider that does not complete at once: ``lb``'s tree has work
        pending (in ``conn``'s transaction; ``after`` runs once it commits)."""

    def failover(self, conn: Connection, lb: Row, after: list[Callable[[], None]]) -> None:
        """Run ``lb`` afresh, elsewhere if the provider can (Octavia's failover);
        its tree is PENDING_UPDATE already. By default: as any change."""
        self.plugin.settle(conn, lb, after)

    def rpc_endpoints(self) -> dict[str, list[Any]]:
        """topic -> objects whose methods agents call over the bus."""
        return {}

    def periodic_tasks(self) -> list[tuple[float, Callable[[], None]]]:
        return []


class NoopProvider(Provider):
    """Everything ACTIVE at once; nothing programmed (no dataplane): every
    flavor and availability zone option is taken, none applied (as Octavia's
    no-op driver)."""

    completes = True

    def validate_flavor(self, options: dict[str, Any]) -> None:
        pass

    def validate_availability_zone(self, options: dict[str, Any]) -> None:
        pass


class PendingProvider(Provider):
    """Nothing ever completes: objects stay PENDING_CREATE/UPDATE/DELETE."""

    completes = False
