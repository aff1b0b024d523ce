"""What metadata agents ask of the core plugin over the bus: which port sent
a request. Neutron's metadata RPC API, version 1.0, in the ``metadata``
namespace on topic ``q-plugin``: one method, ``get_ports(filters)``.

Filters are Neutron's: lists of values by attribute (``network_id``,
``device_id``, ``device_owner``, ``id``), and ``fixed_ips`` as a dict of lists
(``{"ip_address": [...], "subnet_id": [...]}``). Only those: this API reads
ports for an agent, it is no general query language. Ports are read as admin.
"""

from __future__ import annotations

from typing import Any

from neutrino.context import Context
from neutrino.db.query import CollectionQuery
from neutrino.rpc.contracts import metadata

LIST_FILTERS = ("id", "network_id", "device_id", "device_owner")
FIXED_IP_KEYS = ("ip_address", "subnet_id")


def _values(name: str, value: Any) -> list[str]:
    items = value if isinstance(value, list | tuple) else [value]
    if not all(isinstance(item, str) for item in items):
        raise ValueError(f"filter {name} must be strings, not {value!r}")
    return list(items)


def query_of(filters: Any) -> CollectionQuery:
    """The port listing that ``filters`` (Neutron's RPC form) asks for;
    ValueError for anything else."""
    if not isinstance(filters, dict):
        raise ValueError(f"filters must be a dict, not {filters!r}")
    unknown = sorted(set(filters) - {*LIST_FILTERS, "fixed_ips"})
    if unknown:
        raise ValueError(f"unsupported filter(s): {', '.join(unknown)}")
    wanted = {name: _values(name, filters[name]) for name in LIST_FILTERS if name in filters}
    fixed = filters.get("fixed_ips")
    if fixed is not None:
        if not isinstance(fixed, dict) or set(fixed) - set(FIXED_IP_KEYS):
            raise ValueError(f"fixed_ips must map {' or '.join(FIXED_IP_KEYS)} to values, "
                             f"not {fixed!r}")
        wanted["fixed_ips"] = [f"{key}={item}" for key in FIXED_IP_KEYS if key in fixed
                               for item in _values(f"fixed_ips {key}", fixed[key])]
    return CollectionQuery(filters=wanted)


class MetadataRpcCallback:
    rpc_version = metadata.VERSION
    rpc_namespace = metadata.NAMESPACE

    def __init__(self, plugin: Any):
        self.plugin = plugin

    def get_ports(self, context: dict, filters: Any = None, **_: Any) -> list[dict[str, Any]]:
        """The ports matching ``filters``; none for an empty filter on a key
        (a list of no network ids matches no port, as in the API)."""
        query = query_of(filters if filters is not None else {})
        if any(not values for values in query.filters.values()):
            return []
        return self.plugin.get_ports(Context.admin(), query)
