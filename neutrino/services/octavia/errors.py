"""Octavia's API faults: a status and a message, answered as
``{"faultcode": ..., "faultstring": ..., "debuginfo": null}``."""

from __future__ import annotations

from typing import Any


class OctaviaError(Exception):
    status = 500
    message = "Something unknown went wrong"

    def __init__(self, message: str | None = None, **kwargs: Any):
        self.msg = message if message is not None else self.message % kwargs
        super().__init__(self.msg)


class NotFound(OctaviaError):
    status = 404
    message = "%(resource)s %(id)s not found."


class Forbidden(OctaviaError):
    status = 403
    message = "Policy does not allow this request to be performed."


class BadRequest(OctaviaError):
    status = 400


class Validation(OctaviaError):
    status = 400
    message = "Validation failure: %(detail)s"


class InvalidInput(OctaviaError):
    """What Octavia's type checks (wsme) answer for a bad attribute."""

    status = 400
    message = "Invalid input for field/attribute %(name)s. Value: '%(value)s'. %(reason)s"


class Immutable(OctaviaError):
    status = 409
    message = "%(resource)s %(id)s is immutable and cannot be updated."


class DuplicateListener(OctaviaError):
    status = 409
    message = ("Another Listener on this Load Balancer is already using protocol "
               "%(protocol)s and protocol_port %(port)d")


class DuplicateMember(OctaviaError):
    status = 409
    message = ("Another member on this pool is already using ip %(ip_address)s on "
               "protocol_port %(port)d")


class DuplicatePool(OctaviaError):
    status = 409
    message = "This listener already has a default pool"


class DuplicateHealthMonitor(OctaviaError):
    status = 409
    message = "This pool already has a health monitor"


class InvalidOption(OctaviaError):
    status = 400
    message = "%(value)s is not a valid option for %(option)s"


class DisabledOption(OctaviaError):
    status = 400
    message = "The selected %(option)s is not allowed in this deployment: %(value)s"


class InvalidSubresource(OctaviaError):
    status = 400
    message = "%(resource)s %(id)s not found."


class RecordAlreadyExists(OctaviaError):
    status = 409
    message = "A %(field)s of %(name)s already exists."


class ObjectInUse(OctaviaError):
    status = 409
    message = "%(object)s %(id)s is in use and cannot be modified."


class ProviderFlavorMismatch(OctaviaError):
    status = 400
    message = "Flavor '%(flavor)s' is not compatible with provider '%(provider)s'"


class QuotaMet(OctaviaError):
    status = 403
    message = "Quota has been met for resources: %(resource)s"


class ProviderUnsupported(OctaviaError):
    status = 501
    message = "Provider '%(provider)s' does not support a requested option: %(reason)s"


class Unauthorized(OctaviaError):
    status = 401
    message = "The request you have made requires authentication."


def fault(status: int, message: str) -> dict[str, Any]:
    return {"faultcode": "Client" if status < 500 else "Server", "faultstring": message,
            "debuginfo": None}
