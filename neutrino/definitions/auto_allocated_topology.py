"""auto-allocated-topology (Neutron's "get me a network"): a project's own
network, made on its first request with a subnet from each default subnet
pool and a router from the default external network; and ``is_default`` on
networks, which names that external network.

The topology is served at ``/v2.0/auto-allocated-topology/{project_id}``, a
path with a project where other resources have an item and no collection, so
it is no ``Resource`` here (``api/auto_allocate.py`` routes it).
"""

from __future__ import annotations

from neutrino import exceptions as exc
from neutrino.definitions import validators as v
from neutrino.definitions.base import Attr, Extension, attrs

ALIAS = "auto-allocated-topology"
#: where the API serves it, and the key of its body
PATH = ALIAS
NAME = "auto_allocated_topology"
IS_DEFAULT = "is_default"
#: the ``fields`` value that asks only whether a topology could be built
DRY_RUN = "dry-run"
#: the ``id`` of a dry run's answer, as Neutron gives it (and clients look for)
DRY_RUN_PASSED = "dry-run=pass"


class AutoAllocationFailure(exc.Conflict):
    message = "Deployment error: %(reason)s."


class DefaultExternalNetworkExists(exc.Conflict):
    message = "A default external network already exists: %(net_id)s."


EXTENSION = Extension(
    alias=ALIAS,
    name="Auto Allocated Topology Services",
    description="Auto Allocated Topology Services.",
    updated="2016-01-01T00:00:00-00:00",
    attributes={"networks": attrs(
        Attr(IS_DEFAULT, allow_post=True, allow_put=True, default=False,
             convert=v.to_boolean, admin_only=True),
    )},
    required=("router", "subnet_allocation", "external-net"),
)
