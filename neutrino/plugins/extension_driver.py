"""The ML2 extension driver contract, in the plugin framework: a service
plugin that owns an extension's tables (security groups, availability zones)
ships the driver that adds the extension's attributes to networks and ports,
and ML2 finds it by entry point (``neutrino.ml2.extension_drivers``) without
importing the service.
"""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy.engine import Connection

from neutrino.config import Config
from neutrino.db.query import Page


class ExtensionDriver:
    """Adds attributes of one extension to networks and ports, stored by itself.

    ``process_*`` run inside the create/update transaction with the request
    ``data`` and the ``view`` being returned (to complete); ``extend_*`` fill
    the attributes of many views with one read, restricted to the ``page``
    (``page.read``: by ids for a few, by the list's condition for many).
    """

    extension_alias: ClassVar[str] = ""
    #: more aliases it implements (a driver that refines another's)
    extension_aliases: ClassVar[tuple[str, ...]] = ()
    #: the port attributes ``extend_ports`` fills (None: unknown), and the port
    #: attributes they follow: a port update reads again only the drivers whose
    #: attributes, or what they follow, it changed
    port_attributes: ClassVar[frozenset[str] | None] = None
    port_follows: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, conf: Config):
        self.conf = conf

    def process_create_network(self, conn: Connection, data: dict[str, Any],
                               view: dict[str, Any]) -> None: ...
    def process_update_network(self, conn: Connection, data: dict[str, Any],
                               view: dict[str, Any]) -> None: ...
    def process_create_port(self, conn: Connection, data: dict[str, Any],
                            view: dict[str, Any]) -> None: ...
    def process_update_port(self, conn: Connection, data: dict[str, Any],
                            view: dict[str, Any]) -> None: ...
    def extend_networks(self, conn: Connection, views: list[dict[str, Any]],
                        page: Page) -> None: ...
    def extend_ports(self, conn: Connection, views: list[dict[str, Any]],
                     page: Page) -> None: ...

    def filter_clauses(self, collection: str, query: Any) -> list:
        """Where clauses for this extension's filters on ``collection``, popped
        out of ``query``."""
        return []
