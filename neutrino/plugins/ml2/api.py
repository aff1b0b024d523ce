"""The driver contracts of ML2: type drivers own segments, mechanism drivers
realise networks and ports on a backend, extension drivers add attributes.

Transaction rules, for every mechanism driver method:
- ``*_precommit`` runs inside the API call's database transaction, with the
  connection in ``context.conn``. It must not block on anything but the
  database; raising rolls the whole call back.
- ``*_postcommit`` runs after the commit. Raising from a create postcommit
  makes the plugin delete what it created and report the error; from update
  or delete it is logged and reported, the change stays.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from sqlalchemy.engine import Connection

from neutrino.config import Config
from neutrino.context import Context
from neutrino.plugins.hooks import IdRange

Segment = dict[str, Any]  # network_type, physical_network, segmentation_id (+ id, mtu)
# where a network may take its id, in order of preference (see hooks.SegmentPools)
Pools = list[list[IdRange]]

NETWORK_TYPE = "network_type"
PHYSICAL_NETWORK = "physical_network"
SEGMENTATION_ID = "segmentation_id"


class TypeDriver:
    """Segments of one network type: validation, reservation, allocation, MTU.

    A type whose ids come from ranges (``id_range``) is given ``pools`` when the
    network segment ranges' plugin is loaded: it takes ids within them only."""

    network_type: ClassVar[str] = ""
    #: the lowest and highest id, of a type whose ids come from ranges; None else
    id_range: ClassVar[tuple[int, int] | None] = None

    def __init__(self, conf: Config):
        self.conf = conf

    def configured_ranges(self) -> list[IdRange]:
        """The ranges the configuration gives project networks (of ``id_range`` types)."""
        return []

    def sync_allocations(self, conn: Connection) -> None:
        """Make the allocation table follow the configured ranges (start-up)."""

    def validate_provider_segment(self, segment: Segment) -> None:
        """Raise InvalidInput when the requested segment is not acceptable."""
        raise NotImplementedError

    def reserve_provider_segment(self, conn: Connection, segment: Segment,
                                 pools: Pools | None = None) -> Segment:
        """Take the requested segment (choosing the missing parts, within ``pools``
        if given); 409 when taken."""
        raise NotImplementedError

    def allocate_tenant_segment(self, conn: Connection, pools: Pools | None = None
                                ) -> Segment | None:
        """A free segment for a project network (within ``pools`` if given), or None
        when this type is full."""
        return None

    def release_segment(self, conn: Connection, segment: Segment,
                        keep_free: bool = False) -> None:
        """Give the segment back (on network delete); ``keep_free``: its id stays a
        free one whatever the configured ranges say (the segment ranges decide)."""

    def get_mtu(self, physical_network: str | None) -> int:
        """Largest MTU a network on this type can carry (0: no limit of its own)."""
        return 0


@dataclass
class NetworkContext:
    conn: Connection | None
    ctx: Context
    current: dict[str, Any]
    original: dict[str, Any] | None = None
    segments: list[Segment] = field(default_factory=list)


@dataclass
class SubnetContext:
    conn: Connection | None
    ctx: Context
    current: dict[str, Any]
    original: dict[str, Any] | None = None
    network: dict[str, Any] | None = None


@dataclass
class PortContext:
    """A port and, while binding, the segments to bind and the chosen binding."""

    conn: Connection | None
    ctx: Context
    current: dict[str, Any]
    original: dict[str, Any] | None = None
    network: dict[str, Any] | None = None
    segments_to_bind: list[Segment] = field(default_factory=list)
    host: str = ""
    vnic_type: str = "normal"
    profile: dict[str, Any] = field(default_factory=dict)
    agents: list[dict[str, Any]] = field(default_factory=list)
    bound_segment: Segment | None = None
    vif_type: str | None = None
    vif_details: dict[str, Any] = field(default_factory=dict)
    #: the facts of the subnets of its fixed IPs (``Ml2Plugin.subnet_facts``),
    #: where a driver read them in its precommit, inside the transaction
    subnets: dict[str, dict[str, Any]] | None = None

    def set_binding(self, segment: Segment, vif_type: str, vif_details: dict[str, Any]) -> None:
        self.bound_segment = segment
        self.vif_type = vif_type
        self.vif_details = vif_details


class MechanismDriver:
    """Realises networks, subnets and ports on a backend. See the module docstring."""

    name: ClassVar[str] = ""
    #: the QoS rule types (``bandwidth_limit``...) its backend takes; none: no QoS driver
    qos_rule_types: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, conf: Config):
        self.conf = conf

    def create_network_precommit(self, context: NetworkContext) -> None: ...
    def create_network_postcommit(self, context: NetworkContext) -> None: ...
    def update_network_precommit(self, context: NetworkContext) -> None: ...
    def update_network_postcommit(self, context: NetworkContext) -> None: ...
    def delete_network_precommit(self, context: NetworkContext) -> None: ...
    def delete_network_postcommit(self, context: NetworkContext) -> None: ...
    def create_subnet_precommit(self, context: SubnetContext) -> None: ...
    def create_subnet_postcommit(self, context: SubnetContext) -> None: ...
    def update_subnet_precommit(self, context: SubnetContext) -> None: ...
    def update_subnet_postcommit(self, context: SubnetContext) -> None: ...
    def delete_subnet_precommit(self, context: SubnetContext) -> None: ...
    def delete_subnet_postcommit(self, context: SubnetContext) -> None: ...
    def create_port_precommit(self, context: PortContext) -> None: ...
    def create_port_postcommit(self, context: PortContext) -> None: ...
    def update_port_precommit(self, context: PortContext) -> None: ...
    def update_port_postcommit(self, context: PortContext) -> None: ...
    def delete_port_precommit(self, context: PortContext) -> None: ...
    def delete_port_postcommit(self, context: PortContext) -> None: ...

    def bind_port(self, context: PortContext) -> None:
        """Call ``context.set_binding`` for a segment this driver can serve, or do nothing."""

    # --- a driver with a backend of its own (OVN's databases) ------------------------

    def initialize(self, plugin: Any) -> None:
        """Once ML2 is built: what the driver needs of it (hooks, its database)."""

    def start(self) -> None:
        """Once the API is assembled: connect to the backend."""

    def stop(self) -> None:
        """The server is stopping: let go of the backend."""

    def periodic_tasks(self) -> list[tuple[float, Callable[[], None]]]:
        """(interval in seconds, work), run by the process that runs ML2's."""
        return []
