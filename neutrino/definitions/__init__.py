"""Every resource and extension neutrino knows, as data.

The API serves the core resources plus the extensions that the loaded
plugins claim; nothing here is loaded or imported by name elsewhere.
"""

from neutrino.definitions import (
    external_net,
    flags,
    l3,
    net_mtu,
    network,
    port,
    port_security,
    portbindings,
    portbindings_extended,
    provider_net,
    quotas,
    segment,
    subnet,
    subnetpool,
    tagging,
)
from neutrino.definitions.base import Extension, Resource

CORE_RESOURCES: tuple[Resource, ...] = (
    network.RESOURCE, subnet.RESOURCE, port.RESOURCE, subnetpool.RESOURCE,
)

EXTENSIONS: dict[str, Extension] = {
    ext.alias: ext for ext in (
        external_net.EXTENSION,
        net_mtu.EXTENSION,
        net_mtu.WRITABLE,
        provider_net.PROVIDER,
        provider_net.MULTI_PROVIDER,
        portbindings.EXTENSION,
        portbindings_extended.EXTENSION,
        port_security.EXTENSION,
        segment.EXTENSION,
        tagging.EXTENSION,
        tagging.CREATION,
        quotas.EXTENSION,
        quotas.DETAILS,
        *flags.FLAGS,
        *l3.EXTENSIONS,
    )
}
