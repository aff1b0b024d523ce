"""Errors of segment handling, with Neutron's type names."""

from neutrino import exceptions as exc


class VlanIdInUse(exc.InUse):
    message = ("Unable to create the network. The VLAN %(vlan_id)s on physical network "
               "%(physical_network)s is in use.")


class TunnelIdInUse(exc.InUse):
    message = "Unable to create the network. The tunnel ID %(tunnel_id)s is in use."


class FlatNetworkInUse(exc.InUse):
    message = ("Unable to create the flat network. Physical network %(physical_network)s "
               "is in use.")


class NoNetworkAvailable(exc.ServiceUnavailable):
    message = ("Unable to create the network. No tenant network is available for "
               "allocation.")


def invalid(msg: str) -> exc.InvalidInput:
    return exc.InvalidInput(error_message=msg)
