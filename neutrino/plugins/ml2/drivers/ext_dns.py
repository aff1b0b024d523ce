"""dns: Neutron's ``dns`` extension driver (dns-integration), without an external
DNS service.

Ports get ``dns_name`` and ``dns_assignment`` (the host name and FQDN of each
fixed IP under ``[DEFAULT] dns_domain``); networks get ``dns_domain``. As in
Neutron, while ``dns_domain`` is unset or the default ``openstacklocal`` a
port's requested name is ignored and every address is ``host-<address>``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import delete, select
from sqlalchemy.engine import Connection

from neutrino import exceptions as exc
from neutrino.config import Config
from neutrino.db import models
from neutrino.db.query import Page
from neutrino.definitions.dns import (
    DEFAULT_DOMAIN,
    DNS_ASSIGNMENT,
    DNS_DOMAIN,
    DNS_NAME,
    absolute,
    name_in_domain,
)
from neutrino.plugins.extension_driver import ExtensionDriver

PORT_DNS = models.port_dns
NET_DNS = models.network_dns_domains


def _load(conn: Connection, key: Any, value: Any, page: Page) -> dict[str, str]:
    return dict(page.read(conn, select(key, value), key))


def _store(conn: Connection, table: Any, key: Any, item_id: str, values: dict[str, str]
           ) -> None:
    """One row holding ``values`` with what else it held, or none when all is empty."""
    current = conn.execute(select(table).where(key == item_id)).first()
    kept = {**({} if current is None else dict(current._mapping)), **values}
    kept.pop(key.name, None)
    conn.execute(delete(table).where(key == item_id))
    if any(kept.values()):
        conn.execute(table.insert().values({key.name: item_id, **kept}))


def host_name(address: str) -> str:
    return "host-" + address.replace(".", "-").replace(":", "-")


class DnsExtensionDriver(ExtensionDriver):
    extension_alias = "dns-integration"
    port_attributes = frozenset({DNS_NAME, DNS_ASSIGNMENT})
    port_follows = frozenset({"fixed_ips"})  # an address's name is made of it
    #: ports have a dns_domain of their own (dns-domain-ports)
    ports_have_domains: ClassVar[bool] = False

    def __init__(self, conf: Config):
        super().__init__(conf)
        self.configured: str = conf.DEFAULT.dns_domain
        self.domain = absolute(self.configured)
        # Neutron uses ports' names only under a domain of the operator's own
        self.names_used = bool(self.domain) and self.domain != DEFAULT_DOMAIN

    # --- networks ---------------------------------------------------------------------

    def process_create_network(self, conn: Connection, data: dict[str, Any],
                               view: dict[str, Any]) -> None:
        domain = data.get(DNS_DOMAIN) or ""
        if domain:
            conn.execute(NET_DNS.insert().values(network_id=view["id"], dns_domain=domain))
        view[DNS_DOMAIN] = domain

    def process_update_network(self, conn: Connection, data: dict[str, Any],
                               view: dict[str, Any]) -> None:
        if DNS_DOMAIN in data:
            _store(conn, NET_DNS, NET_DNS.c.network_id, view["id"],
                   {"dns_domain": data[DNS_DOMAIN]})

    def extend_networks(self, conn: Connection, views: list[dict[str, Any]], page: Page
                        ) -> None:
        found = _load(conn, NET_DNS.c.network_id, NET_DNS.c.dns_domain, page)
        for view in views:
            view[DNS_DOMAIN] = found.get(view["id"], "")

    # --- ports ------------------------------------------------------------------------

    def _check(self, name: str) -> None:
        error = name and name_in_domain(name, self.domain, self.configured)
        if error:
            raise exc.HTTPBadRequest(msg=f"Invalid input for {DNS_NAME}. Reason: {error}.")

    def assignment(self, fixed_ips: list[dict[str, str]], name: str) -> list[dict[str, str]]:
        """Each address's host name and FQDN: the port's name if it has one (and
        names are used), else one made of the address."""
        if not self.names_used:
            name = ""
        found = []
        for fixed_ip in fixed_ips:
            address = fixed_ip["ip_address"]
            if name:
                host = name
                fqdn = name if name.endswith(".") else f"{name}.{self.domain}"
            else:
                host = host_name(address)
                fqdn = f"{host}.{self.domain}" if self.domain else host
            found.append({"hostname": host, "ip_address": address, "fqdn": fqdn})
        return found

    def process_create_port(self, conn: Connection, data: dict[str, Any],
                            view: dict[str, Any]) -> None:
        name = (data.get(DNS_NAME) or "") if self.names_used else ""
        self._check(name)
        values = {"dns_name": name}
        if self.ports_have_domains:
            values["dns_domain"] = view[DNS_DOMAIN] = data.get(DNS_DOMAIN) or ""
        if any(values.values()):
            conn.execute(PORT_DNS.insert().values(port_id=view["id"], **values))
        view[DNS_NAME] = name
        view[DNS_ASSIGNMENT] = self.assignment(view["fixed_ips"], name)

    def process_update_port(self, conn: Connection, data: dict[str, Any],
                            view: dict[str, Any]) -> None:
        changes = {}
        # as Neutron: under the default domain a name is not even kept
        if DNS_NAME in data and self.names_used:
            self._check(data[DNS_NAME])
            changes["dns_name"] = data[DNS_NAME]
        if self.ports_have_domains and DNS_DOMAIN in data:
            changes["dns_domain"] = data[DNS_DOMAIN] or ""
        if changes:
            _store(conn, PORT_DNS, PORT_DNS.c.port_id, view["id"], changes)

    def extend_ports(self, conn: Connection, views: list[dict[str, Any]], page: Page) -> None:
        found = {port_id: (name, domain) for port_id, name, domain in page.read(
            conn, select(PORT_DNS.c.port_id, PORT_DNS.c.dns_name, PORT_DNS.c.dns_domain),
            PORT_DNS.c.port_id)}
        for view in views:
            name, domain = found.get(view["id"], ("", ""))
            view[DNS_NAME] = name
            view[DNS_ASSIGNMENT] = self.assignment(view["fixed_ips"], name)
            if self.ports_have_domains:
                view[DNS_DOMAIN] = domain


class DnsDomainPortsExtensionDriver(DnsExtensionDriver):
    """Neutron's ``dns_domain_ports``: the dns driver, and ``dns_domain`` on
    ports, kept for an external DNS service (none is driven here)."""

    extension_aliases = ("dns-domain-ports",)
    port_attributes = DnsExtensionDriver.port_attributes | {DNS_DOMAIN}
    ports_have_domains = True
