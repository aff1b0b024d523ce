"""Provider drivers: what realises a load balancer (Octavia's ``provider``).

A provider is told, inside the transaction that changed a load balancer's
tree, that the tree has work pending; it says whether that work is done at
once. No dataplane exists yet: the ``noop`` provider (Octavia's
``noop_driver``) completes everything on the spot, so clients that wait for
ACTIVE see it at once; ``pending`` never completes, which leaves objects
PENDING_* (and so immutable) as they are while a real provider works.
"""

from __future__ import annotations

from typing import ClassVar


class Provider:
    """A provider driver found by name (entry point ``neutrino.octavia.providers``)."""

    #: whether pending work (create, update, delete) completes in the same
    #: transaction: ACTIVE (ONLINE, or OFFLINE when disabled), deletes done
    completes: ClassVar[bool] = False


class NoopProvider(Provider):
    """Everything ACTIVE at once; nothing programmed (no dataplane)."""

    completes = True


class PendingProvider(Provider):
    """Nothing ever completes: objects stay PENDING_CREATE/UPDATE/DELETE."""

    completes = False
