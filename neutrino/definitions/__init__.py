"""Every resource and extension neutrino knows, as data.

The API serves the core resources plus the extensions that the loaded
plugins claim; nothing here is loaded or imported by name elsewhere.
"""

from neutrino.definitions import (
    address_group,
    agent,
    agent_scheduler,
    allowed_address_pairs,
    availability_zone,
    dns,
    external_net,
    extra_dhcp_opt,
    firewall,
    flags,
    l3,
    logging,
    metering,
    net_mtu,
    network,
    network_ip_availability,
    port,
    port_attributes,
    port_forwarding,
    port_security,
    portbindings,
    portbindings_extended,
    provider_net,
    quotas,
    rbac,
    securitygroup,
    segment,
    servicetype,
    subnet,
    subnetpool,
    tagging,
    vpn,
)
from neutrino.definitions.base import Extension, Resource

CORE_RESOURCES: tuple[Resource, ...] = (
    network.RESOURCE, subnet.RESOURCE, port.RESOURCE, subnetpool.RESOURCE,
)

EXTENSIONS: dict[str, Extension] = {
    ext.alias: ext for ext in (
        external_net.EXTENSION,
        external_net.SUBNETS,
        net_mtu.EXTENSION,
        net_mtu.WRITABLE,
        port.MAC_REGENERATE,
        *port_attributes.EXTENSIONS,
        subnetpool.PREFIX_OPS,
        provider_net.PROVIDER,
        provider_net.MULTI_PROVIDER,
        portbindings.EXTENSION,
        portbindings_extended.EXTENSION,
        port_security.EXTENSION,
        allowed_address_pairs.EXTENSION,
        allowed_address_pairs.REJECT_MULTICAST,
        extra_dhcp_opt.EXTENSION,
        dns.EXTENSION,
        segment.EXTENSION,
        *securitygroup.EXTENSIONS,
        *address_group.EXTENSIONS,
        *firewall.EXTENSIONS,
        *vpn.EXTENSIONS,
        tagging.EXTENSION,
        tagging.CREATION,
        tagging.BULK_PORTS,
        quotas.EXTENSION,
        quotas.DETAILS,
        quotas.CHECK_LIMIT,
        quotas.CHECK_LIMIT_DEFAULT,
        *flags.FLAGS,
        *l3.EXTENSIONS,
        *port_forwarding.EXTENSIONS,
        *metering.EXTENSIONS,
        *agent.EXTENSIONS,
        *agent_scheduler.EXTENSIONS,
        *availability_zone.EXTENSIONS,
        *rbac.EXTENSIONS,
        servicetype.EXTENSION,
        *network_ip_availability.EXTENSIONS,
        logging.EXTENSION,
    )
}
