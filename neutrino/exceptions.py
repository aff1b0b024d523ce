"""One exception base with message templates; the class decides the HTTP status.

The class name is the ``type`` of the NeutronError body, so names follow
Neutron's where clients may look at them.
"""

from __future__ import annotations

from typing import Any


class NeutronException(Exception):
    status = 500
    message = "An unknown exception occurred."

    def __init__(self, message: str | None = None, **kwargs: Any):
        self.kwargs = kwargs
        if message is None:
            try:
                message = self.message % kwargs
            except (KeyError, TypeError):
                message = self.message
        self.msg = message
        super().__init__(message)

    @property
    def type(self) -> str:
        return type(self).__name__


# --- status families -------------------------------------------------------

class BadRequest(NeutronException):
    status = 400
    message = "Bad %(resource)s request: %(msg)s."


class NotAuthorized(NeutronException):
    status = 403
    message = "Not authorized."


class NotFound(NeutronException):
    status = 404
    message = "An unknown exception occurred."


class Conflict(NeutronException):
    status = 409


class InUse(Conflict):
    message = "The resource is in use."


class PreconditionFailed(NeutronException):
    status = 412


class ServiceUnavailable(NeutronException):
    status = 503


# --- HTTP-level errors (Neutron reports these with webob's class names) ----

class HTTPBadRequest(BadRequest):
    message = "%(msg)s"


class HTTPNotFound(NotFound):
    message = "The resource could not be found."


class HTTPMethodNotAllowed(NeutronException):
    # Neutron's text, line breaks and all: webob's HTTPClientError explanation,
    # what its pecan.abort(405) bodies carry (tests/api/test_first_hour.py)
    status = 405
    message = ("The server could not comply with the request since\r\nit is either "
               "malformed or otherwise incorrect.\r\n")


class HTTPUnsupportedMediaType(NeutronException):
    status = 415
    message = "Unsupported Content-Type"


class HTTPNotAcceptable(NeutronException):
    status = 406
    message = "Only application/json is served."


class HTTPUnauthorized(NeutronException):
    status = 401
    message = "Authentication required"


class HTTPForbidden(NotAuthorized):
    message = "%(msg)s"


# --- input -----------------------------------------------------------------

class InvalidInput(BadRequest):
    message = "Invalid input for operation: %(error_message)s."


class PolicyNotAuthorized(NotAuthorized):
    message = "%(action)s is disallowed by policy"


# --- not found -------------------------------------------------------------

class NetworkNotFound(NotFound):
    message = "Network %(net_id)s could not be found."


class SubnetNotFound(NotFound):
    message = "Subnet %(subnet_id)s could not be found."


class PortNotFound(NotFound):
    message = "Port %(port_id)s could not be found."


class SubnetPoolNotFound(NotFound):
    message = "Subnet pool %(subnetpool_id)s could not be found."


class AddressScopeNotFound(NotFound):
    message = "Address scope %(address_scope_id)s could not be found."


class TagNotFound(NotFound):
    message = "Tag %(tag)s could not be found."


class ResourceNotFound(NotFound):
    message = "%(resource)s %(resource_id)s could not be found."


class QuotaResourceUnknown(NotFound):
    message = "Unknown quota resources %(unknown)s."


# --- conflicts -------------------------------------------------------------

class NetworkInUse(InUse):
    message = "Unable to complete operation on network %(net_id)s. %(reason)s."


class NetworkMTUSubnetConflict(Conflict):
    message = "MTU of %(net_id)s is not valid, subnet requires a minimum of %(mtu)s"


class SubnetInUse(InUse):
    message = ("Unable to complete operation on subnet %(subnet_id)s: %(reason)s.")


class PortInUse(InUse):
    message = ("Unable to complete operation on port %(port_id)s for network %(net_id)s. "
               "Port already has an attached device %(device_id)s.")


class SubnetPoolInUse(InUse):
    message = "Unable to complete operation on subnet pool %(subnet_pool_id)s. %(reason)s."


class PortBound(InUse):
    message = ("Unable to complete operation on port %(port_id)s, port is already bound, "
               "port type: %(vif_type)s, old_mac %(old_mac)s, new_mac %(new_mac)s.")


class MacAddressInUse(InUse):
    message = ("Unable to complete operation for network %(net_id)s. "
               "The mac address %(mac)s is in use.")


class IpAddressInUse(InUse):
    message = ("Unable to complete operation for network %(net_id)s. "
               "The IP address %(ip_address)s is in use.")


class GatewayIpInUse(InUse):
    message = ("Current gateway ip %(ip_address)s already in use by port %(port_id)s. "
               "Unable to update.")


class InvalidSharedSetting(Conflict):
    message = ("Unable to reconfigure sharing settings for network %(network)s. "
               "Multiple projects are using it.")


class IpAddressAlreadyAllocated(Conflict):
    message = "IP address %(ip)s already allocated in subnet %(subnet_id)s"


class IpAddressGenerationFailure(Conflict):
    message = "No more IP addresses available on network %(net_id)s."


class OverQuota(Conflict):
    message = "Quota exceeded for resources: %(overs)s."

    def __init__(self, overs: list[str]):
        super().__init__(overs=sorted(overs))


class SubnetAllocationError(Conflict):
    # Neutron lets this one out as a 500; a conflict is what it is.
    message = "Failed to allocate subnet: %(reason)s."


class TenantQuotaNotFound(NotFound):
    message = "Quota for project %(project_id)s could not be found."


class AdminRequired(NotAuthorized):
    message = "User does not have admin privileges: %(reason)s."


class RevisionNumberConstraintFailed(PreconditionFailed):
    message = ("Constrained to %(expected)s, but current revision is %(current)s")


class Conflicting(Conflict):
    message = "%(msg)s"


class RetryRequest(Exception):
    """Raised inside a transaction to have the whole transaction retried."""
